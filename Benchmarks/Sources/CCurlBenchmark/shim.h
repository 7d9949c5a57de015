#ifndef CCURL_BENCHMARK_SHIM_H
#define CCURL_BENCHMARK_SHIM_H
// libcurl for the benchmarks that call it directly (its cookie parser, next to the jar's). Target names are
// unique across a package graph, so this package cannot reuse the main package's CCurl module.
#include <curl/curl.h>

static inline CURLcode ccurl_easy_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_easy_getinfo_string(CURL *handle, CURLINFO info, char **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_global_init_default(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline const curl_version_info_data *ccurl_version_info(void) { return curl_version_info(CURLVERSION_NOW); }
#endif
