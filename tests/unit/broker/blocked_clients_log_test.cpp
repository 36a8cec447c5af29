#include "broker/blocked_clients_log.h"

#include "adapters/embedded/message_log.h"
#include "auth/blocked_clients.h"

#include "support/temp_dir.h"
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>

namespace starling::broker {
namespace {

using auth::block_type;
using auth::blocked_entry;
using auth::regex_target;

constexpr std::int64_t now = 1'700'000'000'000;
constexpr auto timeout = std::chrono::seconds(30);

class blocked_clients_log_test : public ::testing::Test {
  protected:
    void SetUp() override { open(); }

    void open() {
        adapters::embedded::embedded_log_config cfg;
        cfg.data_dir = dir_.path();
        log_ = std::move(adapters::embedded::embedded_message_log::open(cfg).value());
        blocked_ = std::make_unique<auth::blocked_clients>();
        store_ = std::make_unique<blocked_clients_log>(*log_, "starling.client.blocked", *blocked_);
        ASSERT_TRUE(store_->create_topic());
    }

    // A node restart: a fresh log handle on the same directory and an empty list.
    void restart() {
        store_.reset();
        blocked_.reset();
        log_.reset();
        open();
    }

    status put(blocked_entry e) {
        std::promise<status> done;
        store_->put(std::move(e), [&](status st) { done.set_value(st); });
        return done.get_future().get();
    }

    result<bool> erase(block_type type, const std::string& value) {
        std::promise<result<bool>> done;
        store_->erase(type, value, [&](result<bool> r) { done.set_value(r); });
        return done.get_future().get();
    }

    std::size_t load() {
        auto loaded = store_->load("test-" + std::to_string(++loads_), timeout, now);
        EXPECT_TRUE(loaded) << loaded.error().message();
        return loaded ? loaded.value() : 0;
    }

    testing::temp_dir dir_;
    std::unique_ptr<adapters::embedded::embedded_message_log> log_;
    std::unique_ptr<auth::blocked_clients> blocked_;
    std::unique_ptr<blocked_clients_log> store_;
    int loads_ = 0;
};

TEST_F(blocked_clients_log_test, put_applies_after_the_log_acknowledged) {
    ASSERT_TRUE(put({block_type::client_id, "dev-1", 0, "stolen"}));
    EXPECT_EQ(blocked_->check("dev-1", std::nullopt, "", now), "stolen");
}

TEST_F(blocked_clients_log_test, rules_survive_a_restart) {
    ASSERT_TRUE(put({block_type::client_id, "dev-1"}));
    ASSERT_TRUE(put({block_type::ip_address, "2001:DB8::7"}));
    ASSERT_TRUE(put({block_type::regex, "guest\\d+", 0, "guests", regex_target::username}));
    ASSERT_TRUE(put({block_type::username, "gone"}));
    ASSERT_TRUE(erase(block_type::username, "gone").value());
    restart();
    EXPECT_EQ(blocked_->size(), 0U);
    EXPECT_EQ(load(), 3U);
    EXPECT_TRUE(blocked_->check("dev-1", std::nullopt, "", now));
    EXPECT_TRUE(blocked_->check("c", std::nullopt, "2001:db8::7", now));
    EXPECT_EQ(blocked_->check("c", "guest12", "", now), "guests");
    EXPECT_FALSE(blocked_->check("c", "gone", "", now));
}

TEST_F(blocked_clients_log_test, expired_rules_are_not_loaded) {
    ASSERT_TRUE(put({block_type::client_id, "old", now - 1}));
    ASSERT_TRUE(put({block_type::client_id, "new", now + 60'000}));
    restart();
    EXPECT_EQ(load(), 1U);
    EXPECT_EQ(blocked_->size(), 1U);
}

TEST_F(blocked_clients_log_test, invalid_entry_is_refused_without_writing) {
    auto st = put({block_type::regex, "a("});
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), auth::blocked_error::invalid_regex);
    restart();
    EXPECT_EQ(load(), 0U);
}

TEST_F(blocked_clients_log_test, erase_of_an_unknown_rule_reports_false) {
    auto removed = erase(block_type::client_id, "nobody");
    ASSERT_TRUE(removed);
    EXPECT_FALSE(removed.value());
}

TEST(blocked_clients_log_codec, round_trip_and_keys) {
    const blocked_entry e{block_type::regex, "x.*", 42, "why", regex_target::ip_address};
    auto back = blocked_clients_log::decode(blocked_clients_log::encode(e));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, e);
    EXPECT_EQ(blocked_clients_log::record_key(block_type::ip_address, "2001:DB8:0::1"),
              "IP_ADDRESS|2001:db8::1");
    EXPECT_EQ(blocked_clients_log::record_key(block_type::client_id, "a|b"), "CLIENT_ID|a|b");
    EXPECT_FALSE(blocked_clients_log::decode(""));
    EXPECT_FALSE(blocked_clients_log::decode("\xff\xff garbage"));
}

TEST(blocked_clients_log_codec, tombstone_key_with_a_bar_in_the_value) {
    auth::blocked_clients list;
    ASSERT_TRUE(list.add({block_type::client_id, "a|b"}));
    // apply_record only changes the list; the log is there because the store needs one.
    testing::temp_dir dir;
    adapters::embedded::embedded_log_config cfg;
    cfg.data_dir = dir.path();
    auto log = adapters::embedded::embedded_message_log::open(cfg).value();
    blocked_clients_log store(*log, "t", list);
    EXPECT_TRUE(store.apply_record("CLIENT_ID|a|b", ""));
    EXPECT_EQ(list.size(), 0U);
    EXPECT_FALSE(store.apply_record("NOPE|x", ""));
    EXPECT_FALSE(store.apply_record("CLIENT_ID|x", "\xff"));
}

}  // namespace
}  // namespace starling::broker
