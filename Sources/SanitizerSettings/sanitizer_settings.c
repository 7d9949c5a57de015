/* ThreadSanitizer's suppressions and AddressSanitizer's options, compiled into every program of the package when
 * it is built with `--sanitize=thread` or `--sanitize=address` (and into nothing otherwise). The runtime asks for them by name at start, so the test
 * process and every program the tests start (sessionkeeper, demo-site) use them without TSAN_OPTIONS, which
 * those children do not inherit: the tests and Platform.ChildEnvironment hand them a chosen environment.
 * docs/RELIABILITY.md ("Sanitizers") has the runs that justify each line. */
#include "SanitizerSettings.h"

int sessionkeeper_sanitizer_slowdown(void) {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
    return 5;
#elif __has_feature(address_sanitizer)
    return 2;
#endif
#endif
    return 1;
}

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
        "race_top:s10Subprocess\n"
        /* SwiftNIO's ByteBuffer reallocates its storage in place only after `isKnownUniquelyReferenced` says no
         * one else holds it, as any copy-on-write value does. The reference counts that make that safe are
         * changed inside the Swift runtime, which is not built with the sanitizer, so ThreadSanitizer sees no
         * order between another thread's last read of a buffer (a request body's part, turned into Data on the
         * thread that sends it on) and the event loop reusing that storage for its next read
         * (NIOPooledRecvBufferAllocator): swift-nio issue 303. Reports whose top frame is that in-place
         * reallocation (`ByteBuffer._Storage.reallocStorage`) are left out; any other access to a buffer is
         * still reported. */
        "race_top:s7NIOCore10ByteBufferV8_StorageC07reallocD0\n";
}

#endif
#endif

#if defined(__has_feature)
#if __has_feature(address_sanitizer)

/* AddressSanitizer's default options, for the same reason: the programs the tests start do not inherit
 * ASAN_OPTIONS. Leak detection is off there too, as scripts/sanitize sets it for the test process: it counts the
 * Swift runtime's metadata caches, and in one run of four it reported 160 bytes of SiteConfig's JSONTemplate
 * values as leaked at the exit of a `cookie` run, values the site definition holds until then (the same command
 * reported nothing in the other runs); a leak check worth its name needs a suppression list first. */
__attribute__((used, visibility("default"))) const char *__asan_default_options(void) {
    return "detect_leaks=0";
}

#endif
#endif
