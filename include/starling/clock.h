#pragma once

// Clock port: every timer and expiry in the core reads time through this interface so tests
// can inject a manual clock (docs/style.md rule 11). Two readings: a monotonic one for intervals
// (keep-alive, retries) and wall time for expiry instants that must survive a restart.

#include <chrono>
#include <cstdint>

namespace starling {

class clock {
  public:
    using steady_point = std::chrono::steady_clock::time_point;
    using system_point = std::chrono::system_clock::time_point;

    virtual ~clock() = default;
    virtual steady_point steady_now() const = 0;
    virtual system_point system_now() const = 0;

    // Milliseconds since the Unix epoch; the unit stored in records and on disk.
    std::int64_t epoch_ms() const {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   system_now().time_since_epoch())
            .count();
    }
};

// The real clock. Thread-safe, stateless; one shared instance.
class system_clock final : public clock {
  public:
    steady_point steady_now() const override { return std::chrono::steady_clock::now(); }
    system_point system_now() const override { return std::chrono::system_clock::now(); }
    static const system_clock& instance();
};

}  // namespace starling
