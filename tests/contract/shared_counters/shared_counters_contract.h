#pragma once

// Contract suite of the shared-counters port (include/starling/shared_counters.h), shared by
// the embedded and Redis adapters: an adapter's test file defines a shared_counters_factory
// and instantiates shared_counters_contract (label contract) and shared_counters_concurrency
// (labels contract, concurrency) with it. Bodies: shared_counters_contract.cpp,
// shared_counters_concurrency.cpp, built as object libraries.
//
// Time: buckets refill by the injected clock, so the tests move a manual_clock; an adapter
// whose refill reads another clock cannot pass these tests.

#include "starling/shared_counters.h"

#include "contract/device_inbox/contract_support.h"
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace starling::testing {

class shared_counters_factory {
  public:
    virtual ~shared_counters_factory() = default;
    virtual std::string name() const = 0;
    // Counters with no keys, reading time from `clk` (which outlives them).
    virtual std::shared_ptr<shared_counters> create(const clock& clk) = 0;
};

using shared_counters_factory_ptr = std::shared_ptr<shared_counters_factory>;

// Test names show the adapter ("# GetParam() = embedded"), not a pointer that differs per run.
inline void PrintTo(const shared_counters_factory_ptr& factory, std::ostream* os) {
    *os << factory->name();
}

class shared_counters_test_base : public ::testing::TestWithParam<shared_counters_factory_ptr> {
  protected:
    void SetUp() override {
        counters_ = GetParam()->create(clock_);
        if (IsSkipped()) {
            return;  // the factory skipped (no server configured): GTEST_SKIP in a helper
        }
        ASSERT_TRUE(counters_);
    }

    result<std::int64_t> add(const std::string& key, std::int64_t delta) {
        return await<result<std::int64_t>>(
            [&](auto done) { counters_->add(key, delta, std::move(done)); });
    }
    result<std::int64_t> get(const std::string& key) {
        return await<result<std::int64_t>>(
            [&](auto done) { counters_->get(key, std::move(done)); });
    }
    result<std::int64_t> consume(const std::string& key, const std::vector<bandwidth>& limits,
                                 std::int64_t tokens) {
        return await<result<std::int64_t>>(
            [&](auto done) { counters_->try_consume(key, limits, tokens, std::move(done)); });
    }
    result<std::int64_t> refund(const std::string& key, const std::vector<bandwidth>& limits,
                                std::int64_t tokens) {
        return await<result<std::int64_t>>(
            [&](auto done) { counters_->refund(key, limits, tokens, std::move(done)); });
    }
    // Tokens granted, or -1 (with a test failure) if the call failed.
    std::int64_t granted(const std::string& key, const std::vector<bandwidth>& limits,
                         std::int64_t tokens) {
        auto r = consume(key, limits, tokens);
        EXPECT_TRUE(r) << r.error().message();
        return r ? *r : -1;
    }

    manual_clock clock_;
    std::shared_ptr<shared_counters> counters_;
};

class shared_counters_contract : public shared_counters_test_base {};
class shared_counters_concurrency : public shared_counters_test_base {};

}  // namespace starling::testing
