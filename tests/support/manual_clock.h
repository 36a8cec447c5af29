#pragma once

// manual_clock: a clock (include/starling/clock.h) that moves only when a test says so, for
// timers and expiry instants checked without waiting on the wall clock. It starts at the real
// time (so epoch values stay plausible) and advance() moves both readings together.
//
// Whoever owns timers reading it must be told after each move (actor::timer_service::poke()).
// Thread-safe: the node's threads read it while the test thread moves it.

#include "starling/clock.h"

#include <atomic>
#include <chrono>

namespace starling::testing {

class manual_clock final : public clock {
  public:
    steady_point steady_now() const override {
        return steady_start_ + std::chrono::nanoseconds(offset_ns_.load(std::memory_order_acquire));
    }
    system_point system_now() const override {
        return system_start_ +
               std::chrono::duration_cast<system_point::duration>(
                   std::chrono::nanoseconds(offset_ns_.load(std::memory_order_acquire)));
    }
    void advance(std::chrono::nanoseconds by) {
        offset_ns_.fetch_add(by.count(), std::memory_order_acq_rel);
    }

  private:
    const steady_point steady_start_ = std::chrono::steady_clock::now();
    const system_point system_start_ = std::chrono::system_clock::now();
    std::atomic<std::int64_t> offset_ns_{0};
};

}  // namespace starling::testing
