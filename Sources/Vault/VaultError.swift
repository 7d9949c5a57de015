import Platform

/// The two kinds of things the vault keeps.
public enum ItemKind: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// A site's cookies and login state: opaque bytes chosen by the caller.
    case siteState = 1
    /// A credential's secret value (`secret set NAME`).
    case credential = 2

    public var description: String {
        switch self {
        case .siteState: return "site state"
        case .credential: return "credential"
        }
    }
}

/// One item: its kind and name. Never holds the value, so it is safe in any message.
public struct ItemReference: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var kind: ItemKind
    public var name: String

    public init(_ kind: ItemKind, _ name: String) {
        self.kind = kind
        self.name = name
    }

    public var description: String { "\(kind) '\(name)'" }

    /// Names are 1 to 255 bytes of UTF-8 without control characters.
    public static func isValidName(_ name: String) -> Bool { ItemFile.isValidName(name) }

    public static func < (lhs: ItemReference, rhs: ItemReference) -> Bool {
        (lhs.kind.rawValue, lhs.name) < (rhs.kind.rawValue, rhs.name)
    }
}

/// A vault failure: what went wrong and, where known, which item and which file. Never holds a key,
/// a passphrase or an item's value.
public struct VaultError: Error, Sendable, CustomStringConvertible {
    public enum Reason: Error, Sendable, Hashable {
        /// The state folder holds no vault yet (`sessionkeeper vault init`).
        case notInitialized
        /// `vault init` on a folder that already holds a vault.
        case alreadyInitialized
        /// The keyring is gone but item files remain: a new keyring would orphan them.
        case orphanedItems(count: Int)
        /// The key does not open the keyring: wrong key file, passphrase or credential.
        case wrongKey(source: String)
        /// The key could not be obtained: a missing or loose key file, an unset variable, a failing command.
        case keySource(String)
        /// Another process holds the state folder's lock (``StateFolderLock``: one daemon per state folder).
        case locked(FileLockError)
        /// The keyring lock (`state_dir/keyring.lock`) stayed held by another process for longer than
        /// `waited`: a keyring change, a rotation batch or an item write that is stuck.
        case keyringBusy(holderPID: Int32?, waited: Duration)
        /// Another process re-sealed the keyring (`vault rekey`) under a key this process does not hold,
        /// and the call needs it: a keyring change, or a key generation this process has not seen.
        case rekeyedElsewhere(source: String)
        /// Authentication failed: the file was changed, swapped with another item's or written under another key.
        case tampered
        /// Shorter than the smallest valid item.
        case truncated(size: Int)
        /// Not a vault file at all (wrong magic bytes).
        case foreignFile
        /// Written by a newer SessionKeeper with a format this one does not know.
        case unknownFormatVersion(UInt8)
        /// Encrypted under a key generation the keyring does not hold.
        case unknownKeyID(UInt32)
        /// Older than a version of the item this process has read (its write counter is below one seen): a row
        /// put back by whoever holds the store (fleet mode).
        case rolledBack(found: UInt64, seen: UInt64)
        /// The keyring file is unreadable or malformed.
        case keyringDamaged(String)
        /// Item names are 1 to 255 bytes of UTF-8 without control characters.
        case invalidName
        /// Values are at most ``Vault/maximumValueSize`` bytes.
        case valueTooLarge(size: Int)
        /// `vault rotate` left these files on the old key because they cannot be read.
        case rotationIncomplete(unreadableFiles: [String])
        /// The vault was closed before this call.
        case closed
        /// The database that holds the items (fleet mode) cannot be reached now: the reason, without a password.
        case storeUnreachable(String)
        /// The database that holds the items refused or failed a statement: what it said.
        case storeFailed(String)
        case io(SystemError)
    }

    public var reason: Reason
    /// The item concerned, when its kind and name are known (they are not for a file found by listing
    /// the folder that cannot be decrypted: the name is inside the ciphertext).
    public var item: ItemReference?
    /// The file concerned (in a database: the table and row).
    public var file: String?

    public init(_ reason: Reason, item: ItemReference? = nil, file: String? = nil) {
        self.reason = reason
        self.item = item
        self.file = file
    }

    public var description: String {
        var subject = ""
        if let item { subject = "\(item)" }
        if let file { subject += subject.isEmpty ? file : " (\(file))" }
        let message: String
        switch reason {
        case .notInitialized:
            message = "no vault here yet; run `sessionkeeper vault init`"
        case .alreadyInitialized:
            message = "a vault already exists here"
        case let .orphanedItems(count):
            message = "the keyring file was deleted but \(count) vault item file(s) remain, which only that keyring can "
                + "open; restore it from a backup (a new vault cannot read them)"
        case let .wrongKey(source):
            message = "wrong key, or the keyring file was modified: \(source) does not open the vault's keyring"
        case let .keySource(text):
            message = text
        case let .locked(error):
            message = "\(error); only one sessionkeeper daemon may use a state folder at a time"
        case let .keyringBusy(pid, waited):
            let holder = pid.map { "process \($0)" } ?? "another process"
            let milliseconds = waited.wholeMilliseconds
            let span = milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
            message = "the vault's keyring lock has been held by \(holder) for more than \(span), so the vault "
                + "cannot be changed now: another sessionkeeper is changing the keyring (vault init, rekey or rotate) or writing an "
                + "item and seems stuck; try again, or stop that process"
        case let .rekeyedElsewhere(source):
            message = "the keyring was re-sealed under another key (sessionkeeper vault rekey) while this process had the vault "
                + "open, and \(source) no longer opens it; restart with the new key"
        case .tampered:
            message = "authentication failed: the file was modified, swapped with another item's file or written under another key"
        case let .truncated(size):
            message = "truncated: \(size) bytes is shorter than any vault item"
        case .foreignFile:
            message = "not a SessionKeeper vault file"
        case let .unknownFormatVersion(version):
            message = version > ItemFile.countedFormatVersion
                ? "format version \(version) is newer than this SessionKeeper understands (it reads versions up to \(ItemFile.countedFormatVersion)); "
                    + "use the newer SessionKeeper that wrote it"
                : "damaged: its format version byte is \(version), which no SessionKeeper writes; restore the file from a backup"
        case let .unknownKeyID(id):
            message = "encrypted under key generation \(id), which the keyring does not hold"
        case let .rolledBack(found, seen):
            message = "an older version (write \(found)) than one this keeper has read (write \(seen)): the row was put back by "
                + "whoever can write the database; restore the item (set it again) and find out who changed the row"
        case let .keyringDamaged(text):
            message = "the keyring file was modified or damaged (\(text)); restore it from a backup"
        case .invalidName:
            message = "invalid name: names are 1 to \(ItemFile.maximumNameLength) bytes of UTF-8 without control characters"
        case let .valueTooLarge(size):
            message = "value of \(size) bytes is larger than the \(Vault.maximumValueSize) bytes allowed"
        case let .rotationIncomplete(files):
            message = "rotation incomplete: \(files.count) file(s) cannot be read (\(files.joined(separator: ", "))); "
                + "remove them (or restore them from a backup) and run `sessionkeeper vault rotate` again"
        case .closed:
            message = "the vault is closed"
        case let .storeUnreachable(reason):
            message = "the store's database cannot be reached: \(reason)"
        case let .storeFailed(reason):
            message = "the store's database failed: \(reason)"
        case let .io(error):
            message = error.description
        }
        return subject.isEmpty ? message : "\(subject): \(message)"
    }
}
