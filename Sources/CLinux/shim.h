#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Linux system calls whose headers the Swift Glibc module does not import. Only Platform imports this module.
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
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


// prctl(2) is variadic, which Swift cannot call: PR_SET_DUMPABLE with 0 makes the process non-dumpable (no core
// file; its /proc/PID files owned by root; no ptrace by processes of the same uid without CAP_SYS_PTRACE).
static inline int clinux_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

// PR_SET_NAME: names the calling thread (at most 15 bytes are kept) for /proc/PID/task/TID/comm, gdb and perf.
static inline int clinux_set_thread_name(const char *name) {
    return prctl(PR_SET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
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

// A socket-diagnostics request for one TCP socket (sock_diag(7)): a netlink header and inet_diag_req_v2.
struct clinux_inet_diag_request {
    struct nlmsghdr header;
    struct inet_diag_req_v2 request;
};

// Fills `out` to ask NETLINK_SOCK_DIAG for the TCP socket whose own address is `source`:`source_port` and whose
// peer is `destination`:`destination_port` (addresses in network byte order, 4 bytes for AF_INET, 16 for
// AF_INET6; ports in host order), in any state. The kernel answers with one inet_diag_msg, or NLMSG_ERROR.
static inline void clinux_inet_diag_request_make(
    struct clinux_inet_diag_request *out, int family, const unsigned char *source, unsigned short source_port,
    const unsigned char *destination, unsigned short destination_port, unsigned int sequence)
{
    size_t length = family == AF_INET6 ? 16 : 4;
    memset(out, 0, sizeof *out);
    out->header.nlmsg_len = sizeof *out;
    out->header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    out->header.nlmsg_flags = NLM_F_REQUEST;
    out->header.nlmsg_seq = sequence;
    out->request.sdiag_family = (__u8)family;
    out->request.sdiag_protocol = IPPROTO_TCP;
    out->request.idiag_states = ~0U;
    out->request.id.idiag_sport = htons(source_port);
    out->request.id.idiag_dport = htons(destination_port);
    memcpy(out->request.id.idiag_src, source, length);
    memcpy(out->request.id.idiag_dst, destination, length);
    // No cookie: the socket is found by its addresses alone.
    out->request.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
    out->request.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
}

// The netlink protocol number of socket diagnostics, the message types of its answer, and the header size.
static inline int clinux_netlink_sock_diag(void) { return NETLINK_SOCK_DIAG; }
static inline int clinux_sock_diag_by_family(void) { return SOCK_DIAG_BY_FAMILY; }
static inline int clinux_netlink_error(void) { return NLMSG_ERROR; }
static inline size_t clinux_netlink_header_length(void) { return NLMSG_HDRLEN; }
#endif
