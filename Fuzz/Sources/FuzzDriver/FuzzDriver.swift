internal import CLibFuzzer

#if canImport(Glibc)
import Glibc
#endif

/// What libFuzzer calls once per input: the input's bytes (`nil` only when empty) and their count; returns 0.
public typealias FuzzTarget = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// Runs libFuzzer on the process's command line (its flags, corpus folders, crash inputs to replay) with
/// `target` as the function under test, and exits with libFuzzer's status.
public func runFuzzer(_ target: FuzzTarget) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, target))
}
