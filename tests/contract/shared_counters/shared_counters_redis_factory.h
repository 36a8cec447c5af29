#pragma once

// The Redis shared counters behind the contract suites. The server comes from
// STARLING_TEST_REDIS (host:port); without it the tests skip. Each instance gets its own key
// prefix and its keys are deleted when it is destroyed (helpers shared with the device-inbox
// suite).

#include "adapters/redis/redis_shared_counters.h"

#include "contract/device_inbox/device_inbox_redis_factory.h"
#include "contract/shared_counters/shared_counters_contract.h"

namespace starling::testing {

inline adapters::redis::redis_counters_config test_counters_config(const redis_address& address,
                                                                   const std::string& prefix) {
    adapters::redis::redis_counters_config config;
    config.host = address.host;
    config.port = address.port;
    config.connect_timeout = std::chrono::seconds(5);
    config.command_timeout = std::chrono::seconds(30);
    config.key_prefix = prefix;
    return config;
}

class redis_counters_factory final : public shared_counters_factory {
  public:
    std::string name() const override { return "redis"; }

    std::shared_ptr<shared_counters> create(const clock& clk) override {
        const auto address = test_redis_address();
        if (!address) {
            skip();
            return nullptr;
        }
        const auto prefix = unique_key_prefix();
        auto counters = adapters::redis::open_redis_shared_counters(
            test_counters_config(*address, prefix), clk);
        if (!counters) {
            ADD_FAILURE() << "open: " << counters.error().message();
            return nullptr;
        }
        return std::shared_ptr<shared_counters>(counters->release(),
                                                [address = *address, prefix](shared_counters* p) {
                                                    delete p;
                                                    delete_keys_with_prefix(address, prefix);
                                                });
    }

  private:
    static void skip() { GTEST_SKIP() << no_redis_message; }
};

}  // namespace starling::testing
