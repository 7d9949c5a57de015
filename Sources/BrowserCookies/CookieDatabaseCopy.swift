import Platform

/// A private copy of a browser's cookie database, read where the browser cannot interfere: a running browser
/// holds its database locked (Firefox and Chromium open it in exclusive locking mode), and the copy also
/// takes what is still only in the write-ahead log (`-wal`, with its index `-shm`) or must be rolled back
/// (`-journal`). The copy lives in a folder only its owner can enter, for as long as it takes to open it
/// (``openAndUnlink()``); ``remove()`` removes it when it is not opened.
struct CookieDatabaseCopy {
    /// The companions SQLite keeps beside a database, copied with it when present.
    static let companionSuffixes = ["-wal", "-shm", "-journal"]
    /// A cookie database this large is not one (a busy Chromium profile holds a few tens of megabytes).
    static let sizeLimit = 512 << 20

    /// The copied database.
    let path: String
    private let folder: PrivateTemporaryFolder

    /// Copies `original` and its companions into a new private folder.
    static func make(of original: String) throws(BrowserCookieError) -> CookieDatabaseCopy {
        let folder: PrivateTemporaryFolder
        do {
            folder = try PrivateTemporaryFolder.create(prefix: "sessionkeeper-browser-")
        } catch {
            throw .temporaryFolder(reason: error.description)
        }
        let name = original.split(separator: "/").last.map(String.init) ?? "cookies"
        let copy = CookieDatabaseCopy(path: folder.file(name), folder: folder)
        do throws(BrowserCookieError) {
            try copyFile(original, to: copy.path)
            for suffix in companionSuffixes where Syscall.exists(original + suffix) {
                try copyFile(original + suffix, to: copy.path + suffix)
            }
        } catch {
            copy.remove()
            throw error
        }
        return copy
    }

    private init(path: String, folder: PrivateTemporaryFolder) {
        self.path = path
        self.folder = folder
    }

    private static func copyFile(_ source: String, to destination: String) throws(BrowserCookieError) {
        let bytes: [UInt8]
        do {
            bytes = try BoundedRead.file(source, limit: sizeLimit)
        } catch {
            throw .unreadable(path: source, reason: error.reason)
        }
        do {
            try DurableFile.write(bytes, to: destination, mode: 0o600)
        } catch {
            throw .temporaryFolder(reason: error.description)
        }
    }

    /// Opens the copy and removes it at once, folder and companions with it: SQLite reads on through the
    /// descriptors it holds (the schema read when it opens has opened the log and rolled back a journal), and
    /// no copy of the browser's cookies is left on disk once this returns, even if the process is then killed
    /// by a signal that skips every `defer`.
    func openAndUnlink() throws(SQLiteError) -> SQLiteDatabase {
        defer { remove() }
        return try SQLiteDatabase.open(path)
    }

    /// Removes the copy and its folder; what cannot be removed is left (it is in a private folder).
    func remove() {
        try? folder.remove()
    }
}
