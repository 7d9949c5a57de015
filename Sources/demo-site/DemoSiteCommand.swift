import ArgumentParser
import DemoSite
import Foundation

/// `demo-site`: runs the demo web application on loopback for tests, benchmarks and the README.
@main
struct DemoSiteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo-site",
        abstract: "Run the SessionKeeper demo web application (login form, CSRF, sessions, TOTP, SSO chain).",
        discussion: """
            Logs one line per request (method, path, status) to standard output; never a cookie, \
            token or password. SIGINT or SIGTERM stops it cleanly. Routes: docs/DEMO.md.
            """
    )

    @OptionGroup var options: DemoSiteOptions

    func run() async throws {
        let configuration: DemoSite.Configuration
        do {
            configuration = try options.makeConfiguration(environment: ProcessInfo.processInfo.environment)
        } catch {
            throw ValidationError(error.description)
        }
        let portFile = options.portFile
        defer { if let portFile { PortFile.remove(portFile) } }
        do {
            try await DemoSite.serve(
                configuration: configuration,
                requestLog: { entry in StandardOutput.writeLine("\(Self.timestamp()) \(entry)") },
                onServerRunning: { port in Self.announce(configuration: configuration, port: port, portFile: portFile) },
                onProviderRunning: { port in
                    StandardOutput.writeLine("\(Self.timestamp()) demo-site identity provider listening on http://\(configuration.idpHost ?? ""):\(port)")
                }
            )
        } catch {
            StandardError.writeLine("demo-site: could not serve on \(configuration.host):\(configuration.port): \(error)")
            throw ExitCode.failure
        }
    }

    private static func announce(configuration: DemoSite.Configuration, port: Int, portFile: String?) {
        let mode = configuration.sliding ? "sliding" : "fixed"
        let authority = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        StandardOutput.writeLine(
            "\(timestamp()) demo-site listening on http://\(authority):\(port) "
                + "(main host \(configuration.mainHost), sso host \(configuration.ssoHost), "
                + "session max age \(configuration.sessionMaxAge) s \(mode), "
                + "TOTP \(configuration.totpSecret == nil ? "off" : "on"))"
        )
        guard let portFile else { return }
        do {
            try PortFile.write(port, to: portFile)
        } catch {
            StandardError.writeLine("demo-site: cannot write --port-file \(portFile): \(error.localizedDescription)")
        }
    }

    private static func timestamp() -> String {
        Date().formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC")!))
    }
}
