#ifndef SESSIONKEEPER_LAZY_LIBRARY_H
#define SESSIONKEEPER_LAZY_LIBRARY_H
/* Binding a C library at run time, on first use, instead of linking it: the one way the shims do it
 * (Sources/CCurl/shim.h for libcurl, Sources/CXML2/shim.h for libxml2, Sources/CSQLite/shim.h for SQLite). A linked library is loaded, relocated
 * and initialised at every start of the program, with every library behind it, by commands that never use it
 * (docs/BENCHMARKS.md, "Client start-up"). Included by those shims, not a module of its own.
 *
 * A shim lists its entry points and says LAZY_LIBRARY(prefix, soname, package, list); see that macro. The library
 * is found as dlopen finds a bare soname: LD_LIBRARY_PATH, then /etc/ld.so.cache, then the system's library
 * folders. */
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
 * libraries keep global state for the life of the process), or records why not, naming the library, the
 * Debian package that installs it and the loader's reason, and returns NULL. */
static inline void *lazy_library_open(struct lazy_library *state, const char *soname, const char *package) {
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(state->failure_text, sizeof state->failure_text, "cannot load %s (install Debian's %s package): %s",
                 soname, package, reason != NULL ? reason : "not found");
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

/* A field of the entry-point table per kind of entry: a function, by its C name and of its declared type; a
 * variable (libxml2's xmlFree, a macro in its headers), by a field name of the shim's choice. */
#define LAZY_LIBRARY_FUNCTION_FIELD(name) __typeof__(name) *name;
#define LAZY_LIBRARY_VARIABLE_FIELD(field, symbol, type) type *field;
#define LAZY_LIBRARY_BIND_FUNCTION(name) *(void **)&table.name = lazy_library_bind(&binding->library, library, soname, #name);
#define LAZY_LIBRARY_BIND_VARIABLE(field, symbol, type) \
    *(void **)&table.field = lazy_library_bind(&binding->library, library, soname, symbol);

/* Defines, for a shim whose functions start with PREFIX (ccurl, cxml2):
 *   struct PREFIX_entry_points  the table: a pointer per entry point ENTRY_POINTS lists;
 *   PREFIX_load_error()         NULL once SONAME is loaded and every entry point bound (on the first call), else
 *                               why not (lazy_library_open's words, or the first missing name);
 *   PREFIX()                    the table, for the shim's wrappers, which require a NULL PREFIX_load_error()
 *                               first in the process.
 * ENTRY_POINTS(FUNCTION, VARIABLE) says FUNCTION(name) for each function and VARIABLE(field, "symbol", type) for
 * each variable.
 *
 * The binding lives in a function-local static (Swift's importer emits a header's inline functions and their
 * local statics, not its file-scope variables), so each object file that calls a wrapper holds its own copy,
 * filled on its first call through its own pthread_once; dlopen returns the same library to each. */
#define LAZY_LIBRARY(PREFIX, SONAME, PACKAGE, ENTRY_POINTS)                                                       \
    struct PREFIX##_entry_points {                                                                                \
        ENTRY_POINTS(LAZY_LIBRARY_FUNCTION_FIELD, LAZY_LIBRARY_VARIABLE_FIELD)                                    \
    };                                                                                                            \
    struct PREFIX##_state {                                                                                       \
        struct lazy_library library;                                                                              \
        struct PREFIX##_entry_points entry;                                                                       \
    };                                                                                                            \
    static inline struct PREFIX##_state *PREFIX##_binding(void) {                                                 \
        static struct PREFIX##_state binding = {LAZY_LIBRARY_INIT, {0}};                                          \
        return &binding;                                                                                          \
    }                                                                                                             \
    static inline void PREFIX##_open(void) {                                                                      \
        struct PREFIX##_state *binding = PREFIX##_binding();                                                      \
        const char *soname = SONAME;                                                                              \
        void *library = lazy_library_open(&binding->library, soname, PACKAGE);                                    \
        if (library == NULL) return;                                                                              \
        struct PREFIX##_entry_points table;                                                                       \
        ENTRY_POINTS(LAZY_LIBRARY_BIND_FUNCTION, LAZY_LIBRARY_BIND_VARIABLE)                                      \
        if (binding->library.failure == NULL) binding->entry = table;                                             \
    }                                                                                                             \
    static inline const char *PREFIX##_load_error(void) {                                                         \
        struct PREFIX##_state *binding = PREFIX##_binding();                                                      \
        pthread_once(&binding->library.once, PREFIX##_open);                                                      \
        return binding->library.failure;                                                                          \
    }                                                                                                             \
    static inline const struct PREFIX##_entry_points *PREFIX(void) {                                              \
        struct PREFIX##_state *binding = PREFIX##_binding();                                                      \
        pthread_once(&binding->library.once, PREFIX##_open);                                                      \
        return &binding->entry;                                                                                   \
    }

#endif
