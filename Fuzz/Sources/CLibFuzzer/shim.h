#ifndef SESSIONKEEPER_CLIBFUZZER_SHIM_H
#define SESSIONKEEPER_CLIBFUZZER_SHIM_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's driver as a library call (llvm compiler-rt, lib/fuzzer/FuzzerInterface.h, LLVM 12 and later),
/// from the toolchain's libclang_rt.fuzzer_no_main, which Fuzz/run names to the linker. The fuzz targets keep
/// their own `main` (SwiftPM links every executable through it) and hand libFuzzer the arguments and the
/// function it calls once per input.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));

#endif
