import Foundation
import Testing

@testable import LoginFlow

/// `TokenParameters` (SPEC section 3, `login -vv`): what travels under the name of a code or a token is masked
/// wherever it appears, and nothing else is.
@Suite struct TokenMaskingTests {
    @Test(arguments: [
        // OAuth's answer in a Location header, a query, a form body.
        ("Location: http://app/cb?code=SplxlOBeZQQYbYS6WxSbIA&state=xyzABC123", "Location: http://app/cb?code=•••&state=•••"),
        ("next=%2Fauthorize%3Fclient_id%3Ddemo%26state%3DAbC123_-x", "next=%2Fauthorize%3Fclient_id%3Ddemo%26state%3D•••"),
        ("return=%252Fa%253Fstate%253Dq1w2e3%2526x%253D1", "return=%252Fa%253Fstate%253D•••%2526x%253D1"),
        ("csrfmiddlewaretoken=k9&username=alice&SAMLResponse=PHNhbWw%2B&RelayState=r1", "csrfmiddlewaretoken=•••&username=alice&SAMLResponse=•••&RelayState=•••"),
        // JSON members.
        (#"{"access_token": "eyJhbGci", "id_token":"eyJ0eXAi", "token_type": "Bearer", "user": "alice"}"#,
         #"{"access_token": "•••", "id_token": "•••", "token_type": "•••", "user": "alice"}"#),
        // HTML inputs, the value before or after the name.
        (#"<input type="hidden" name="csrfmiddlewaretoken" value="Zx81">"#, #"<input type="hidden" name="csrfmiddlewaretoken" value="•••">"#),
        (#"<input value='Zx81' name=authenticity_token>"#, #"<input value='•••' name=authenticity_token>"#),
        (#"<input type="text" name="username" value="alice">"#, #"<input type="text" name="username" value="alice">"#),
        // Names that carry nothing secret stay, and so does text without parameters.
        ("response_type=code&client_id=demo-app&scope=openid", "response_type=code&client_id=demo-app&scope=openid"),
        ("expected status 303, found status 200", "expected status 303, found status 200"),
    ])
    func codesAndTokensAreMaskedByTheirName(text: String, masked: String) {
        #expect(TokenParameters.mask(text) == masked)
    }

    @Test func everyMaskedMessageMasksThem() {
        let masker = SecretMasker()
        #expect(masker.redact("found http://app/cb?code=abc123") == "found http://app/cb?code=•••")
    }
}
