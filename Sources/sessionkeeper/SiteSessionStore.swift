import CookieJar
import Foundation
import LoginFlow
import SiteConfig
import Vault

/// A site's session item in the vault (`.siteState`, named after the site): restored into the jar before
/// a login, replaced after a successful one.
struct SiteSessionStore {
    let vault: Vault
    let site: SiteDefinition

    var item: ItemReference { ItemReference(.siteState, site.name) }

    /// Puts the stored, unexpired cookies into `storage`. An item that cannot be read is reported and
    /// ignored: the login then starts from an empty jar, and a successful login replaces the item (issue 5:
    /// a site whose item can't be read logs in again).
    func restore(into storage: CookieStorage, progress: LoginProgress, now: Date = Date()) {
        let bytes: [UInt8]?
        do {
            bytes = try vault.value(of: item)
        } catch {
            progress.warn("cannot read the stored session, logging in from an empty jar: \(error)")
            return
        }
        guard let bytes else {
            progress.note("no stored session for \(site.name) in the vault")
            return
        }
        let record: SiteSessionRecord
        do {
            record = try SiteSessionRecord.decode(bytes, now: now)
        } catch {
            progress.warn("site \(site.name): \(error); logging in from an empty jar")
            return
        }
        for cookie in record.cookies { storage.setCookie(cookie) }
        let names = record.cookies.map(\.name).joined(separator: ", ")
        progress.note("restored \(record.cookies.count) cookie(s) from the vault" + (names.isEmpty ? "" : " (\(names))")
            + ", last login \(CookieTime.rfc3339(record.lastLogin))")
    }

    /// Replaces the site's item with the login's cookies (session cookies only when the site keeps them).
    func store(_ result: FlowResult, progress: LoginProgress) throws {
        let kept = SiteSessionRecord.persistable(
            result.cookies, keepSessionCookies: site.cookies.persistSessionCookies, now: result.finishedAt)
        let record = SiteSessionRecord(cookies: kept, lastLogin: result.finishedAt, expiresAt: result.sessionExpiry)
        let bytes: [UInt8]
        do {
            bytes = try record.encoded()
        } catch {
            throw CLIFailure.failed("site \(site.name): cannot encode the session for the vault")
        }
        do {
            try vault.set(bytes, for: item)
        } catch {
            throw CLIFailure(vaultError: error)
        }
        let dropped = result.cookies.count - kept.count
        progress.note("stored \(kept.count) cookie(s) in the vault (\(kept.map(\.name).joined(separator: ", ")))"
            + (dropped > 0 ? "; left out \(dropped) expired or session cookie(s)" : ""))
    }
}
