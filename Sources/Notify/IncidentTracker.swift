import Foundation
import Scheduler
import SiteConfig

/// Which state changes become notifications: a pure state machine (changes in, notifications out), so
/// that each incident is told once and its end once, whatever the daemon's states do in between.
///
/// - An incident opens when a site needs attention or waits for a person and none is open for it; it stays
///   open through failed, logging-in and refreshing states, and ends when the site is valid again, with one
///   `recovered`.
/// - needs-attention is told once per incident: a site that keeps failing while it needs attention (a
///   person asked for a login, which failed again) is not told twice.
/// - waiting-for-person is told for each prompt that starts waiting: each asks for a new answer.
/// - A prompt that times out into needs-attention is told as needs-attention (its prompt alert ends).
/// - A disabled or removed site's incident is dropped without a notification: nobody needs to act.
public struct IncidentTracker: Sendable {
    /// An open incident.
    public struct Incident: Sendable, Hashable {
        public var id: IncidentID
        public var started: Date
        /// The event told last, which still describes the site (its alert is firing).
        public var current: SiteNotification
        /// Every event told in this incident.
        public var told: [NotificationEvent]
    }

    /// Open incidents by site.
    public private(set) var open: [String: Incident] = [:]
    private var nextNumber: UInt64 = 1

    public init() {}

    /// What `change` tells the notifiers, in order (usually nothing, at most one notification).
    public mutating func handle(_ change: SiteStateChange) -> [SiteNotification] {
        let site = change.site
        switch change.to {
        case .needsAttention:
            if let incident = open[site], incident.told.contains(.needsAttention) { return [] }
            return [tell(.needsAttention, change)]
        case .waitingForPerson:
            return [tell(.waitingForPerson, change)]
        case .valid:
            guard let incident = open.removeValue(forKey: site) else { return [] }
            return [SiteNotification(
                event: .recovered, site: site, time: change.time, incident: incident.id, incidentStarted: incident.started,
                ends: incident.told)]
        case .disabled:
            open[site] = nil
            return []
        case .loggingIn, .refreshing, .failed:
            return []
        }
    }

    /// A site is gone (its file removed): its incident, if any, is dropped without a notification.
    public mutating func forget(site: String) {
        open[site] = nil
    }

    /// The notification of each open incident that still holds, for a notifier that re-sends what is
    /// active (Alertmanager expects that), in site order.
    public var firing: [SiteNotification] {
        open.keys.sorted().compactMap { open[$0]?.current }
    }

    /// Tells `event`, opening the site's incident when none is open.
    private mutating func tell(_ event: NotificationEvent, _ change: SiteStateChange) -> SiteNotification {
        var incident: Incident
        if let existing = open[change.site] {
            incident = existing
        } else {
            let id = IncidentID(site: change.site, number: nextNumber)
            nextNumber += 1
            let placeholder = SiteNotification(event: event, site: change.site, time: change.time, incident: id, incidentStarted: change.time)
            incident = Incident(id: id, started: change.time, current: placeholder, told: [])
        }
        let previous = incident.told.isEmpty ? nil : incident.current.event
        let notification = SiteNotification(
            event: event, site: change.site, time: change.time, incident: incident.id, incidentStarted: incident.started,
            reason: event == .needsAttention ? (change.reason ?? .other) : nil, message: change.message,
            prompt: event == .waitingForPerson ? change.prompt : nil,
            ends: previous.map { $0 == event ? [] : [$0] } ?? [])
        incident.current = notification
        if !incident.told.contains(event) { incident.told.append(event) }
        open[change.site] = incident
        return notification
    }
}
