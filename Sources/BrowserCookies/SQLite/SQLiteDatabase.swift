internal import CSQLite

/// Why SQLite refused a database or a query: its result code, its message, and the file.
struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// SQLite's extended result code.
    var code: Int32
    /// SQLite's own message (`file is not a database`, `database is locked`); it never quotes row content.
    var message: String
    var path: String

    /// Another connection holds a lock that keeps this one out (SQLITE_BUSY, SQLITE_LOCKED).
    var isLocked: Bool { [SQLITE_BUSY, SQLITE_LOCKED].contains(code & 0xFF) }
    /// The file is not an SQLite database, or one whose pages do not add up (SQLITE_NOTADB, SQLITE_CORRUPT).
    var isDamaged: Bool { [SQLITE_NOTADB, SQLITE_CORRUPT].contains(code & 0xFF) }

    var description: String { "\(path): \(message)" }
}

/// One connection to an SQLite database, for reading only: every statement it runs is a query (`PRAGMA
/// query_only` refuses anything else), and ``rows(_:_:)`` is the only way in.
///
/// It is opened on a private copy of a browser's database, never on the browser's own file, and with
/// write access to that copy: the copy may hold a write-ahead log or a hot rollback journal that a browser
/// was in the middle of, which SQLite applies or rolls back on opening. A read-only connection refuses a hot
/// journal, and the copied database without its journal can hold half a transaction.
///
/// A class, so that the handle is closed exactly once, in `deinit`.
final class SQLiteDatabase {
    private let handle: OpaquePointer
    let path: String

    private init(handle: OpaquePointer, path: String) {
        self.handle = handle
        self.path = path
    }

    deinit {
        csqlite_close_v2(handle)
    }

    /// Opens the database file at `path`, which must exist (nothing is created), and checks that it reads
    /// as a database.
    ///
    /// - Parameter busyTimeout: how long a statement waits for another connection's lock before failing
    ///   with a locked error.
    static func open(_ path: String, busyTimeout: Duration = .milliseconds(500)) throws(SQLiteError) -> SQLiteDatabase {
        if let failure = csqlite_load_error() {
            throw SQLiteError(code: SQLITE_CANTOPEN, message: "cannot load SQLite: \(String(cString: failure))", path: path)
        }
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_PRIVATECACHE
        let status = csqlite_open_v2(path, &handle, flags)
        guard let handle else {
            throw SQLiteError(code: status, message: String(cString: csqlite_errstr(status)), path: path)
        }
        let database = SQLiteDatabase(handle: handle, path: path)
        guard status == SQLITE_OK else { throw database.error(status) }
        csqlite_busy_timeout(handle, Int32(clamping: Int(busyTimeout / .milliseconds(1))))
        csqlite_extended_result_codes(handle, 1)
        try database.execute("PRAGMA query_only = ON")
        // SQLite reads the file's header lazily: the schema is what tells a database from other bytes.
        _ = try database.tableNames()
        return database
    }

    /// The names of the database's tables.
    func tableNames() throws(SQLiteError) -> Set<String> {
        var names = Set<String>()
        try rows("SELECT name FROM sqlite_master WHERE type = 'table'") { row in
            if let name = row.text(0) { names.insert(name) }
        }
        return names
    }

    /// The column names of `table`.
    func columnNames(of table: String) throws(SQLiteError) -> Set<String> {
        var names = Set<String>()
        try rows("PRAGMA table_info(\(Self.quotedIdentifier(table)))") { row in
            if let name = row.text(1) { names.insert(name) }
        }
        return names
    }

    /// The first column of the first row of `sql`, as an integer; nil when there is no row or it is NULL.
    func integer(_ sql: String) throws(SQLiteError) -> Int64? {
        var value: Int64?
        try rows(sql) { row in
            if value == nil, !row.isNull(0) { value = row.int64(0) }
        }
        return value
    }

    /// Runs the query `sql` and hands each row to `body`, which must not keep the row.
    func rows(_ sql: String, _ body: (SQLiteRow) -> Void) throws(SQLiteError) {
        var statement: OpaquePointer?
        let prepared = csqlite_prepare_v2(handle, sql, &statement)
        guard prepared == SQLITE_OK, let statement else { throw error(prepared) }
        defer { csqlite_finalize(statement) }
        while true {
            let stepped = csqlite_step(statement)
            if stepped == SQLITE_DONE { return }
            guard stepped == SQLITE_ROW else { throw error(stepped) }
            body(SQLiteRow(statement: statement))
        }
    }

    private func execute(_ sql: String) throws(SQLiteError) {
        let status = csqlite_exec(handle, sql)
        guard status == SQLITE_OK else { throw error(status) }
    }

    private func error(_ status: Int32) -> SQLiteError {
        let code = csqlite_extended_errcode(handle)
        let message = csqlite_errmsg(handle).map { String(cString: $0) } ?? String(cString: csqlite_errstr(status))
        return SQLiteError(code: code == SQLITE_OK ? status : code, message: message, path: path)
    }

    /// An identifier in double quotes, inner quotes doubled (the SQL standard's quoting).
    static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// The current row of a query, valid only inside ``SQLiteDatabase/rows(_:_:)``'s body.
struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    func isNull(_ column: Int32) -> Bool { csqlite_column_type(statement, column) == SQLITE_NULL }

    /// The column as an integer (0 for NULL; SQLite converts text and reals).
    func int64(_ column: Int32) -> Int64 { csqlite_column_int64(statement, column) }

    /// The column's bytes as SQLite stores them (text without conversion, or a blob); empty for NULL.
    func bytes(_ column: Int32) -> [UInt8] {
        // The blob first, then its length: the order SQLite documents for a stable answer.
        guard let pointer = csqlite_column_blob(statement, column) else { return [] }
        let count = Int(csqlite_column_bytes(statement, column))
        return [UInt8](UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The column as UTF-8 text; nil for NULL or bytes that are not UTF-8.
    func text(_ column: Int32) -> String? {
        if isNull(column) { return nil }
        return String(validating: bytes(column), as: UTF8.self)
    }
}
