/// A vault's items wherever they are kept, as async calls: the vault folder of one host (``BackgroundVault``,
/// whose file work runs on the vault's I/O threads) or a database shared by a fleet of keepers (the
/// PostgresStore module). Values go in and come out in clear; each backend seals them with ``VaultKeys``, so
/// the bytes it stores are the vault's AEAD items under their keyed-hash ids.
///
/// Every call is safe from any task and never blocks a thread of Swift's cooperative pool. Errors are
/// ``VaultError``s that name the item and where it is kept, never a value.
public protocol ItemStore: Sendable {
    /// Says where the items live (a folder, or a database without its password), for messages.
    var location: String { get }
    /// The value of `item`, or nil when none is stored.
    func value(of item: ItemReference) async throws(VaultError) -> [UInt8]?
    /// Stores `value` as `item`, replacing any previous value atomically.
    func set(_ value: [UInt8], for item: ItemReference) async throws(VaultError)
    /// Removes `item`; returns false when there was none.
    @discardableResult
    func remove(_ item: ItemReference) async throws(VaultError) -> Bool
    /// Every item, and a problem for each one that cannot be read (which never stops the others).
    func list() async throws(VaultError) -> VaultListing
    /// Every item of `kind` with its value, and the problems met.
    func contents(of kind: ItemKind) async throws(VaultError) -> (values: [String: [UInt8]], problems: [VaultError])
    /// The names of the items of `kind`, sorted, and the problems met.
    func names(of kind: ItemKind) async throws(VaultError) -> (names: [String], problems: [VaultError])
}

extension BackgroundVault: ItemStore {
    /// The vault folder.
    public var location: String { vault.folder }
}
