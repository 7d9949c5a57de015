import DemoSite
import Foundation
import Testing

@Suite("Configuration validation")
struct ConfigurationTests {
    @Test(
        "Bad values are refused with the flag's name",
        arguments: [
            (DemoSite.Configuration(port: 70_000), "--port"),
            (DemoSite.Configuration(user: ""), "--user"),
            (DemoSite.Configuration(password: ""), "--password-env"),
            (DemoSite.Configuration(sessionMaxAge: 0), "--session-max-age"),
            (DemoSite.Configuration(totpSecret: "not base32!"), "--totp-secret"),
            (DemoSite.Configuration(totpSecret: "GEZDGNBV"), "--totp-secret"),
            (DemoSite.Configuration(mainHost: "bad host"), "--main-host"),
            (DemoSite.Configuration(mainHost: "same.test", ssoHost: "SAME.test"), "--sso-host"),
            (DemoSite.Configuration(loginPagePadding: -1), "--login-page-padding"),
            (DemoSite.Configuration(totpDrift: 3), "--totp-drift"),
        ]
    )
    func invalid(configuration: DemoSite.Configuration, flag: String) throws {
        let error = try #require(throws: DemoSite.ConfigurationError.self) { try configuration.validate() }
        #expect(error.description.contains(flag))
        #expect(throws: DemoSite.ConfigurationError.self) { try DemoSite.buildApplication(configuration: configuration) }
    }

    @Test("Base32 secrets are accepted in groups, lower case and padded")
    func secretSpellings() throws {
        let expected = Array("12345678901234567890".utf8)
        for spelling in ["GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ", "gezd gnbv gy3t qojq gezd gnbv gy3t qojq", "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ===="] {
            #expect(try DemoSite.Configuration(totpSecret: spelling).validate() == expected)
        }
        #expect(try DemoSite.Configuration().validate() == nil)
    }

    @Test("Printing or dumping a configuration never shows the password or TOTP secret")
    func redaction() {
        let configuration = DemoSite.Configuration(password: "pa55-w0rd-xyz", totpSecret: "JBSWY3DPEHPK3PXP")
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in [configuration.description, String(reflecting: configuration), "\(configuration)", dumped] {
            #expect(!text.contains("pa55-w0rd-xyz"))
            #expect(!text.contains("JBSWY3DPEHPK3PXP"))
            #expect(text.contains("<redacted>"))
        }
    }
}
