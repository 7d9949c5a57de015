import Foundation
import TestSupport
import Testing

/// libcurl and libxml2 are bound on first use (Sources/CLazyLibrary/lazy_library.h). Where the dynamic loader
/// cannot find one, the command that needs it says which library, which Debian package installs it and the
/// loader's reason, and fails; it does not crash. Each case runs `sessionkeeper login demo` in a mount namespace
/// where the library's file is hidden (Fixtures/without_library.sh; root only, as the tests run here and in CI).
@Suite(.enabled(if: getuid() == 0, "hiding a library in a mount namespace needs root"))
struct LazyLibraryTests {
    @Test(arguments: [
        // Without libcurl, the login cannot send its first request: the flow fails (exit 1).
        (soname: "libcurl.so.4", package: "libcurl4", exit: Int32(1)),
        // Without libxml2, the site file's XPath cannot be checked when the configuration loads (exit 2).
        (soname: "libxml2.so.2", package: "libxml2", exit: Int32(2)),
    ])
    func aLibraryThatCannotBeLoadedIsNamedWithItsPackage(soname: String, package: String, exit: Int32) async throws {
        try await LoginCLIWorld.with { world in
            let script = try #require(Bundle.module.url(forResource: "without_library", withExtension: "sh", subdirectory: "Fixtures")).path
            let binary = try #require(CLIRunner.executable).path
            let scratch = world.folder.path("overlay")
            let result = try await runProgram(
                "/bin/sh", [script, soname, scratch, binary, "login", "demo", "--config", world.configPath],
                environment: ["PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "HOME": world.folder.path, "DEMO_PASSWORD": LoginCLITests.password],
                directory: world.folder.path)
            let stderr = result.errorText
            #expect(result.status == exit, "exit \(result.status): \(stderr)")
            #expect(stderr.contains("cannot load \(soname) (install Debian's \(package) package)"), "\(stderr)")
            #expect(stderr.contains("\(soname): cannot open shared object file: No such file or directory"), "\(stderr)")
            #expect(!stderr.contains(LoginCLITests.password))
            // Outside the namespace the library is where it was: the same login succeeds.
            let login = try await world.login([])
            #expect(login.status == 0, "\(login.stderr)")
        }
    }
}
