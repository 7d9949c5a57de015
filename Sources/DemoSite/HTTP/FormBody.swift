import Foundation
import HTTPServer
import HTTPTypes
import NIOCore

/// Reading request bodies the site accepts.
enum RequestBodyReader {
    /// Login forms and JSON logins are small; anything larger is refused with 413.
    static let maximumBodyBytes = 16 * 1024

    enum Failure: Error {
        case tooLarge
    }

    static func collect(_ request: ServerRequest) async throws(Failure) -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: maximumBodyBytes)
        } catch {
            throw .tooLarge
        }
    }

    /// Parses `application/x-www-form-urlencoded` (WHATWG URL "application/x-www-form-urlencoded parsing"):
    /// '&'-separated pairs, '+' as space, percent-decoding; the first occurrence of a name wins.
    static func formFields(_ buffer: ByteBuffer) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(buffer: buffer).split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decode(parts[0])
            let value = parts.count > 1 ? decode(parts[1]) : ""
            if fields[name] == nil { fields[name] = value }
        }
        return fields
    }

    private static func decode(_ component: Substring) -> String {
        let spaced = component.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
