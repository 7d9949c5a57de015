/* ThreadSanitizer's suppressions, compiled into every program of the package when it is built with
 * `--sanitize=thread` (and into nothing otherwise). The runtime asks for them by name at start, so the test
 * process and every program the tests start (sessionkeeper, demo-site) use them without TSAN_OPTIONS, which
 * those children do not inherit: the tests and Platform.ChildEnvironment hand them a chosen environment.
 * docs/RELIABILITY.md ("Sanitizers") has the runs that justify each line. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)

__attribute__((used, visibility("default"))) const char *__tsan_default_suppressions(void) {
    return
        /* swift-subprocess keeps its process monitor's state (`_processMonitorState`) and its AsyncIO
         * registrations (`_registration`) behind the standard library's Synchronization.Mutex, which locks
         * through futex calls ThreadSanitizer cannot see (the reason this project's own locks are
         * Locking.Locked). Every access it reported there was inside `withLock`: reports whose top frame is
         * in swift-subprocess (its Swift symbols start `$s10Subprocess`; a `$` cannot be written in a pattern)
         * are that, and are left out. A race whose top frame is this project's code is still reported. */
        "race_top:s10Subprocess\n";
}

#endif
#endif
