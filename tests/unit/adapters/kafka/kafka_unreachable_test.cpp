// Lost Kafka at adapter level: every produce fails within the configured delivery bound —
// never a success, never a callback on the caller's thread — and healthy() turns false. The
// "broker" is a loopback port that is bound but not listening, so connections are refused and
// no other process can take the port while the test runs.

#include "adapters/kafka/kafka_message_log.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

namespace starling::adapters::kafka {

namespace {

class refused_port {
  public:
    refused_port() {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            ADD_FAILURE() << "bind";
            return;
        }
        socklen_t len = sizeof addr;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
    }
    ~refused_port() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    refused_port(const refused_port&) = delete;
    refused_port& operator=(const refused_port&) = delete;

    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  private:
    int fd_ = -1;
    unsigned port_ = 0;
};

struct outcome {
    result<produce_ack> ack;
    std::thread::id thread;
    std::chrono::steady_clock::time_point at;
    status flush_inside;  // flush() called from the callback
};

TEST(kafka_unreachable, produce_fails_within_the_delivery_timeout_and_health_goes_down) {
    refused_port nothing;
    kafka_log_config config;
    config.bootstrap_servers = nothing.address();
    config.delivery_timeout = std::chrono::milliseconds(1500);
    auto log = kafka_message_log::open(config);
    ASSERT_TRUE(log) << log.error().message();

    std::promise<outcome> promise;
    auto future = promise.get_future();
    const auto start = std::chrono::steady_clock::now();
    auto* raw = log->get();
    raw->produce("starling.msg.all", "topic/a", "payload", {}, [&](result<produce_ack> ack) {
        promise.set_value({ack, std::this_thread::get_id(), std::chrono::steady_clock::now(),
                           raw->flush(std::chrono::seconds(5))});
    });
    ASSERT_EQ(future.wait_for(std::chrono::seconds(30)), std::future_status::ready);
    const auto got = future.get();
    ASSERT_FALSE(got.ack) << "a produce to no broker reported success";
    EXPECT_EQ(got.ack.error(), std::errc::timed_out) << got.ack.error().message();
    EXPECT_NE(got.thread, std::this_thread::get_id());
    // The callback's own thread cannot wait for callbacks: flush() says so instead of hanging.
    ASSERT_FALSE(got.flush_inside);
    EXPECT_EQ(got.flush_inside.error(), std::errc::resource_deadlock_would_occur);
    // librdkafka checks message timeouts about once a second: allow that much past the bound.
    EXPECT_LE(got.at - start, config.delivery_timeout + std::chrono::milliseconds(1500));
    // "All brokers down" is reported as soon as the connection is refused, long before the
    // message times out.
    EXPECT_FALSE((*log)->healthy());
    EXPECT_TRUE((*log)->flush(std::chrono::seconds(1)));
}

TEST(kafka_unreachable, admin_calls_fail_after_the_admin_timeout) {
    refused_port nothing;
    kafka_log_config config;
    config.bootstrap_servers = nothing.address();
    config.admin_timeout = std::chrono::milliseconds(1000);
    auto log = kafka_message_log::open(config);
    ASSERT_TRUE(log) << log.error().message();
    const auto start = std::chrono::steady_clock::now();
    auto created = (*log)->create_topic({.name = "starling.msg.all", .partitions = 16});
    EXPECT_FALSE(created);
    EXPECT_LE(std::chrono::steady_clock::now() - start, std::chrono::seconds(8));
    EXPECT_FALSE((*log)->partition_count("starling.msg.all"));
}

TEST(kafka_unreachable, a_bad_configuration_fails_open) {
    kafka_log_config config;
    config.acks = "1";
    config.enable_idempotence = true;
    auto log = kafka_message_log::open(config);
    ASSERT_FALSE(log);
    EXPECT_EQ(log.error(), std::errc::invalid_argument);

    config = {};
    config.producer_properties = {{"linger.ms.typo", "1"}};
    EXPECT_FALSE(kafka_message_log::open(config));
}

}  // namespace

}  // namespace starling::adapters::kafka
