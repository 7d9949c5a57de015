import Foundation

/// `credentials:` and `allow_env:`: what templates may name besides extracted variables.
extension SiteBuilder {
    mutating func buildCredentials(_ credentials: Marked<OrderedMap<SiteFile.CredentialFile>>?) -> [CredentialEntry] {
        guard let credentials else { return [] }
        var entries: [CredentialEntry] = []
        for entry in credentials.value.entries {
            guard Template.isValidVariableName(entry.key), !entry.key.contains(".") else {
                checker.error(entry.keyMark, "credential name '\(entry.key)' is not a word (letters, digits, '_', '-')")
                continue
            }
            let source: CredentialSource?
            switch entry.value {
            case .literal(let value):
                source = .literal(value.value)
            case .source(let marked):
                source = buildCredentialSource(marked, name: entry.key)
            }
            if let source { entries.append(CredentialEntry(name: entry.key, source: source, mark: entry.keyMark)) }
        }
        return entries
    }

    private mutating func buildCredentialSource(_ marked: Marked<SiteFile.CredentialSourceFile>, name: String) -> CredentialSource? {
        let file = marked.value
        let present = [file.secret != nil, file.env != nil, file.file != nil, file.command != nil, file.totp != nil]
            .filter { $0 }.count
        let key = "credentials.\(name)"
        guard present == 1 else {
            checker.error(
                marked.mark,
                present == 0
                    ? "\(key): give a value or exactly one of secret, env, file, command, totp"
                    : "\(key): give exactly one of secret, env, file, command, totp")
            return nil
        }
        if let secret = file.secret {
            guard !secret.value.isEmpty else {
                checker.error(secret.mark, "\(key).secret: empty secret name")
                return nil
            }
            return .secret(secret.value)
        }
        if let env = file.env {
            guard Checker.isEnvironmentName(env.value) else {
                checker.error(env.mark, "\(key).env: '\(env.value)' is not an environment variable name")
                return nil
            }
            guard !isPassphraseVariable(env.value, at: env.mark, key: "\(key).env") else { return nil }
            return .environment(env.value)
        }
        if let path = file.file {
            return checker.nonEmptyPath(path, key: "\(key).file").map { .file(path: $0) }
        }
        if let command = file.command {
            guard let program = command.value.first, !program.isEmpty else {
                checker.error(command.mark, "\(key).command: give the program and its arguments as a list, such as [pass, show, wiki]")
                return nil
            }
            return .command(command.value)
        }
        if let totp = file.totp {
            let value = totp.value
            guard let secret = value.secret, !secret.value.isEmpty else {
                checker.error(totp.mark, "\(key).totp: missing key 'secret' (the vault item holding the base32 seed)")
                return nil
            }
            var parameters = TOTPParameters(secretName: secret.value)
            if let digits = value.digits {
                if (6...8).contains(digits.value) {
                    parameters.digits = digits.value
                } else {
                    checker.error(digits.mark, "\(key).totp.digits: \(digits.value) is outside 6...8 (RFC 4226)")
                }
            }
            if let period = checker.positiveDuration(value.period, key: "\(key).totp.period") {
                parameters.period = period
            }
            if let algorithm = checker.choice(value.algorithm, TOTPParameters.Algorithm.self, key: "\(key).totp.algorithm") {
                parameters.algorithm = algorithm
            }
            return .totp(parameters)
        }
        return nil
    }

    mutating func buildAllowEnv(_ names: [Marked<String>]?) -> [String] {
        (names ?? []).compactMap { name in
            guard Checker.isEnvironmentName(name.value) else {
                checker.error(name.mark, "allow_env: '\(name.value)' is not an environment variable name")
                return nil
            }
            guard !isPassphraseVariable(name.value, at: name.mark, key: "allow_env") else { return nil }
            return name.value
        }
    }

    /// Whether `name` is the vault's passphrase variable, which no site may read (SPEC section 3); records the
    /// error when it is.
    mutating func isPassphraseVariable(_ name: String, at mark: SourceMark, key: String) -> Bool {
        guard let passphraseVariable, name == passphraseVariable else { return false }
        checker.error(
            mark,
            "\(key): \(name) holds the vault's passphrase (config.yaml vault.key: {passphrase_env: \(name)}); no site may "
                + "read it: give the site its own variable")
        return true
    }
}
