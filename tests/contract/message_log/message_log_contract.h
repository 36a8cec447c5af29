#pragma once

// Contract suite of the message-log port (include/starling/message_log.h). Every adapter passes
// the same tests. An adapter adds one test file that defines a message_log_factory and
// instantiates the suite with it, e.g. for Kafka:
//
//   INSTANTIATE_TEST_SUITE_P(kafka, message_log_contract,
//                            ::testing::Values(std::make_shared<kafka_log_factory>()),
//                            starling::testing::factory_name<message_log_factory>);
//
// and links the object library starling_message_log_contract (tests/contract/message_log/
// CMakeLists.txt). The test bodies live in message_log_contract.cpp.
//
// Tests never sleep to synchronize: they wait on callbacks (await), on flush(), or poll with a
// deadline. Waiting for a group assignment polls too, because Kafka consumers make progress on
// rebalances only inside poll().

#include "starling/message_log.h"

#include "contract/device_inbox/contract_support.h"
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace starling::testing {

// One test's storage: a temporary directory (embedded), a name prefix on a shared cluster
// (Kafka).
class message_log_backend {
  public:
    virtual ~message_log_backend() = default;
    // Opens a log over this storage. Called again after the previous log was destroyed, it is
    // a restart: everything acknowledged and committed before must still be there.
    virtual std::unique_ptr<message_log> open() = 0;
    // Prefix for topic and group names, so tests sharing a cluster do not collide.
    virtual std::string prefix() const { return {}; }
    // Compacts every compacted topic now. False when the adapter cannot be told to (Kafka's
    // log cleaner runs on its own schedule): the compaction test then checks only what holds
    // either way.
    virtual bool compact_now(message_log& log) {
        (void)log;
        return false;
    }
};

class message_log_factory {
  public:
    virtual ~message_log_factory() = default;
    virtual std::string name() const = 0;
    virtual std::unique_ptr<message_log_backend> new_backend() = 0;
    // Non-empty when the adapter's backing service is not configured for this run (Kafka
    // without STARLING_TEST_KAFKA): every test then skips with this text.
    virtual std::string unavailable() const { return {}; }
};

using message_log_factory_ptr = std::shared_ptr<message_log_factory>;

class message_log_contract : public ::testing::TestWithParam<message_log_factory_ptr> {
  protected:
    static constexpr std::chrono::seconds deadline{30};

    void SetUp() override;
    void TearDown() override;

    // Destroys the log and opens it again over the same storage.
    void restart();

    std::string name(std::string_view base) const { return backend_->prefix() + std::string(base); }
    void create(const std::string& topic, std::int32_t partitions, bool compacted = false);

    result<produce_ack> produce_sync(const std::string& topic, std::string key, std::string value,
                                     std::vector<log_header> headers = {},
                                     std::int32_t partition = -1);
    // Produces every (key, value) without waiting in between, then flushes; returns the acks in
    // produce order (the test fails if any produce failed).
    std::vector<produce_ack> produce_all(
        const std::string& topic, const std::vector<std::pair<std::string, std::string>>& kv);

    std::unique_ptr<log_consumer> subscribe(const std::string& group,
                                            std::vector<std::string> topics,
                                            offset_reset reset = offset_reset::earliest,
                                            std::string instance_id = {});
    std::unique_ptr<log_consumer> assign(const std::string& group,
                                         std::vector<topic_partition> partitions,
                                         offset_reset reset = offset_reset::earliest);

    // Polls until `count` records arrived or the deadline passed; returns what arrived.
    static std::vector<log_record> poll_n(log_consumer& consumer, std::size_t count,
                                          std::chrono::milliseconds limit = deadline);
    // Polls every consumer (short timeouts) until `done()` holds or the deadline passed.
    static bool poll_until(const std::vector<log_consumer*>& consumers,
                           const std::function<bool()>& done,
                           std::chrono::milliseconds limit = deadline);

    std::unique_ptr<message_log_backend> backend_;
    std::unique_ptr<message_log> log_;
};

}  // namespace starling::testing
