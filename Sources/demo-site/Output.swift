import Foundation

/// Unbuffered line output, so a script reading the request log sees each line as it happens.
enum StandardOutput {
    static func writeLine(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

enum StandardError {
    static func writeLine(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// The `--port-file`: written to a temporary name and renamed, so a reader never sees a partial number.
enum PortFile {
    static func write(_ port: Int, to path: String) throws {
        let temporary = path + ".tmp-\(ProcessInfo.processInfo.processIdentifier)"
        try Data("\(port)\n".utf8).write(to: URL(fileURLWithPath: temporary))
        if rename(temporary, path) != 0 {
            let code = errno
            unlink(temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: String(cString: strerror(code))])
        }
    }

    static func remove(_ path: String) {
        unlink(path)
    }
}
