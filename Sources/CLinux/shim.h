#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Linux system calls whose headers the Swift Glibc module does not import. Only Platform imports this module.
#include <malloc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>

// timerfd_create(2) for the wall clock, closed on exec.
static inline int clinux_timerfd_create_realtime(void) {
    return timerfd_create(CLOCK_REALTIME, TFD_CLOEXEC);
}

// Arms `fd` to expire at `seconds` of wall time (absolute), and, with `cancel_on_set`, to be cancelled
// whenever the wall clock is set (TFD_TIMER_CANCEL_ON_SET: read(2) then fails with ECANCELED).
static inline int clinux_timerfd_arm_at(int fd, long long seconds, int cancel_on_set) {
    struct itimerspec spec = { .it_interval = { 0, 0 }, .it_value = { (time_t)seconds, 0 } };
    int flags = TFD_TIMER_ABSTIME | (cancel_on_set ? TFD_TIMER_CANCEL_ON_SET : 0);
    return timerfd_settime(fd, flags, &spec, 0);
}

// Arms `fd` to expire one nanosecond from now, without cancel-on-set: wakes a thread blocked in read(2).
static inline int clinux_timerfd_fire_now(int fd) {
    struct itimerspec spec = { .it_interval = { 0, 0 }, .it_value = { 0, 1 } };
    return timerfd_settime(fd, 0, &spec, 0);
}

// Drops this process's page-table entries for [start, start + length): for a private file mapping that holds no
// private copy of a page, the next access maps the file's page again from the page cache (madvise(2)).
static inline int clinux_madvise_dontneed(void *start, size_t length) {
    return madvise(start, length, MADV_DONTNEED);
}

// prctl(2) is variadic, which Swift cannot call: PR_SET_DUMPABLE with 0 makes the process non-dumpable (no core
// file; its /proc/PID files owned by root; no ptrace by processes of the same uid without CAP_SYS_PTRACE).
static inline int clinux_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

// PR_GET_DUMPABLE: 1 dumpable, 0 not, 2 dumpable by root only (suid_dumpable), -1 with errno on failure.
static inline int clinux_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

// An anonymous private read-write mapping of `length` bytes, or NULL with errno set (MAP_FAILED is not a value
// Swift can import).
static inline void *clinux_map_anonymous(size_t length) {
    void *start = mmap(0, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return start == MAP_FAILED ? 0 : start;
}

// Leaves [start, start + length) out of core files (MADV_DONTDUMP; `VmFlags: dd` in /proc/PID/smaps).
static inline int clinux_madvise_dontdump(void *start, size_t length) {
    return madvise(start, length, MADV_DONTDUMP);
}

// Keeps [start, start + length) in memory, never written to swap (mlock(2); limited by RLIMIT_MEMLOCK).
static inline int clinux_lock(void *start, size_t length) {
    return mlock(start, length);
}

// Unmaps [start, start + length).
static inline int clinux_unmap(void *start, size_t length) {
    return munmap(start, length);
}

// Makes [start, start + length) read-only (`writable` 0) or read-write again (`writable` 1).
static inline int clinux_protect(void *start, size_t length, int writable) {
    return mprotect(start, length, writable ? (PROT_READ | PROT_WRITE) : PROT_READ);
}

// Gives the heap's free pages back to the system (glibc's malloc_trim(3)); returns 1 when it released any.
static inline int clinux_malloc_trim(void) {
    return malloc_trim(0);
}
#endif
