import Foundation
import Testing
@testable import SiteConfig

/// docs/SITES.md stays true: its complete example passes validation, and it documents every key
/// the decoder accepts.
@Suite struct DocumentationTests {
    static let guide = Paths.repository.appendingPathComponent("docs/SITES.md").path

    @Test func completeExampleIsValid() throws {
        let text = try String(contentsOfFile: Self.guide, encoding: .utf8)
        let section = try #require(text.range(of: "## Complete example"))
        let rest = text[section.upperBound...]
        let start = try #require(rest.range(of: "```yaml\n"))
        let end = try #require(rest[start.upperBound...].range(of: "```"))
        let example = String(rest[start.upperBound..<end.lowerBound])
        let site = try loader.loadSite(text: example, file: "/tmp/docs/wiki.yaml", config: fixtureConfig())
        #expect(site.name == "wiki")
        #expect(site.check != nil && site.keepalive != nil)
    }

    @Test func everyAcceptedKeyIsDocumented() throws {
        let text = try String(contentsOfFile: Self.guide, encoding: .utf8)
        let keys = Set(
            SiteFile.CodingKeys.allCases.map(\.rawValue) + StepFile.CodingKeys.allCases.map(\.rawValue)
                + SiteFile.HTTPFile.CodingKeys.allCases.map(\.rawValue) + SiteFile.CookiesFile.CodingKeys.allCases.map(\.rawValue)
                + SiteFile.LimitsFile.CodingKeys.allCases.map(\.rawValue) + SiteFile.RefreshFile.CodingKeys.allCases.map(\.rawValue)
                + SiteFile.CredentialSourceFile.CodingKeys.allCases.map(\.rawValue) + SiteFile.TOTPFile.CodingKeys.allCases.map(\.rawValue)
                + StepFile.ExtractionFile.CodingKeys.allCases.map(\.rawValue) + StepFile.ExpectFile.CodingKeys.allCases.map(\.rawValue)
                + ConfigFile.CodingKeys.allCases.map(\.rawValue) + ConfigFile.SocketFile.CodingKeys.allCases.map(\.rawValue)
                + ConfigFile.KeyFile.CodingKeys.allCases.map(\.rawValue) + ConfigFile.SchedulerFile.CodingKeys.allCases.map(\.rawValue)
                + ConfigFile.NotifierFile.CodingKeys.allCases.map(\.rawValue) + ConfigFile.HeaderSourceFile.CodingKeys.allCases.map(\.rawValue)
                + SiteFile.EgressFile.CodingKeys.allCases.map(\.rawValue) + SiteFile.LoggedOutFile.CodingKeys.allCases.map(\.rawValue))
        for key in keys.sorted() {
            let documented = text.contains("`\(key)") || text.contains(".\(key)`") || text.contains("\(key):")
            #expect(documented, "docs/SITES.md does not mention \(key)")
        }
    }
}

@Suite struct SpellingTests {
    @Test func suggestsCloseKeysOnly() {
        #expect(Spelling.closest(to: "follow_redirect", among: ["follow_redirects", "form"]) == "follow_redirects")
        #expect(Spelling.closest(to: "base-url", among: ["base_url"]) == "base_url")
        #expect(Spelling.closest(to: "BASE_URL", among: ["base_url"]) == "base_url")
        #expect(Spelling.closest(to: "zzz", among: ["get", "post"]) == nil)
        #expect(Spelling.editDistance("kitten", "sitting") == 3)
        #expect(Spelling.editDistance("", "abc") == 3)
    }
}
