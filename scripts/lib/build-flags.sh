# shellcheck shell=bash
# The flags scripts/run, scripts/test and Fuzz/run build the debug products and tests with, in .build: no debug
# information (what a debugger reads; running and testing do not), about a tenth less compile time. All three use
# the same flags so that each reuses what the others compiled; a plain `swift build` (with debug information, for
# lldb) compiles everything again, and so does one of these after it. (The index store stays: SwiftPM's test
# discovery reads it.)
SWIFT_BUILD_FLAGS=(-Xswiftc -gnone -Xcc -g0)
