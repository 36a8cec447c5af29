// The message-log contract against a real Kafka (STARLING_TEST_KAFKA=host:port). Each test gets
// its own topic and group prefix (pid, start time and a counter), so runs and engineers sharing
// the broker never collide; a test's topics are deleted when it ends.

#include "adapters/kafka/kafka_message_log.h"

#include "contract/message_log/message_log_contract.h"
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

namespace starling::testing {

namespace {

using adapters::kafka::kafka_log_config;
using adapters::kafka::kafka_message_log;

std::string bootstrap() {
    const char* env = std::getenv("STARLING_TEST_KAFKA");
    return env != nullptr ? env : "";
}

std::string run_prefix() {
    static const std::string prefix =
        "starling-test-" + std::to_string(::getpid()) + "-" +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
    return prefix;
}

class kafka_log_backend final : public message_log_backend {
  public:
    kafka_log_backend() {
        static std::atomic<int> counter{0};
        prefix_ = run_prefix() + "-" + std::to_string(counter.fetch_add(1)) + ".";
    }

    // The broker is shared: the test's topics go when the test ends (groups expire on their
    // own, after the broker's offsets retention).
    ~kafka_log_backend() override {
        auto log = kafka_message_log::open(config());
        if (!log) {
            return;
        }
        auto topics = (*log)->list_topics(prefix_);
        if (!topics) {
            return;
        }
        for (const auto& topic : *topics) {
            (void)(*log)->delete_topic(topic);
        }
    }
    kafka_log_backend(const kafka_log_backend&) = delete;
    kafka_log_backend& operator=(const kafka_log_backend&) = delete;

    static kafka_log_config config() {
        kafka_log_config config;
        config.bootstrap_servers = bootstrap();
        config.client_id = "starling-contract";
        config.delivery_timeout = std::chrono::seconds(20);
        // Faster group rounds than the production defaults (the tests wait on rebalances).
        config.session_timeout = std::chrono::seconds(6);
        config.heartbeat_interval = std::chrono::milliseconds(500);
        config.admin_timeout = std::chrono::seconds(20);
        return config;
    }

    std::unique_ptr<message_log> open() override {
        auto log = kafka_message_log::open(config());
        if (!log) {
            ADD_FAILURE() << "open: " << log.error().message();
            return nullptr;
        }
        return std::move(*log);
    }

    std::string prefix() const override { return prefix_; }

  private:
    std::string prefix_;
};

class kafka_log_factory final : public message_log_factory {
  public:
    std::string name() const override { return "kafka"; }
    std::unique_ptr<message_log_backend> new_backend() override {
        return std::make_unique<kafka_log_backend>();
    }
    std::string unavailable() const override {
        if (!bootstrap().empty()) {
            return {};
        }
        return "STARLING_TEST_KAFKA is not set: start Kafka with `scripts/services.sh up kafka` "
               "and run with STARLING_TEST_KAFKA=127.0.0.1:9092";
    }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(kafka, message_log_contract,
                         ::testing::Values(std::make_shared<kafka_log_factory>()),
                         factory_name<message_log_factory>);

}  // namespace starling::testing
