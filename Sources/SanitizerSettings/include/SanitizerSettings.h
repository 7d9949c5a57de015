#ifndef SESSIONKEEPER_SANITIZER_SETTINGS_H
#define SESSIONKEEPER_SANITIZER_SETTINGS_H
/* Settings the sanitizers' runtimes look up by name (sanitizer_settings.c), and what the test support asks. */

/* How many times slower than a plain build this program runs: 1 without a sanitizer, 2 under AddressSanitizer,
 * 5 under ThreadSanitizer (the low ends of the slowdowns their documentation gives, 2x and 5-15x). The tests
 * stretch the time they allow a condition to become true by it; what a test measures stays as written. */
int sessionkeeper_sanitizer_slowdown(void);
#endif
