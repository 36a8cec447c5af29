// status_uplink on the embedded log: one process's owned statuses reach another process's
// latest(), a report older than three of its writer's periods is stale (a clock the test moves),
// a newer report replaces an older one, a tombstone removes it, and unreadable values are
// refused.

#include "integration/status_uplink.h"

#include "adapters/embedded/message_log.h"

#include "support/temp_dir.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace starling::integration {
namespace {

using namespace std::chrono_literals;

constexpr auto period = 50ms;
constexpr const char* topic = "starling.ie.uplink";

class status_uplink_test : public ::testing::Test {
  protected:
    void SetUp() override {
        adapters::embedded::embedded_log_config cfg;
        cfg.data_dir = dir_.path();
        log_ = std::move(adapters::embedded::embedded_message_log::open(cfg).value());
    }

    std::unique_ptr<status_uplink> uplink(const std::string& reporter) {
        return std::make_unique<status_uplink>(
            *log_, topic, "starling." + reporter + "-ie-uplink", reporter,
            [this, reporter] {
                std::lock_guard lock(mutex_);
                return owned_[reporter];
            },
            period, [this] { return now_ms_.load(); });
    }

    void own(const std::string& reporter, const std::string& id, executor_status st) {
        st.polled = true;
        st.owner = true;
        std::lock_guard lock(mutex_);
        owned_[reporter] = {{id, std::move(st)}};
    }

    template <class Pred>
    static bool eventually(Pred pred) {
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while (std::chrono::steady_clock::now() < deadline) {
            if (pred()) {
                return true;
            }
            std::this_thread::sleep_for(5ms);  // polling what another thread reads
        }
        return false;
    }

    void produce(std::string key, std::string value) {
        std::promise<bool> written;
        log_->produce(topic, std::move(key), std::move(value), {},
                      [&written](result<produce_ack> r) { written.set_value(r.has_value()); });
        ASSERT_TRUE(written.get_future().get());
    }

    testing::temp_dir dir_;
    std::unique_ptr<message_log> log_;
    std::atomic<std::int64_t> now_ms_{1'700'000'000'000};
    std::mutex mutex_;
    std::map<std::string, std::vector<std::pair<std::string, executor_status>>> owned_;
};

TEST(status_encoding, round_trips_and_refuses_what_it_cannot_read) {
    reported_status s{.status = {.polled = true,
                                 .owner = true,
                                 .sent = 12,
                                 .failed = 1,
                                 .retried = 4,
                                 .lag = 7,
                                 .failing = true,
                                 .last_error = "HTTP 503",
                                 .last_error_ms = 99},
                      .reporter = "ie-1",
                      .reported_at_ms = 1234,
                      .period_ms = 5000};
    auto back = decode_status(encode_status(s));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->reporter, "ie-1");
    EXPECT_EQ(back->reported_at_ms, 1234);
    EXPECT_EQ(back->period_ms, 5000);
    EXPECT_EQ(back->status.sent, 12U);
    EXPECT_EQ(back->status.failed, 1U);
    EXPECT_EQ(back->status.retried, 4U);
    EXPECT_EQ(back->status.lag, 7);
    EXPECT_TRUE(back->status.failing);
    EXPECT_TRUE(back->status.owner);
    EXPECT_EQ(back->status.last_error, "HTTP 503");
    EXPECT_EQ(back->status.last_error_ms, 99);

    EXPECT_FALSE(decode_status("not json"));
    EXPECT_FALSE(decode_status("[]"));
    EXPECT_FALSE(decode_status(R"({"reporter":"x"})"));
    auto no_period = nlohmann::json::parse(encode_status(s));
    no_period["periodMs"] = 0;
    EXPECT_FALSE(decode_status(no_period.dump()));
    auto wrong_type = nlohmann::json::parse(encode_status(s));
    wrong_type["sent"] = "twelve";
    EXPECT_FALSE(decode_status(wrong_type.dump()));
}

TEST_F(status_uplink_test, the_owners_report_reaches_the_other_process_until_it_goes_stale) {
    auto ie = uplink("ie-1");
    auto broker = uplink("node-a");
    own("ie-1", "int-1", {.sent = 5, .lag = 2});
    ASSERT_TRUE(ie->start());
    ASSERT_TRUE(broker->start());

    ASSERT_TRUE(eventually([&] {
        auto r = broker->latest("int-1");
        return r && r->status.sent == 5;
    }));
    auto r = broker->latest("int-1");
    EXPECT_EQ(r->reporter, "ie-1");
    EXPECT_EQ(r->status.lag, 2);
    EXPECT_TRUE(r->status.owner);
    EXPECT_FALSE(broker->latest("int-2"));

    // Newer reports replace older ones.
    own("ie-1", "int-1", {.sent = 9, .failing = true, .last_error = "HTTP 500"});
    ASSERT_TRUE(eventually([&] {
        auto n = broker->latest("int-1");
        return n && n->status.sent == 9 && n->status.failing;
    }));

    // The owner stops reporting (it stopped, or lost the partition): three periods later the
    // report is stale.
    ie->stop();
    const auto last = broker->latest("int-1")->reported_at_ms;
    now_ms_.store(last + 3 * period.count());
    EXPECT_TRUE(broker->latest("int-1"));
    now_ms_.store(last + 3 * period.count() + 1);
    EXPECT_FALSE(broker->latest("int-1"));
    broker->stop();
}

TEST_F(status_uplink_test, a_process_started_later_reads_the_latest_reports_and_tombstones) {
    auto ie = uplink("ie-1");
    own("ie-1", "int-1", {.sent = 3});
    ASSERT_TRUE(ie->start());
    auto first = uplink("node-a");
    ASSERT_TRUE(first->start());
    ASSERT_TRUE(eventually([&] { return first->latest("int-1").has_value(); }));
    ie->stop();
    first->stop();

    // An older report written after a newer one (two writers racing) does not win.
    auto stale = decode_status(encode_status(*first->latest("int-1")));
    stale->reported_at_ms -= 10;
    stale->status.sent = 1;
    produce("int-1", encode_status(*stale));
    produce("int-2", "garbage");  // logged and ignored
    auto marker = *stale;
    marker.reported_at_ms += 10;
    produce("int-3", encode_status(marker));  // written last: once it is read, all the rest was
    auto late = uplink("node-b");
    ASSERT_TRUE(late->start());
    ASSERT_TRUE(eventually([&] { return late->latest("int-3").has_value(); }));
    EXPECT_EQ(late->latest("int-1")->status.sent, 3U);
    EXPECT_FALSE(late->latest("int-2"));

    produce("int-1", "");  // a tombstone: the integration's status is gone
    ASSERT_TRUE(eventually([&] { return !late->latest("int-1").has_value(); }));
    late->stop();
}

}  // namespace
}  // namespace starling::integration
