import Scheduler
import Sessions
import SiteConfig

// MARK: What other processes change in the store

extension Keeper {
    /// What changed in the store while the daemon runs (a ``StoreChangeFeed``'s batches; SPEC section 7): a secret
    /// a site's credentials read clears the site's needs-attention and logs it in (``SiteSchedule/Event/secretChanged``);
    /// a session stored for a site by another process (`sessionkeeper login`, `import`) is served at once when it is
    /// newer than the one served.
    public func storeChanged(_ changes: [StoreChange]) async {
        guard !stopped else { return }
        var secrets: Set<String> = []
        var sites: [String] = []
        for change in changes {
            switch change {
            case .secret(let name): secrets.insert(name)
            case .session(let site): sites.append(site)
            }
        }
        if !secrets.isEmpty {
            for (name, entry) in entries where !Self.secretNames(of: entry.site).isDisjoint(with: secrets) {
                if entry.schedule.phase == .needsAttention {
                    logger.info("a secret the site uses changed; logging in again", metadata: ["site": "\(name)"])
                }
                dispatch(.secretChanged, to: name)
            }
            rearm()
        }
        for name in Set(sites).sorted() { await lookAtStoredSession(of: name) }
    }

    /// The secrets of the store that `site`'s credentials read (`{secret: NAME}`, `{totp: {secret: NAME}}`).
    public static func secretNames(of site: SiteDefinition) -> Set<String> {
        Set(site.credentials.compactMap { entry in
            switch entry.source {
            case .secret(let name): name
            case .totp(let parameters): parameters.secretName
            case .literal, .environment, .file, .command: nil
            }
        })
    }

    /// Reads the site's stored session and serves it when it is newer than the one served. While the site's own
    /// login runs, that login's end serves what it stored, and the store is looked at again then: what another
    /// process stored meanwhile is not lost, nor mixed up with the login's own write.
    func lookAtStoredSession(of name: String) async {
        guard let entry = entries[name], !stopped else { return }
        if entry.schedule.loginRunning {
            storedDuringLogin.insert(name)
            return
        }
        let stored: SessionRecord?
        do {
            stored = try await login.store.load(site: name)
        } catch {
            logger.warning("cannot read the session another process stored", metadata: ["site": "\(name)", "error": "\(error)"])
            return
        }
        guard let stored else { return }
        adopt(stored, site: name)
        rearm()
    }

    /// Serves `stored`, a session read from the store, unless it is older than the one served; a session of a
    /// newer login (another process's) is news for the schedule too.
    func adopt(_ stored: SessionRecord, site name: String) {
        guard let entry = entries[name], stored != entry.record,
              stored.lastLogin >= (entry.record?.lastLogin ?? .distantPast)
        else { return }
        let newer = entry.record.map { stored.lastLogin > $0.lastLogin } ?? true
        serve(stored, site: name)
        guard newer else { return }
        dispatch(.sessionStoredElsewhere(Self.summary(stored, site: entry.site, now: wallClock())), to: name)
        // A login ended elsewhere (in fleet mode, the lease holder's): clients waiting for one look again.
        resumeWaiters(of: name, loginEnded: true)
    }
}
