#ifndef CPSL_SHIM_H
#define CPSL_SHIM_H
// libpsl: the Public Suffix List (RFC 6265 section 5.3 step 5 asks user agents to reject public suffixes).
#include <libpsl.h>
#endif
