#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>
#include <stddef.h>
#include "../CLazyLibrary/lazy_library.h"

/* libcurl is bound at run time, on first use, rather than linked.
 *
 * Linking it made every start of the program load libcurl and the ~25 libraries it needs (GnuTLS, Kerberos,
 * LDAP, SSH, RTMP...), run their constructors and resolve their symbols: about 7 ms of CPU before main, paid
 * by commands that never speak HTTP (`cookie`, `status`, `jar header`). So nothing here references a libcurl
 * symbol directly: `ccurl_load` opens the library once and fills a table of entry points, and every
 * wrapper below calls through that table. The module map links nothing.
 *
 * The table is static, so each object file that calls a wrapper holds its own copy, filled on its first
 * call through its own pthread_once; dlopen returns the same library to each. Callers check
 * `ccurl_load_error()` once (CurlTransport does, before its first handle) and may then call any wrapper. */

/* The run-time name of libcurl's ABI 4 (every libcurl since 7.16), from Debian's libcurl4 package. */
#define CCURL_LIBRARY_SONAME "libcurl.so.4"

typedef size_t (*ccurl_data_callback)(char *buffer, size_t size, size_t count, void *userdata);
typedef int (*ccurl_seek_callback)(void *userdata, curl_off_t offset, int origin);

struct ccurl_entry_points {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *handle);
    void (*easy_reset)(CURL *handle);
    CURLcode (*easy_setopt)(CURL *handle, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *handle, CURLINFO info, ...);
    const char *(*easy_strerror)(CURLcode code);
    CURLcode (*easy_pause)(CURL *handle, int bitmask);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_cleanup)(CURLM *multi);
    CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
    CURLMcode (*multi_add_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *handle);
    CURLMcode (*multi_perform)(CURLM *multi, int *running);
    CURLMcode (*multi_poll)(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *ret);
    CURLMcode (*multi_wakeup)(CURLM *multi);
    CURLMsg *(*multi_info_read)(CURLM *multi, int *remaining);
    const char *(*multi_strerror)(CURLMcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
    void (*slist_free_all)(struct curl_slist *list);
    curl_version_info_data *(*version_info)(CURLversion age);
};

/* The binding's state (lazy_library.h says why it is a function-local static). */
struct ccurl_state {
    struct lazy_library library;
    struct ccurl_entry_points entry;
};

static inline struct ccurl_state *ccurl_state(void) {
    static struct ccurl_state state = {LAZY_LIBRARY_INIT, {0}};
    return &state;
}

static inline void *ccurl_bind(void *library, const char *name) {
    return lazy_library_bind(&ccurl_state()->library, library, CCURL_LIBRARY_SONAME, name);
}

static inline void ccurl_open(void) {
    struct ccurl_state *state = ccurl_state();
    /* Never closed: libcurl keeps global state (its SSL backend, the DNS resolver threads) for the life of
     * the process. */
    void *library = lazy_library_open(&state->library, CCURL_LIBRARY_SONAME);
    if (library == NULL) return;
    struct ccurl_entry_points e;
    *(void **)&e.global_init = ccurl_bind(library, "curl_global_init");
    *(void **)&e.easy_init = ccurl_bind(library, "curl_easy_init");
    *(void **)&e.easy_cleanup = ccurl_bind(library, "curl_easy_cleanup");
    *(void **)&e.easy_reset = ccurl_bind(library, "curl_easy_reset");
    *(void **)&e.easy_setopt = ccurl_bind(library, "curl_easy_setopt");
    *(void **)&e.easy_getinfo = ccurl_bind(library, "curl_easy_getinfo");
    *(void **)&e.easy_strerror = ccurl_bind(library, "curl_easy_strerror");
    *(void **)&e.easy_pause = ccurl_bind(library, "curl_easy_pause");
    *(void **)&e.multi_init = ccurl_bind(library, "curl_multi_init");
    *(void **)&e.multi_cleanup = ccurl_bind(library, "curl_multi_cleanup");
    *(void **)&e.multi_setopt = ccurl_bind(library, "curl_multi_setopt");
    *(void **)&e.multi_add_handle = ccurl_bind(library, "curl_multi_add_handle");
    *(void **)&e.multi_remove_handle = ccurl_bind(library, "curl_multi_remove_handle");
    *(void **)&e.multi_perform = ccurl_bind(library, "curl_multi_perform");
    *(void **)&e.multi_poll = ccurl_bind(library, "curl_multi_poll");
    *(void **)&e.multi_wakeup = ccurl_bind(library, "curl_multi_wakeup");
    *(void **)&e.multi_info_read = ccurl_bind(library, "curl_multi_info_read");
    *(void **)&e.multi_strerror = ccurl_bind(library, "curl_multi_strerror");
    *(void **)&e.slist_append = ccurl_bind(library, "curl_slist_append");
    *(void **)&e.slist_free_all = ccurl_bind(library, "curl_slist_free_all");
    *(void **)&e.version_info = ccurl_bind(library, "curl_version_info");
    if (state->library.failure == NULL) state->entry = e;
}

/* NULL once libcurl is loaded and bound (loading it on the first call), else why it could not be: the
 * dynamic loader's message, which names the missing file or symbol. */
static inline const char *ccurl_load_error(void) {
    struct ccurl_state *state = ccurl_state();
    pthread_once(&state->library.once, ccurl_open);
    return state->library.failure;
}

/* Every wrapper below requires a successful ccurl_load_error() first in the process; each makes sure its
 * own object file's table is bound (a no-op after the first call). */
static inline const struct ccurl_entry_points *ccurl(void) {
    struct ccurl_state *state = ccurl_state();
    pthread_once(&state->library.once, ccurl_open);
    return &state->entry;
}

static inline CURLcode ccurl_global_init_default(void) { return ccurl()->global_init(CURL_GLOBAL_DEFAULT); }
static inline CURL *ccurl_easy_init(void) { return ccurl()->easy_init(); }
static inline void ccurl_easy_cleanup(CURL *handle) { ccurl()->easy_cleanup(handle); }
static inline void ccurl_easy_reset(CURL *handle) { ccurl()->easy_reset(handle); }
static inline const char *ccurl_easy_strerror(CURLcode code) { return ccurl()->easy_strerror(code); }
/* Unpauses both directions of a paused transfer (CURLPAUSE_CONT, a macro of an expression Swift does not import). */
static inline CURLcode ccurl_easy_unpause(CURL *handle) { return ccurl()->easy_pause(handle, CURLPAUSE_CONT); }
static inline CURLM *ccurl_multi_init(void) { return ccurl()->multi_init(); }
static inline CURLMcode ccurl_multi_cleanup(CURLM *multi) { return ccurl()->multi_cleanup(multi); }
static inline CURLMcode ccurl_multi_add_handle(CURLM *multi, CURL *handle) { return ccurl()->multi_add_handle(multi, handle); }
static inline CURLMcode ccurl_multi_remove_handle(CURLM *multi, CURL *handle) {
    return ccurl()->multi_remove_handle(multi, handle);
}
static inline CURLMcode ccurl_multi_perform(CURLM *multi, int *running) { return ccurl()->multi_perform(multi, running); }
static inline CURLMcode ccurl_multi_poll(CURLM *multi, struct curl_waitfd *extra, unsigned int count, int timeout_ms, int *ret) {
    return ccurl()->multi_poll(multi, extra, count, timeout_ms, ret);
}
static inline CURLMcode ccurl_multi_wakeup(CURLM *multi) { return ccurl()->multi_wakeup(multi); }
static inline CURLMsg *ccurl_multi_info_read(CURLM *multi, int *remaining) { return ccurl()->multi_info_read(multi, remaining); }
static inline const char *ccurl_multi_strerror(CURLMcode code) { return ccurl()->multi_strerror(code); }
static inline struct curl_slist *ccurl_slist_append(struct curl_slist *list, const char *string) {
    return ccurl()->slist_append(list, string);
}
static inline void ccurl_slist_free_all(struct curl_slist *list) { ccurl()->slist_free_all(list); }

/* curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic, which Swift cannot call. Each
 * wrapper below fixes the argument type for one family of options. */
static inline CURLcode ccurl_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return ccurl()->easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return ccurl()->easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return ccurl()->easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return ccurl()->easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return ccurl()->easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback cb) {
    return ccurl()->easy_setopt(handle, option, cb);
}
static inline CURLcode ccurl_easy_setopt_seek_callback(CURL *handle, ccurl_seek_callback cb) {
    return ccurl()->easy_setopt(handle, CURLOPT_SEEKFUNCTION, cb);
}
static inline CURLcode ccurl_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return ccurl()->easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return ccurl()->easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_easy_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return ccurl()->easy_getinfo(handle, info, value);
}
static inline CURLMcode ccurl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return ccurl()->multi_setopt(multi, option, value);
}

/* Macros that expand to expressions Swift does not import. */
static inline const curl_version_info_data *ccurl_version_info(void) { return ccurl()->version_info(CURLVERSION_NOW); }
static inline int ccurl_version_has_http2(void) { return (ccurl_version_info()->features & CURL_VERSION_HTTP2) != 0; }
static inline int ccurl_version_has_http3(void) { return (ccurl_version_info()->features & CURL_VERSION_HTTP3) != 0; }
#endif
