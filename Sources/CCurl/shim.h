#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: one typed wrapper per
// argument type libcurl documents for the option (https://curl.se/libcurl/c/curl_easy_setopt.html).

/// A CURLOPT_WRITEFUNCTION / CURLOPT_HEADERFUNCTION callback.
typedef size_t (*ccurl_data_callback)(char *data, size_t size, size_t count, void *userdata);

/// A CURLOPT_XFERINFOFUNCTION callback: nonzero aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
typedef int (*ccurl_xferinfo_callback)(void *clientp, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);

static inline CURLcode ccurl_setopt_xferinfo_callback(CURL *handle, CURLoption option, ccurl_xferinfo_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_off_t(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode ccurl_setopt_data_callback(CURL *handle, CURLoption option, ccurl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_getinfo_off_t(CURL *handle, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode ccurl_getinfo_string(CURL *handle, CURLINFO info, const char **value) {
    return curl_easy_getinfo(handle, info, (char **)value);
}

// CURL_GLOBAL_DEFAULT is a macro of macros; CURL_ERROR_SIZE a plain macro Swift imports, kept here for symmetry.
static inline CURLcode ccurl_global_init(void) { return curl_global_init(CURL_GLOBAL_DEFAULT); }
static inline size_t ccurl_error_size(void) { return CURL_ERROR_SIZE; }
static inline size_t ccurl_max_write_size(void) { return CURL_MAX_WRITE_SIZE; }
#endif
