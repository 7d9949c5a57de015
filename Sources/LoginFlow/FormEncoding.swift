import Foundation

/// `application/x-www-form-urlencoded` and `multipart/form-data` serialisation as browsers do it
/// (WHATWG URL standard, "application/x-www-form-urlencoded serializing"; RFC 7578).
enum FormEncoding {
    /// Bytes left as they are: ASCII alphanumerics and `*-._`; a space becomes `+`; everything else is
    /// percent-encoded from UTF-8.
    static func encode(_ text: String) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        append(text, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    private static func append(_ text: String, to output: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."),
                UInt8(ascii: "_"):
                output.append(byte)
            case UInt8(ascii: " "):
                output.append(UInt8(ascii: "+"))
            default:
                output.append(UInt8(ascii: "%"))
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// `name=value&name=value`, in order.
    static func urlEncoded(_ fields: [(name: String, value: String)]) -> String {
        String(decoding: urlEncodedBytes(fields), as: UTF8.self)
    }

    /// ``urlEncoded(_:)`` as a request body, built in one buffer.
    static func urlEncodedData(_ fields: [(name: String, value: String)]) -> Data {
        Data(urlEncodedBytes(fields))
    }

    private static func urlEncodedBytes(_ fields: [(name: String, value: String)]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 } + 16)
        for (index, field) in fields.enumerated() {
            if index > 0 { output.append(UInt8(ascii: "&")) }
            append(field.name, to: &output)
            output.append(UInt8(ascii: "="))
            append(field.value, to: &output)
        }
        return output
    }

    /// A multipart/form-data body and its Content-Type (with the boundary).
    static func multipart(_ fields: [(name: String, value: String)]) -> (body: Data, contentType: String) {
        let boundary = "----SessionKeeperFormBoundary" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        var body = Data()
        for field in fields {
            // RFC 7578 section 4.2: quotes and line breaks in the name are percent-encoded.
            let name = field.name.replacingOccurrences(of: "\"", with: "%22").replacingOccurrences(of: "\r", with: "%0D")
                .replacingOccurrences(of: "\n", with: "%0A")
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n".utf8))
            body.append(Data(field.value.utf8))
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        return (body, "multipart/form-data; boundary=\(boundary)")
    }

    /// `url` with `items` appended to its query (keeping any query it has).
    static func appendingQuery(_ items: [(name: String, value: String)], to url: URL) -> URL? {
        guard !items.isEmpty else { return url }
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        let added = urlEncoded(items)
        if let existing = components.percentEncodedQuery, !existing.isEmpty {
            components.percentEncodedQuery = existing + "&" + added
        } else {
            components.percentEncodedQuery = added
        }
        return components.url
    }

    /// `url` with its query replaced by `items` (a GET form submission, HTML "mutate action URL").
    static func replacingQuery(of url: URL, with items: [(name: String, value: String)]) -> URL? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return nil }
        components.percentEncodedQuery = urlEncoded(items)
        components.fragment = nil
        return components.url
    }
}
