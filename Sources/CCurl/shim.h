#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
/* The table's fields carry libcurl's own names, which curl.h's type-checking macros (typecheck-gcc.h) would
 * expand in calls through it; the typed wrappers below do that job. */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>
#include <stddef.h>
#include "../CLazyLibrary/lazy_library.h"

/* libcurl is bound at run time, on first use, rather than linked (Sources/CLazyLibrary/lazy_library.h, the same
 * way as libxml2 in Sources/CXML2/shim.h).
 *
 * Linking it made every start of the program load libcurl and the ~25 libraries it needs (GnuTLS, Kerberos,
 * LDAP, SSH, RTMP...), run their constructors and resolve their symbols: about 7 ms of CPU before main, paid
 * by commands that never speak HTTP (`cookie`, `status`, `jar header`). So nothing here references a libcurl
 * symbol directly: every wrapper below calls through the table `ccurl()` returns. The module map links
 * nothing. Callers check `ccurl_load_error()` once (CurlTransport does, before its first handle) and may then
 * call any wrapper. */

typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);
typedef int (*ccurl_seek_callback)(void *userdata, curl_off_t offset, int origin);

/* Each entry point CurlTransport calls, by its libcurl name. */
#define CCURL_ENTRY_POINTS(FUNCTION, VARIABLE) \
    FUNCTION(curl_global_init) \
    FUNCTION(curl_easy_init) \
    FUNCTION(curl_easy_cleanup) \
    FUNCTION(curl_easy_reset) \
    FUNCTION(curl_easy_setopt) \
    FUNCTION(curl_easy_getinfo) \
    FUNCTION(curl_easy_strerror) \
    FUNCTION(curl_easy_pause) \
    FUNCTION(curl_multi_init) \
    FUNCTION(curl_multi_cleanup) \
    FUNCTION(curl_multi_setopt) \
    FUNCTION(curl_multi_add_handle) \
    FUNCTION(curl_multi_remove_handle) \
    FUNCTION(curl_multi_perform) \
    FUNCTION(curl_multi_poll) \
    FUNCTION(curl_multi_wakeup) \
    FUNCTION(curl_multi_info_read) \
    FUNCTION(curl_multi_strerror) \
    FUNCTION(curl_slist_append) \
    FUNCTION(curl_slist_free_all) \
    FUNCTION(curl_version_info)

/* libcurl's ABI 4 (every libcurl since 7.16), from Debian's libcurl4 package. */
LAZY_LIBRARY(ccurl, "libcurl.so.4", "libcurl4", CCURL_ENTRY_POINTS)

static inline CURLcode ccurl_global_init_default(void) { return ccurl()->curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline CURL *ccurl_easy_init(void) { return ccurl()->curl_easy_init(); }
static inline void ccurl_easy_cleanup(CURL *handle) { ccurl()->curl_easy_cleanup(handle); }
static inline void ccurl_easy_reset(CURL *handle) { ccurl()->curl_easy_reset(handle); }
static inline const char *ccurl_easy_strerror(CURLcode code) { return ccurl()->curl_easy_strerror(code); }
/* Unpauses both directions of a paused transfer (CURLPAUSE_CONT, a macro of an expression Swift does not import). */
static inline CURLcode ccurl_easy_unpause(CURL *handle) { return ccurl()->curl_easy_pause(handle, CURLPAUSE_CONT); }
static inline CURLM *ccurl_multi_init(void) { return ccurl()->curl_multi_init(); }
static inline CURLMcode ccurl_multi_cleanup(CURLM *multi) { return ccurl()->curl_multi_cleanup(multi); }
static inline CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *handle) { return ccurl()->curl_multi_add_handle(multi, handle); }
static inline CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *handle) {
    return ccurl()->curl_multi_remove_handle(multi, handle);
}
static inline CURLMcode ccurl_multi_perform(CURLM *multi, int *running) { return ccurl()->curl_multi_perform(multi, running); }
static inline CURLMcode ccurl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *ret) {
    return ccurl()->curl_multi_poll(multi, extra, count, timeout_ms, ret);
}
static inline CURLMcode ccurl_multi_wakeup(CURLM *multi) { return ccurl()->curl_multi_wakeup(multi); }
static inline CURLMsg *ccurl_multi_info_read(CURLM *multi, int *remaining) { return ccurl()->curl_multi_info_read(multi, remaining); }
static inline const char *ccurl_multi_strerror(CURLMcode code) { return ccurl()->curl_multi_strerror(code); }
static inline struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *string) {
    return ccurl()->curl_slist_append(list, string);
}
static inline void ccurl_slist_free_all(struct curl_slist *list) { ccurl()->curl_slist_free_all(list); }

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot call. Each
 * wrapper below fixes the argument type for one family of options. */
static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return ccurl()->curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return ccurl()->curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return ccurl()->curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return ccurl()->curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return ccurl()->curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback cb) {
    return ccurl()->curl_easy_setopt(handle, option, cb);
}
static inline CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, ccurl_seek_callback cb) {
    return ccurl()->curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, cb);
}
static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return ccurl()->curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return ccurl()->curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return ccurl()->curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return ccurl()->curl_multi_setopt(multi, option, value);
}

/* Macros that expand to expressions Swift does not import. */
static inline const curl_version_info_data *ccurl_version_info(void) { return ccurl()->curl_version_info(CURLVERSION_NOW); }
static inline int ccurl_version_has_http2(void) { return (ccurl_version_info()->features & CURL_VERSION_HTTP2) != 0; }
static inline int ccurl_version_has_http3(void) { return (ccurl_version_info()->features & CURL_VERSION_HTTP3) != 0; }
#endif
