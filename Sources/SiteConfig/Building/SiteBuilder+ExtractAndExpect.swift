import Foundation

/// A step's `extract:` and `expect:`, which look at its last response.
extension SiteBuilder {
    mutating func buildExtractions(_ map: OrderedMap<StepFile.ExtractionFile>?, key: String) -> [NamedExtraction] {
        var result: [NamedExtraction] = []
        for entry in map?.entries ?? [] {
            let variableKey = "\(key).extract.\(entry.key)"
            guard Template.isValidVariableName(entry.key), !entry.key.contains(".") else {
                checker.error(entry.keyMark, "\(key).extract: '\(entry.key)' is not a variable name (a word: letters, digits, '_', '-')")
                continue
            }
            if ["credentials", "site", "env"].contains(entry.key) {
                checker.error(entry.keyMark, "\(key).extract: '\(entry.key)' is reserved")
                continue
            }
            let value = entry.value
            var kinds: [(Extraction, SourceMark)] = []
            if let regex = value.regex {
                checker.regex(regex, key: "\(variableKey).regex")
                kinds.append((.regex(regex.value), regex.mark))
            }
            if let xpath = value.xpath {
                checker.xpath(xpath, key: "\(variableKey).xpath")
                kinds.append((.xpath(xpath.value), xpath.mark))
            }
            if let pointer = value.json {
                checker.jsonPointer(pointer, key: "\(variableKey).json")
                kinds.append((.json(pointer: pointer.value), pointer.mark))
            }
            if let header = value.header {
                if !Checker.isToken(header.value) {
                    checker.error(header.mark, "\(variableKey).header: '\(header.value)' is not a header name")
                }
                kinds.append((.header(header.value), header.mark))
            }
            if let cookie = value.cookie {
                if cookie.value.isEmpty { checker.error(cookie.mark, "\(variableKey).cookie: empty cookie name") }
                kinds.append((.cookie(cookie.value), cookie.mark))
            }
            if let status = value.status {
                if !status.node.isNull, status.node.scalarText != "true" {
                    checker.error(status.node.mark, "\(variableKey).status takes no value (write status: true)")
                }
                kinds.append((.status, status.node.mark))
            }
            if let url = value.url {
                var query: String?
                if let mapping = url.mapping {
                    if let name = mapping.query?.value {
                        query = name
                    } else {
                        // Worded as the decoder words it, so a "did you mean 'query'" for a misspelled key
                        // replaces it (ConfigurationLoader drops the redundant one).
                        checker.error(
                            url.node.mark, "missing key 'query' in \(variableKey).url (write url: {query: NAME}, or url: true)")
                    }
                } else if !url.node.isNull, url.node.scalarText != "true" {
                    checker.error(url.node.mark, "\(variableKey).url: write url: true, or url: {query: NAME}")
                }
                kinds.append((.url(query: query), url.node.mark))
            }
            if kinds.count != 1 {
                checker.error(
                    kinds.count > 1 ? kinds[1].1 : entry.keyMark,
                    kinds.isEmpty
                        ? "\(variableKey): give one of regex, xpath, json, header, cookie, status, url"
                        : "\(variableKey): give only one of regex, xpath, json, header, cookie, status, url")
                continue
            }
            result.append(NamedExtraction(name: entry.key, extraction: kinds[0].0, mark: entry.keyMark))
        }
        return result
    }

    /// `expect:`, or a `when:` or `done_when:` (`field`), which take the same keys.
    mutating func buildExpectations(_ marked: Marked<StepFile.ExpectFile>, key: String, field: String = "expect") -> [Expectation] {
        let expect = marked.value
        var result: [Expectation] = []
        if let statuses = expect.status {
            var codes: [Int] = []
            for status in statuses.items {
                if (100...599).contains(status.value) {
                    codes.append(status.value)
                } else {
                    checker.error(status.mark, "\(key).\(field).status: \(status.value) is not an HTTP status (100-599)")
                }
            }
            if statuses.items.isEmpty {
                checker.error(marked.mark, "\(key).\(field).status: give at least one status")
            }
            result.append(Expectation(.status(codes), mark: statuses.items.first?.mark ?? marked.mark))
        }
        if let pattern = expect.urlMatches {
            checker.regex(pattern, key: "\(key).\(field).url_matches")
            result.append(Expectation(.urlMatches(pattern.value), mark: pattern.mark))
        }
        for text in expect.bodyContains?.items ?? [] {
            result.append(Expectation(.bodyContains(text.value), mark: text.mark))
        }
        for text in expect.notBodyContains?.items ?? [] {
            result.append(Expectation(.notBodyContains(text.value), mark: text.mark))
        }
        for cookie in expect.cookie?.items ?? [] {
            if cookie.value.isEmpty { checker.error(cookie.mark, "\(key).\(field).cookie: empty cookie name") }
            result.append(Expectation(.cookie(cookie.value), mark: cookie.mark))
        }
        for header in expect.header?.items ?? [] {
            switch header {
            case .name(let name):
                if !Checker.isToken(name.value) {
                    checker.error(name.mark, "\(key).\(field).header: '\(name.value)' is not a header name")
                }
                result.append(Expectation(.header(name: name.value, matches: nil), mark: name.mark))
            case .pattern(let pattern):
                guard let name = pattern.value.name else {
                    checker.error(pattern.mark, "missing key 'name' in \(key).\(field).header (the header's name)")
                    continue
                }
                guard Checker.isToken(name.value) else {
                    checker.error(name.mark, "\(key).\(field).header.name: '\(name.value)' is not a header name")
                    continue
                }
                let matches = pattern.value.matches
                if let matches { checker.regex(matches, key: "\(key).\(field).header.matches") }
                result.append(Expectation(.header(name: name.value, matches: matches?.value), mark: pattern.mark))
            case .other(let mark):
                checker.error(mark, "\(key).\(field).header: give a header name or {name: ..., matches: ...}")
            }
        }
        for json in expect.json?.items ?? [] {
            guard let path = json.value.path else {
                checker.error(json.mark, "\(key).\(field).json needs 'path' (an RFC 6901 pointer such as /user/name)")
                continue
            }
            checker.jsonPointer(path, key: "\(key).\(field).json.path")
            let equals = json.value.equals.map { Checker.jsonValue($0.node) }
            result.append(Expectation(.json(pointer: path.value, equals: equals), mark: json.mark))
        }
        return result
    }
}
