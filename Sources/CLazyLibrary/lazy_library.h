#ifndef SESSIONKEEPER_LAZY_LIBRARY_H
#define SESSIONKEEPER_LAZY_LIBRARY_H
/* Binding a C library at run time, on first use, instead of linking it: the one way the shims do it
 * (Sources/CCurl/shim.h for libcurl, Sources/CXML2/shim.h for libxml2; docs/BENCHMARKS.md "Start-up" says
 * what a linked library costs every start of a command that never uses it). Included by those shims, not a
 * module of its own.
 *
 * A shim keeps a `struct lazy_library` and its table of entry points in a function-local static (Swift's
 * importer emits a header's inline functions and their local statics, not its file-scope variables), so each
 * object file that calls a wrapper holds its own copy, filled on its first call through its own
 * pthread_once; dlopen returns the same library to each. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct lazy_library {
    pthread_once_t once;
    const char *failure; /* NULL while every step so far succeeded; else why the library cannot be used */
    char failure_text[512];
};

#define LAZY_LIBRARY_INIT {PTHREAD_ONCE_INIT, NULL, {0}}

/* Opens `soname` (RTLD_LOCAL: its dependencies stay out of the global symbol scope; never closed: the
 * libraries keep global state for the life of the process), or records the loader's reason and returns NULL. */
static inline void *lazy_library_open(struct lazy_library *state, const char *soname) {
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(state->failure_text, sizeof state->failure_text, "%s", reason != NULL ? reason : soname);
        state->failure = state->failure_text;
    }
    return library;
}

/* The address of `name` in `library`, or NULL with the first missing name recorded as the failure. */
static inline void *lazy_library_bind(struct lazy_library *state, void *library, const char *soname, const char *name) {
    void *symbol = dlsym(library, name);
    if (symbol == NULL && state->failure == NULL) {
        const char *reason = dlerror();
        snprintf(state->failure_text, sizeof state->failure_text, "%s has no %s (%s)", soname, name,
                 reason != NULL ? reason : "symbol not found");
        state->failure = state->failure_text;
    }
    return symbol;
}

#endif
