import Foundation
import Testing
@testable import SiteConfig

/// The corpus of broken files: each must fail with exactly these diagnostics, "LINE:COLUMN: message"
/// (a message may be given as its leading fragment when the rest names a machine-specific path).
/// Files named `config-*` are loaded as config.yaml, the others as site files.
@Suite struct BrokenFilesTests {
    static let expectations: [(file: String, diagnostics: [String])] = [
        ("Bad_Name.yaml", ["1:1: the file name gives the site name 'Bad_Name', which does not match [a-z0-9][a-z0-9._-]{0,62} (lower-case letters, digits, '.', '_', '-'; at most 63)"]),
        ("absolute-url-scheme.yaml", ["4:12: step 1.get: 'ftp://files.example.com/login' is not a valid http:// or https:// URL"]),
        ("accept-policy.yaml", ["4:11: cookies.accept: unknown value 'allways'; did you mean 'always'?"]),
        ("allow-env-name.yaml", ["3:13: allow_env: 'MY-VAR' is not an environment variable name"]),
        ("base-url-port.yaml", ["1:11: base_url: 'http://127.0.0.1:99999/': port 99999 is outside 1...65535"]),
        ("bad-base-url.yaml", ["1:11: base_url: 'wiki.example.com' is not an absolute http:// or https:// URL"]),
        ("bad-duration.yaml", ["4:12: http.timeout: '30' is not a duration; write a number and a unit: 500ms, 30s, 10m, 12h, 7d"]),
        ("bad-name.yaml", ["1:7: name 'My Wiki' does not match [a-z0-9][a-z0-9._-]{0,62} (lower-case letters, digits, '.', '_', '-'; at most 63)"]),
        ("bad-regex.yaml", ["6:24: step 1.extract.token.regex: invalid regular expression 'name=(\\w+'"]),
        ("bad-xpath.yaml", ["6:23: step 1.extract.csrf.xpath: invalid XPath: Invalid predicate at offset 20 in '//input[@name='csrf''"]),
        ("check-with-name.yaml", ["4:3: check: 'name' applies only to login steps"]),
        ("check-with-plugin.yaml", ["4:3: check is one HTTP request; plugins run only in login"]),
        ("client-cert-missing-key.yaml", ["4:16: http.client_cert needs both 'cert' and 'key' (PEM files)"]),
        ("comments-only.yaml", ["1:1: empty file; a site needs at least base_url and login"]),
        ("config-jitter.yaml", ["2:11: scheduler.jitter: 2 is outside 0...1 (a fraction of the delay)"]),
        ("config-log-level.yaml", ["1:14: log.level: unknown value 'verbose' (expected one of: trace, debug, info, notice, warning, error, critical)"]),
        ("config-max-concurrent.yaml", ["1:36: scheduler.max_concurrent_logins: 0 is outside 1...1024"]),
        ("config-socket-caps.yaml", [
            "1:29: socket.max_event_readers: 0 is outside 1...1000000", "1:46: socket.idle_timeout must be longer than zero",
            "1:69: socket.replay_memory_mib: -1 is outside 0...65536",
        ]),
        ("config-socket-per-uid-cap.yaml", ["3:28: socket.max_connections_per_uid (128) is above socket.max_connections (64)"]),
        ("config-socket-group-mode.yaml", ["2:9: socket.mode gives the group access but no socket.group is set"]),
        ("config-socket-path-too-long.yaml", ["2:9: socket.path: /xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx/sk.sock is longer than the 107 bytes a Unix socket path may have"]),
        ("config-store-lease.yaml", ["2:57: store.postgres.lease: '1s' is outside 3s...10m (a keeper renews its leases every third of it)"]),
        ("config-store-no-url.yaml", ["2:13: store.postgres: missing key 'url' (a postgres:// URL, or {env: NAME} naming the variable that holds it)"]),
        ("config-store-url-env.yaml", ["3:16: store.postgres.url.env: 'SK-DB' is not an environment variable name"]),
        ("config-store-url-parameter.yaml", ["3:10: store.postgres.url: unknown parameter 'sslmod' (known: sslmode, sslrootcert, host, port, user, password, dbname, application_name, connect_timeout)"]),
        ("config-store-url-scheme.yaml", ["3:10: store.postgres.url: not a PostgreSQL URL: it starts with postgres:// or postgresql://"]),
        ("config-unknown-key.yaml", ["2:1: unknown key 'state_dri'; did you mean 'state_dir'?"]),
        ("config-user-agent-empty.yaml", ["2:36: http.user_agent is empty; every request carries a User-Agent (leave the key out for SessionKeeper/"]),
        ("config-vault-two-keys.yaml", ["2:8: vault.key: give exactly one of file, passphrase_env, passphrase_file, passphrase_command, systemd_credential"]),
        ("config-wrong-type.yaml", ["1:10: metrics: expected true or false, found 'sometimes'", "2:12: sites_dir: expected a text, found a list"]),
        ("content-type-without-body.yaml", ["5:7: step 1: content_type applies only with 'body'"]),
        ("credential-command-empty.yaml", ["4:20: credentials.token.command: give the program and its arguments as a list, such as [pass, show, wiki]"]),
        ("credential-two-sources.yaml", ["4:13: credentials.password: give exactly one of secret, env, file, command, totp"]),
        ("duplicate-key.yaml", ["4:1: duplicate key 'enabled' (first defined at line 3)"]),
        ("egress-listen-ipv6-brackets.yaml", ["4:11: egress.listen: write an IPv6 address in brackets, as in [::1]:8481"]),
        ("egress-listen-ipv6-public.yaml", ["4:11: egress.listen: fe80::1 is not a loopback address; the listener takes only 127.0.0.0/8 or [::1], so that every client is a local process whose user the kernel names"]),
        ("egress-listen-name.yaml", ["4:11: egress.listen: 'localhost' is not an IP address (names are not resolved); the listener takes only 127.0.0.0/8 or [::1], so that every client is a local process whose user the kernel names"]),
        ("egress-listen-port.yaml", ["4:11: egress.listen: '70000' is not a port (1...65535)"]),
        ("egress-listen-public.yaml", ["4:11: egress.listen: 0.0.0.0 is not a loopback address; the listener takes only 127.0.0.0/8 or [::1], so that every client is a local process whose user the kernel names"]),
        ("egress-logged-out-body-empty.yaml", ["4:31: egress.logged_out.body_contains is empty; it would match every answer"]),
        ("egress-logged-out-key.yaml", ["4:16: unknown key 'stauts'; did you mean 'status'?"]),
        ("egress-logged-out-regex.yaml", ["5:18: egress.logged_out.url_matches: invalid regular expression '/login(\\?'"]),
        ("egress-logged-out-status.yaml", ["4:30: egress.logged_out.status: 999 is not an HTTP status (100-599)"]),
        ("egress-retry.yaml", ["4:10: egress.retry: unknown value 'idempotant'; did you mean 'idempotent'?"]),
        ("egress-unknown-key.yaml", ["4:3: unknown key 'retyr'; did you mean 'retry'?"]),
        ("empty-steps.yaml", ["3:10: login.steps is empty; a login needs at least one step"]),
        ("empty.yaml", ["1:1: empty file; a site needs at least base_url and login"]),
        ("env-not-allowed.yaml", ["4:12: step 1: '{{ env.HOME }}': 'HOME' is not listed under allow_env"]),
        ("essential-cookie-name.yaml", ["4:15: cookies.essential: 'a=b' is not a cookie name"]),
        ("every-in-step.yaml", ["5:7: step 1: 'every' applies only to check and keepalive"]),
        ("expect-header-misspelled.yaml", ["6:34: unknown key 'matchs'; did you mean 'matches'?"]),
        ("expect-header-name-misspelled.yaml", ["6:29: unknown key 'nme'; did you mean 'name'?"]),
        ("expect-header-name.yaml", ["6:17: step 1.expect.header: 'Bad Header' is not a header name"]),
        ("expect-json-without-path.yaml", ["6:15: step 1.expect.json needs 'path' (an RFC 6901 pointer such as /user/name)"]),
        ("extract-no-kind.yaml", ["6:9: step 1.extract.csrf: give one of regex, xpath, json, header, cookie, status, url"]),
        ("extract-reserved-name.yaml", ["6:9: step 1.extract: 'site' is reserved"]),
        ("extract-two-kinds.yaml", ["6:24: step 1.extract.csrf: give only one of regex, xpath, json, header, cookie, status, url"]),
        ("extract-url-misspelled.yaml", ["6:22: unknown key 'qurey'; did you mean 'query'?"]),
        ("form-from-without-xpath.yaml", ["5:18: step 2.form_from needs 'xpath' (which form of the previous page)"]),
        ("header-name-with-space.yaml", ["5:26: step 1.headers: 'X Bad' is not a valid header name"]),
        ("http-version.yaml", ["4:17: http.http_version: unknown value '1.0'; did you mean '1.1'?"]),
        ("json-pointer.yaml", ["6:23: step 1.extract.token.json: 'token' is not a JSON pointer (RFC 6901); it starts with '/', as in /user/name"]),
        ("keep-on-login-duplicate.yaml", ["4:43: cookies.keep_on_login: 'device_id' is listed twice"]),
        ("keep-on-login-empty-list.yaml", ["4:18: cookies.keep_on_login: the list is empty; write none to start every login from an empty jar"]),
        ("keep-on-login-mapping.yaml", ["4:18: cookies.keep_on_login: expected all-but-essential, none or a list of cookie names, found a mapping"]),
        ("keep-on-login-name.yaml", ["6:7: cookies.keep_on_login: 'device id' is not a cookie name"]),
        ("keep-on-login-word.yaml", ["4:18: cookies.keep_on_login: unknown value 'all_but_essential'; did you mean 'all-but-essential'?"]),
        ("login-steps-and-plugin.yaml", ["5:3: login has both 'steps' and 'plugin'; a plugin login has no steps"]),
        ("login-word.yaml", ["2:8: login: 'automatic' is not a login; write 'manual' or a mapping with 'steps:' or 'plugin:'"]),
        ("max-age-below-before-expiry.yaml", ["3:39: refresh.max_age (30m) must be longer than before_expiry (1h)"]),
        ("max-redirects.yaml", ["4:18: http.max_redirects: 500 is outside 0...50"]),
        ("merge-key-scalar.yaml", ["4:7: a merge key '<<' takes a mapping or a list of mappings, found '5'"]),
        ("missing-base-url.yaml", ["1:1: missing key 'base_url' (the site's address, such as https://wiki.example.com)"]),
        ("missing-login.yaml", ["1:1: missing key 'login' (login: {steps: [...]}, login: {plugin: NAME} or login: manual)"]),
        ("output-format.yaml", ["4:33: outputs.format: unknown value 'netscap'; did you mean 'netscape'?"]),
        ("output-mode.yaml", ["4:49: outputs.mode: '0999' is not a file mode; write octal permission bits such as \"0600\""]),
        ("plugin-key-on-request.yaml", ["4:7: step 1: 'pass_credentials' applies only to plugin steps"]),
        ("plugin-missing.yaml", ["3:11: login: plugin 'no-such-plugin.py' not found"]),
        ("plugin-not-executable.yaml", ["4:15: step 1: plugin 'not-executable.sh' is not an executable file"]),
        ("plugin-timeout-zero.yaml", ["5:16: step 1.timeout must be longer than zero"]),
        ("plugin-with-not-mapping.yaml", ["4:9: login.with: expected a mapping of names to values, found a list"]),
        ("prompt-and-request.yaml", ["4:7: step 1: a step is an HTTP request or a prompt, not both ('post' and 'prompt')"]),
        ("prompt-bad-name.yaml", [
            "4:22: step 1.prompt.name: '2fa code' is not a variable name (a word: letters, digits, '_', '-'; such as sms_code)",
            "6:20: step 2: '{{ sms_code }}': no earlier step extracts 'sms_code'",
        ]),
        ("prompt-in-check.yaml", [
            "4:3: check is one HTTP request; prompts run only in login",
            "4:3: check needs a request: one of get, post, put, patch, delete, request (or plugin)",
        ]),
        ("prompt-no-message.yaml", ["4:15: step 1.prompt needs 'message' (what the person is asked, such as \"Code sent to the phone ending 42\")"]),
        ("prompt-timeout.yaml", ["4:86: step 1.prompt.timeout: 'soon' is not a duration; write a number and a unit: 500ms, 30s, 10m, 12h, 7d"]),
        ("proxy-scheme.yaml", ["4:10: http.proxy: 'ftp://proxy:21' is not a proxy URL (http://, https://, socks4://, socks4a://, socks5://, socks5h://HOST:PORT)"]),
        ("redirect-status-followed.yaml", ["5:25: step 1 expects a redirect status but follows redirects, so it only sees the final response; add follow_redirects: false"]),
        ("request-without-method.yaml", ["4:16: step 1: request needs 'method'"]),
        ("resolve-format.yaml", ["4:13: http.resolve: 'wiki.example.com:10.1.2.3' is not HOST:PORT:ADDRESS (as curl --resolve takes)"]),
        ("retry-max-below-initial.yaml", ["4:30: refresh.retry.max (1m) is shorter than initial (10m)"]),
        ("retry-failures-zero.yaml", ["4:33: refresh.retry.max_failures_per_day: 0 is outside 1...1000"]),
        ("status-not-a-number.yaml", ["5:24: login.steps[0].expect.status: expected a whole number, found 'ok'"]),
        ("status-out-of-range.yaml", ["5:30: step 1.expect.status: 999 is not an HTTP status (100-599)"]),
        ("step-url-port.yaml", ["4:12: step 1.get: 'http://sso.example.com:0/login': port 0 is outside 1...65535"]),
        ("step-method-and-plugin.yaml", ["4:7: step 1: a step is an HTTP request or a plugin, not both ('get' and 'plugin')"]),
        ("step-no-method.yaml", ["4:7: step 'nothing' needs a request: one of get, post, put, patch, delete, request (or plugin)"]),
        ("step-two-bodies.yaml", ["6:7: step 1 has two bodies, 'form' and 'json'; give one"]),
        ("step-two-methods.yaml", ["5:7: step 1 has two methods, 'get' and 'post'; a step makes exactly one request"]),
        ("steps-not-a-list.yaml", ["4:5: login.steps: expected a list, found a mapping"]),
        ("syntax-tab.yaml", ["3:1: YAML syntax: found character that cannot start any token while scanning for the next token"]),
        ("syntax-unclosed-quote.yaml", ["4:1: YAML syntax: found unexpected end of stream while scanning a quoted scalar at line 2, column 14"]),
        ("top-level-list.yaml", ["1:1: expected a mapping of keys to values at the top of the file, found a list"]),
        ("totp-digits.yaml", ["4:43: credentials.otp.totp.digits: 10 is outside 6...8 (RFC 4226)"]),
        ("totp-missing-secret.yaml", ["4:15: credentials.otp.totp: missing key 'secret' (the vault item holding the base32 seed)"]),
        ("two-documents.yaml", ["3:1: a file holds one YAML document; remove this '---' and what follows or split the file"]),
        ("unclosed-template.yaml", ["4:12: step 1.get: unclosed '{{' (a placeholder is written {{ name }})"]),
        ("unknown-alias.yaml", ["3:14: unknown alias '*nope' (no '&nope' before it)"]),
        ("unknown-cookies-key.yaml", ["4:3: unknown key 'essentials'; did you mean 'essential'?"]),
        ("unknown-credential.yaml", ["7:20: step 1: '{{ credentials.pasword }}': no credential named 'pasword'; did you mean 'credentials.password'?"]),
        ("unknown-step-key.yaml", ["5:7: unknown key 'follow_redirect'; did you mean 'follow_redirects'?"]),
        ("unknown-top-key.yaml", ["1:1: unknown key 'base_ulr'; did you mean 'base_url'?"]),
        ("unknown-variable.yaml", ["8:21: step 2: '{{ csrf_token }}': no earlier step extracts 'csrf_token'; did you mean 'csrf'?"]),
        ("url-with-space.yaml", ["4:12: step 1.get: '/my login' contains a space; encode it as %20"]),
        ("user-agent-empty.yaml", ["4:15: http.user_agent is empty; every request carries a User-Agent (leave the key out for SessionKeeper/"]),
        ("variable-before-extract.yaml", ["4:12: step 1: '{{ ticket }}': no earlier step extracts 'ticket'"]),
        ("wrong-type-bool.yaml", ["3:10: enabled: expected true or false, found 'yes'"]),
    ]

    static let folder = Paths.fixture("broken")

    @Test func corpusIsLargeAndFullyListed() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder).filter { $0.hasSuffix(".yaml") }
        #expect(files.count >= 40)
        #expect(Set(files) == Set(Self.expectations.map(\.file)), "every broken file has an expectation and vice versa")
    }

    @Test(arguments: BrokenFilesTests.expectations.map(\.file))
    func reportsLineColumnAndMessage(_ file: String) throws {
        let expected = try #require(Self.expectations.first { $0.file == file }).diagnostics
        let path = Self.folder + "/" + file
        let diagnostics: [ConfigDiagnostic]
        do {
            if file.hasPrefix("config-") {
                _ = try loader.loadConfig(at: path)
            } else {
                _ = try loader.loadSite(at: path, config: fixtureConfig())
            }
            Issue.record("\(file) loaded but should fail")
            return
        } catch {
            diagnostics = error.diagnostics
        }
        let actual = diagnostics.map { "\($0.mark.line):\($0.mark.column): \($0.message)" }
        #expect(actual.count == expected.count, "\(file): \(actual)")
        for (line, want) in zip(actual, expected) {
            #expect(line.hasPrefix(want), "\(file): got \(line)")
        }
        for diagnostic in diagnostics {
            #expect(diagnostic.mark.file == path)
            #expect(diagnostic.description.hasPrefix("\(path):\(diagnostic.mark.line):\(diagnostic.mark.column): error: "))
        }
    }
}
