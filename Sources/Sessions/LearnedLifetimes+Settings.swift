import Foundation
import SiteConfig

extension LearnedLifetimes {
    /// What a site file sets explicitly that contradicts what was learned of its sessions, as warnings for `check`
    /// (SPEC section 3): explicit settings win, so a `keepalive.every` as long as a gap after which a session was
    /// found dead lets every session die between keepalives, and a `refresh.max_age` past an age at which one was
    /// found dead renews sessions only after they died.
    public func contradictions(in site: SiteDefinition) -> [ConfigDiagnostic] {
        var found: [ConfigDiagnostic] = []
        let every = { (duration: Duration) in DurationText.format(duration) }
        let learned = { (seconds: Double) in DurationText.format(.milliseconds(Int64((seconds * 1000).rounded()))) }
        if let keepalive = site.keepalive, let dead = idle.atMost, seconds(keepalive.every) >= dead {
            found.append(ConfigDiagnostic(
                keepalive.mark,
                "keepalive.every (\(every(keepalive.every))) is at least the idle timeout the daemon learned (a session was found dead "
                    + "after \(learned(dead)) without use): sessions die between keepalives; shorten it below \(learned(idle.atLeast)) "
                    + "or remove the keepalive and let the learned gap decide",
                severity: .warning))
        }
        if let maxAge = site.refresh.maxAge, let dead = lifetime.atMost, seconds(maxAge) > dead {
            found.append(ConfigDiagnostic(
                SourceMark(file: site.file, line: 1, column: 1),
                "refresh.max_age (\(every(maxAge))) is longer than the lifetime the daemon learned (a session was found dead at the "
                    + "age of \(learned(dead))): sessions die before max_age renews them; set it below \(learned(lifetime.atLeast)) "
                    + "or remove it and let the learned lifetime decide",
                severity: .warning))
        }
        return found
    }

    private func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
