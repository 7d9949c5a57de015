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

/* Each entry point BrowserCookies calls, by its SQLite name. */
#define CSQLITE_ENTRY_POINTS(FUNCTION, VARIABLE) \
    FUNCTION(sqlite3_open_v2) \
    FUNCTION(sqlite3_close_v2) \
    FUNCTION(sqlite3_errstr) \
    FUNCTION(sqlite3_errmsg) \
    FUNCTION(sqlite3_extended_errcode) \
    FUNCTION(sqlite3_extended_result_codes) \
    FUNCTION(sqlite3_busy_timeout) \
    FUNCTION(sqlite3_exec) \
    FUNCTION(sqlite3_prepare_v2) \
    FUNCTION(sqlite3_step) \
    FUNCTION(sqlite3_finalize) \
    FUNCTION(sqlite3_column_type) \
    FUNCTION(sqlite3_column_int64) \
    FUNCTION(sqlite3_column_blob) \
    FUNCTION(sqlite3_column_bytes)

/* SQLite 3's library, from Debian's libsqlite3-0 package. BrowserCookies checks csqlite_load_error() before any
 * other call (SQLiteDatabase.open). */
LAZY_LIBRARY(csqlite, "libsqlite3.so.0", "libsqlite3-0", CSQLITE_ENTRY_POINTS)

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
