#ifndef CLINUX_SHIM_H
#define CLINUX_SHIM_H
// Linux system calls whose headers the Swift Glibc module does not import. Only Platform imports this module.
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
#endif
