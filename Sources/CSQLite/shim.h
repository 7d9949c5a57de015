#ifndef CSQLITE_SHIM_H
#define CSQLITE_SHIM_H
/* The system's SQLite, for reading browsers' cookie databases (Firefox's cookies.sqlite, Chromium's Cookies)
 * in `sessionkeeper import --from-browser`. Only BrowserCookies imports this module, and only to read.
 *
 * libsqlite3 is bound at run time, on first use, rather than linked, as libcurl and libxml2 are
 * (Sources/CLazyLibrary/lazy_library.h): one command uses it, and a linked library is loaded at every start
 * of every command. So nothing here references an SQLite symbol directly: `csqlite_load_error` opens the
 * library once and fills a table of entry points, and every wrapper below calls through that table. The
 * module map links nothing; Debian's libsqlite3-dev puts sqlite3.h on the default include path. */
#include <sqlite3.h>
#include "../CLazyLibrary/lazy_library.h"

/* The run-time name of SQLite 3's library, from Debian's libsqlite3-0 package. */
#define CSQLITE_LIBRARY_SONAME "libsqlite3.so.0"

/* Each entry point BrowserCookies calls, by its SQLite name. */
#define CSQLITE_ENTRY_POINTS(X) \
    X(sqlite3_open_v2) \
    X(sqlite3_close_v2) \
    X(sqlite3_errstr) \
    X(sqlite3_errmsg) \
    X(sqlite3_extended_errcode) \
    X(sqlite3_extended_result_codes) \
    X(sqlite3_busy_timeout) \
    X(sqlite3_exec) \
    X(sqlite3_prepare_v2) \
    X(sqlite3_step) \
    X(sqlite3_finalize) \
    X(sqlite3_column_type) \
    X(sqlite3_column_int64) \
    X(sqlite3_column_blob) \
    X(sqlite3_column_bytes)

struct csqlite_entry_points {
#define CSQLITE_FIELD(name) __typeof__(name) *name;
    CSQLITE_ENTRY_POINTS(CSQLITE_FIELD)
#undef CSQLITE_FIELD
};

struct csqlite_state {
    struct lazy_library library;
    struct csqlite_entry_points entry;
};

static inline struct csqlite_state *csqlite_state(void) {
    static struct csqlite_state state = {LAZY_LIBRARY_INIT, {0}};
    return &state;
}

static inline void csqlite_open(void) {
    struct csqlite_state *state = csqlite_state();
    /* Never closed: connections may be open until the process ends. */
    void *library = lazy_library_open(&state->library, CSQLITE_LIBRARY_SONAME);
    if (library == NULL) return;
    struct csqlite_entry_points e;
#define CSQLITE_BIND(name) *(void **)&e.name = lazy_library_bind(&state->library, library, CSQLITE_LIBRARY_SONAME, #name);
    CSQLITE_ENTRY_POINTS(CSQLITE_BIND)
#undef CSQLITE_BIND
    if (state->library.failure == NULL) state->entry = e;
}

/* NULL once libsqlite3 is loaded and bound (loading it on the first call), else why it could not be: the
 * dynamic loader's message, which names the missing file or symbol. BrowserCookies checks it before any
 * other call (SQLiteDatabase.open). */
static inline const char *csqlite_load_error(void) {
    struct csqlite_state *state = csqlite_state();
    pthread_once(&state->library.once, csqlite_open);
    return state->library.failure;
}

/* Every wrapper below requires a successful csqlite_load_error() first in the process; each makes sure its
 * own object file's table is bound (a no-op after the first call). */
static inline const struct csqlite_entry_points *csqlite(void) {
    struct csqlite_state *state = csqlite_state();
    pthread_once(&state->library.once, csqlite_open);
    return &state->entry;
}

static inline int csqlite_open_v2(const char *path, sqlite3 **database, int flags) {
    return csqlite()->sqlite3_open_v2(path, database, flags, NULL);
}
static inline int csqlite_close_v2(sqlite3 *database) { return csqlite()->sqlite3_close_v2(database); }
static inline const char *csqlite_errstr(int code) { return csqlite()->sqlite3_errstr(code); }
static inline const char *csqlite_errmsg(sqlite3 *database) { return csqlite()->sqlite3_errmsg(database); }
static inline int csqlite_extended_errcode(sqlite3 *database) { return csqlite()->sqlite3_extended_errcode(database); }
static inline int csqlite_extended_result_codes(sqlite3 *database, int on) {
    return csqlite()->sqlite3_extended_result_codes(database, on);
}
static inline int csqlite_busy_timeout(sqlite3 *database, int milliseconds) {
    return csqlite()->sqlite3_busy_timeout(database, milliseconds);
}
static inline int csqlite_exec(sqlite3 *database, const char *sql) {
    return csqlite()->sqlite3_exec(database, sql, NULL, NULL, NULL);
}
static inline int csqlite_prepare_v2(sqlite3 *database, const char *sql, sqlite3_stmt **statement) {
    return csqlite()->sqlite3_prepare_v2(database, sql, -1, statement, NULL);
}
static inline int csqlite_step(sqlite3_stmt *statement) { return csqlite()->sqlite3_step(statement); }
static inline int csqlite_finalize(sqlite3_stmt *statement) { return csqlite()->sqlite3_finalize(statement); }
static inline int csqlite_column_type(sqlite3_stmt *statement, int column) {
    return csqlite()->sqlite3_column_type(statement, column);
}
static inline sqlite3_int64 csqlite_column_int64(sqlite3_stmt *statement, int column) {
    return csqlite()->sqlite3_column_int64(statement, column);
}
static inline const void *csqlite_column_blob(sqlite3_stmt *statement, int column) {
    return csqlite()->sqlite3_column_blob(statement, column);
}
static inline int csqlite_column_bytes(sqlite3_stmt *statement, int column) {
    return csqlite()->sqlite3_column_bytes(statement, column);
}
#endif
