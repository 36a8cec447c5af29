#pragma once

// Three invariant checks, chosen by risk (docs/style.md rule 6):
//   STARLING_ASSERT(cond)  debug-only: provable invariants; compiled out in release.
//   STARLING_PANIC(msg)    always on: states the process cannot continue from; aborts.
//   STARLING_BUG(cond,msg) always on: logs and counts a bug in release, keeps running.
// Never use any of them on what the network or the environment supplies.

#include <atomic>
#include <cstdint>
#include <string_view>

namespace starling::base {

[[noreturn]] void panic(std::string_view message, const char* file, int line);
void report_bug(std::string_view message, const char* file, int line);
// How many STARLING_BUG checks fired since start (exported as a metric).
std::uint64_t bugs_reported();

}  // namespace starling::base

#ifdef NDEBUG
#define STARLING_ASSERT(cond) ((void)0)
#else
#define STARLING_ASSERT(cond) \
    ((cond) ? (void)0 : ::starling::base::panic("assertion failed: " #cond, __FILE__, __LINE__))
#endif

#define STARLING_PANIC(msg) ::starling::base::panic((msg), __FILE__, __LINE__)

#define STARLING_BUG(cond, msg) \
    ((cond) ? (void)0 : ::starling::base::report_bug((msg), __FILE__, __LINE__))
