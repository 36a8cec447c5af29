#pragma once

// The Redis inbox behind the contract suites. The server comes from STARLING_TEST_REDIS
// (host:port; CI sets it, `scripts/services.sh up redis` starts one on 127.0.0.1:6379); without
// it the tests skip. Each inbox gets its own key prefix (pid, time, counter), so parallel runs
// and other users of the server never collide, and its keys are deleted when it is destroyed.

#include "adapters/redis/redis_connection.h"
#include "adapters/redis/redis_device_inbox.h"

#include "contract/device_inbox/contract_support.h"
#include "contract/device_inbox/device_inbox_contract.h"
#include <hiredis/hiredis.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace starling::testing {

struct redis_address {
    std::string host;
    std::uint16_t port = 0;
};

// STARLING_TEST_REDIS as host:port, or nullopt when unset or malformed.
inline std::optional<redis_address> test_redis_address() {
    const char* env = std::getenv("STARLING_TEST_REDIS");
    if (env == nullptr) {
        return std::nullopt;
    }
    const std::string text(env);
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        return std::nullopt;
    }
    const int port = std::atoi(text.c_str() + colon + 1);
    if (port <= 0 || port > 65535) {
        return std::nullopt;
    }
    return redis_address{text.substr(0, colon), static_cast<std::uint16_t>(port)};
}

inline constexpr const char* no_redis_message =
    "STARLING_TEST_REDIS is not set (host:port): run `scripts/services.sh up redis` and "
    "export STARLING_TEST_REDIS=127.0.0.1:6379";

// A key prefix no other run or inbox uses.
inline std::string unique_key_prefix() {
    static std::atomic<int> counter{0};
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    return "starling-test:" + std::to_string(::getpid()) + ":" +
           std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) +
           ":" + std::to_string(counter++) + ":";
}

// A plain connection for test assertions and cleanup (PTTL, SCRIPT FLUSH, SCAN + DEL).
inline std::unique_ptr<adapters::redis::redis_connection> test_connection(
    const redis_address& address) {
    auto conn = std::make_unique<adapters::redis::redis_connection>(
        adapters::redis::redis_endpoint{.host = address.host,
                                        .port = address.port,
                                        .connect_timeout = std::chrono::seconds(5),
                                        .command_timeout = std::chrono::seconds(30)});
    if (!conn->connect()) {
        return nullptr;
    }
    return conn;
}

// Deletes every key that starts with `prefix`.
inline void delete_keys_with_prefix(const redis_address& address, const std::string& prefix) {
    auto conn = test_connection(address);
    if (!conn) {
        return;
    }
    const std::string pattern = prefix + "*";
    std::string cursor = "0";
    do {
        const std::string_view scan[] = {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"};
        auto reply = conn->command(scan);
        if (!reply || (*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements != 2) {
            return;
        }
        cursor = std::string(adapters::redis::reply_text(*(*reply)->element[0]));
        const redisReply& keys = *(*reply)->element[1];
        for (std::size_t i = 0; i < keys.elements; ++i) {
            const std::string_view del[] = {"DEL", adapters::redis::reply_text(*keys.element[i])};
            (void)conn->command(del);
        }
    } while (cursor != "0");
}

inline adapters::redis::redis_inbox_config test_inbox_config(const redis_address& address,
                                                             const inbox_settings& settings,
                                                             const std::string& prefix) {
    adapters::redis::redis_inbox_config config;
    config.host = address.host;
    config.port = address.port;
    config.connect_timeout = std::chrono::seconds(5);
    config.command_timeout = std::chrono::seconds(30);
    config.max_messages = settings.max_messages;
    config.default_ttl = std::chrono::milliseconds(settings.default_ttl_ms);
    config.key_prefix = prefix;
    return config;
}

class redis_inbox_factory final : public device_inbox_factory {
  public:
    std::string name() const override { return "redis"; }

    std::shared_ptr<device_inbox> create(const inbox_settings& settings,
                                         const clock& clk) override {
        const auto address = test_redis_address();
        if (!address) {
            skip();
            return nullptr;
        }
        const auto prefix = unique_key_prefix();
        auto inbox = adapters::redis::open_redis_device_inbox(
            test_inbox_config(*address, settings, prefix), clk);
        if (!inbox) {
            ADD_FAILURE() << "open: " << inbox.error().message();
            return nullptr;
        }
        // The deleter stops the inbox, then removes every key it created.
        return std::shared_ptr<device_inbox>(inbox->release(),
                                             [address = *address, prefix](device_inbox* p) {
                                                 delete p;
                                                 delete_keys_with_prefix(address, prefix);
                                             });
    }

  private:
    static void skip() { GTEST_SKIP() << no_redis_message; }
};

}  // namespace starling::testing
