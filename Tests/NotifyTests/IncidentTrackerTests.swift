import Foundation
import Notify
import Scheduler
import SiteConfig
import Testing

/// The incident tracker as a pure state machine: state changes in, notifications out, no I/O.
@Suite struct IncidentTrackerTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static func change(_ from: SiteSchedule.Phase, _ to: SiteSchedule.Phase, at seconds: Double, site: String = "wiki", reason: AttentionReason? = nil,
                       message: String? = nil, prompt: PromptRequest? = nil) -> SiteStateChange {
        SiteStateChange(site: site, time: start + seconds, from: from, to: to, reason: reason, message: message, prompt: prompt)
    }

    @Test func oneNeedsAttentionPerIncidentAndOneRecovered() {
        var tracker = IncidentTracker()
        // A login refused: told once.
        #expect(tracker.handle(Self.change(.valid, .refreshing, at: 0)).isEmpty)
        let told = tracker.handle(Self.change(.refreshing, .needsAttention, at: 1, reason: .credentialsRefused, message: "HTTP 401"))
        #expect(told.map(\.event) == [.needsAttention])
        let first = told[0]
        #expect(first.site == "wiki" && first.reason == .credentialsRefused && first.message == "HTTP 401" && first.ends.isEmpty)
        #expect(first.incidentStarted == Self.start + 1)
        // A person asks for a login, which fails again: the same incident, not told twice.
        #expect(tracker.handle(Self.change(.needsAttention, .loggingIn, at: 10)).isEmpty)
        #expect(tracker.handle(Self.change(.loggingIn, .failed, at: 11)).isEmpty)
        #expect(tracker.handle(Self.change(.failed, .needsAttention, at: 12, reason: .dailyCapReached)).isEmpty)
        #expect(tracker.open["wiki"]?.id == first.incident)
        // It logs in: recovered once, ending what was told.
        let recovered = tracker.handle(Self.change(.loggingIn, .valid, at: 20))
        #expect(recovered.map(\.event) == [.recovered])
        #expect(recovered.first?.incident == first.incident && recovered.first?.ends == [.needsAttention])
        #expect(recovered.first?.incidentStarted == Self.start + 1)
        #expect(tracker.handle(Self.change(.valid, .valid, at: 21)).isEmpty)
        #expect(tracker.handle(Self.change(.refreshing, .valid, at: 22)).isEmpty, "no incident, nothing recovers")
        // A new incident later has a new id.
        let second = tracker.handle(Self.change(.valid, .needsAttention, at: 30, reason: .manualSessionDied))
        #expect(second.first?.incident != first.incident)
    }

    @Test func eachPromptIsToldATimeoutBecomesNeedsAttentionAndTheEndResolvesBoth() {
        var tracker = IncidentTracker()
        let prompt = PromptRequest(name: "sms_code", expiresAt: Self.start + 900)
        let waiting = tracker.handle(Self.change(.loggingIn, .waitingForPerson, at: 0, message: "Code sent to ...42", prompt: prompt))
        #expect(waiting.map(\.event) == [.waitingForPerson])
        #expect(waiting.first?.prompt == prompt && waiting.first?.answerCommand == "sessionkeeper answer wiki sms_code")
        #expect(waiting.first?.reason == nil)
        // The prompt timed out: needs-attention, ending the waiting alert.
        let timedOut = tracker.handle(Self.change(.waitingForPerson, .needsAttention, at: 900, reason: .promptTimedOut))
        #expect(timedOut.map(\.event) == [.needsAttention])
        #expect(timedOut.first?.ends == [.waitingForPerson] && timedOut.first?.incident == waiting.first?.incident)
        // A person asks again: a new prompt waits, which is news.
        #expect(tracker.handle(Self.change(.needsAttention, .loggingIn, at: 1000)).isEmpty)
        let again = tracker.handle(Self.change(.loggingIn, .waitingForPerson, at: 1001, prompt: PromptRequest(name: "sms_code")))
        #expect(again.map(\.event) == [.waitingForPerson] && again.first?.ends == [.needsAttention])
        #expect(tracker.firing.map(\.event) == [.waitingForPerson])
        let recovered = tracker.handle(Self.change(.loggingIn, .valid, at: 1100))
        #expect(recovered.first?.ends == [.waitingForPerson, .needsAttention])
        #expect(tracker.firing.isEmpty)
    }

    @Test func sitesAreTrackedApartAndADisabledSitesIncidentIsDroppedSilently() {
        var tracker = IncidentTracker()
        _ = tracker.handle(Self.change(.failed, .needsAttention, at: 0, site: "a"))
        _ = tracker.handle(Self.change(.failed, .needsAttention, at: 1, site: "b"))
        #expect(tracker.firing.map(\.site) == ["a", "b"])
        #expect(tracker.handle(Self.change(.needsAttention, .disabled, at: 2, site: "a")).isEmpty)
        tracker.forget(site: "b")
        #expect(tracker.firing.isEmpty)
        #expect(tracker.handle(Self.change(.disabled, .valid, at: 3, site: "a")).isEmpty)
        #expect(tracker.handle(Self.change(.failed, .valid, at: 3, site: "b")).isEmpty)
    }

    @Test func aNotificationsTextNamesTheSiteTheReasonAndHowToAnswer() {
        var tracker = IncidentTracker()
        let attention = tracker.handle(Self.change(.failed, .needsAttention, at: 0, site: "my wiki", reason: .credentialsRefused, message: "HTTP 401 at step 'login'"))[0]
        #expect(attention.title == "SessionKeeper: my wiki needs attention")
        #expect(attention.text == "The site refused the credentials.\nHTTP 401 at step 'login'")
        let waiting = tracker.handle(Self.change(.loggingIn, .waitingForPerson, at: 0, site: "other", message: "Code sent to the phone ending 42",
                                                 prompt: PromptRequest(name: "sms_code")))[0]
        #expect(waiting.text == "Code sent to the phone ending 42\nAnswer with: sessionkeeper answer other sms_code")
        #expect(SiteNotification(event: .waitingForPerson, site: "it's", time: Self.start, incident: IncidentID(site: "it's", number: 1),
                                 incidentStarted: Self.start, prompt: PromptRequest(name: "code")).answerCommand
                == #"sessionkeeper answer 'it'\''s' code"#)
        // A daemon whose config the default lookup would not find names it, so the command works from anywhere.
        var named = waiting
        named.answerConfig = "/srv/keeper/my config.yaml"
        #expect(named.answerCommand == "sessionkeeper answer --config '/srv/keeper/my config.yaml' other sms_code")
    }
}
