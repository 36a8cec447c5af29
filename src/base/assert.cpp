#include "base/assert.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

namespace starling::base {
namespace {
std::atomic<std::uint64_t> bug_count{0};
}  // namespace

void panic(std::string_view message, const char* file, int line) {
    spdlog::critical("panic at {}:{}: {}", file, line, message);
    spdlog::shutdown();
    std::abort();
}

void report_bug(std::string_view message, const char* file, int line) {
    bug_count.fetch_add(1, std::memory_order_relaxed);
    spdlog::error("bug at {}:{}: {}", file, line, message);
}

std::uint64_t bugs_reported() { return bug_count.load(std::memory_order_relaxed); }

}  // namespace starling::base
