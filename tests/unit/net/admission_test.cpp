#include "net/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace starling::net {
namespace {

using namespace std::chrono_literals;

class manual_clock final : public starling::clock {
  public:
    steady_point steady_now() const override {
        return steady_point(std::chrono::milliseconds(ms_));
    }
    system_point system_now() const override {
        return system_point(std::chrono::milliseconds(ms_));
    }
    void advance(std::chrono::milliseconds by) { ms_ += by.count(); }

  private:
    std::atomic<std::int64_t> ms_{1'000'000};
};

// Descriptor numbers the test sets: `open` descriptors exist, the limit is `limit`.
struct fake_descriptors {
    std::size_t open = 0;
    std::size_t limit = 1024;
    int samples = 0;

    descriptor_source source() {
        return {.open_count =
                    [this] {
                        ++samples;
                        return open;
                    },
                .limit = [this] { return limit; }};
    }
};

class admission_test : public ::testing::Test {
  protected:
    std::shared_ptr<admission_control> make(admission_options options) {
        return admission_control::create(std::move(options), clock_, descriptors_.source());
    }

    manual_clock clock_;
    fake_descriptors descriptors_;
};

TEST_F(admission_test, listener_cap_refuses_until_a_ticket_is_released) {
    auto control = make({});
    auto gate = control->add_gate(2);
    auto other = control->add_gate(0);
    auto a = control->admit(gate, "10.0.0.1:1");
    auto b = control->admit(gate, "10.0.0.2:1");
    ASSERT_TRUE(a.admitted && b.admitted);
    auto c = control->admit(gate, "10.0.0.3:1");
    EXPECT_FALSE(c.admitted);
    EXPECT_EQ(c.refused, refusal::max_connections);
    EXPECT_EQ(gate->current(), 2U);
    // Another listener's cap is its own.
    EXPECT_TRUE(control->admit(other, "10.0.0.3:1").admitted);

    a.admitted.reset();
    EXPECT_EQ(gate->current(), 1U);
    EXPECT_TRUE(control->admit(gate, "10.0.0.3:1").admitted);
}

TEST_F(admission_test, descriptor_reserve_counts_tickets_between_samples) {
    descriptors_.open = 100;  // files, stores, epoll: not tickets
    descriptors_.limit = 110;
    auto control = make({.descriptor_reserve = 5});
    auto gate = control->add_gate(0);
    std::vector<std::unique_ptr<admission_control::ticket>> held;
    // 100 others + 5 tickets + 5 reserve = 110: five fit, each leaving at least 5 free.
    for (int i = 0; i < 5; ++i) {
        auto r = control->admit(gate, "10.0.0.1:1");
        ASSERT_TRUE(r.admitted) << i;
        held.push_back(std::move(r.admitted));
    }
    auto refused = control->admit(gate, "10.0.0.1:1");
    EXPECT_FALSE(refused.admitted);
    EXPECT_EQ(refused.refused, refusal::descriptors);
    EXPECT_EQ(descriptors_.samples, 1) << "near the limit, resampled at most once per second";

    held.pop_back();  // a socket closed: counted at once, no resample needed
    EXPECT_TRUE(control->admit(gate, "10.0.0.1:1").admitted);

    // Others grew (a log segment, store sockets): seen at the next sample, one second later.
    descriptors_.open = 100 + 4 + 4;  // the four held tickets plus four new files
    clock_.advance(1s);
    auto after = control->admit(gate, "10.0.0.1:1");
    EXPECT_EQ(after.refused, refusal::descriptors);
    EXPECT_EQ(descriptors_.samples, 2);
}

TEST_F(admission_test, no_reserve_never_samples) {
    auto control = make({.descriptor_reserve = 0});
    auto gate = control->add_gate(0);
    EXPECT_TRUE(control->admit(gate, "10.0.0.1:1").admitted);
    EXPECT_EQ(descriptors_.samples, 0);
}

TEST_F(admission_test, per_address_connections_across_listeners) {
    auto control = make({.max_connections_per_address = 2});
    auto tcp = control->add_gate(0);
    auto ws = control->add_gate(0);
    auto a = control->admit(tcp, "192.0.2.1:4000");
    auto b = control->admit(ws, "192.0.2.1:4001");  // same host, other port and listener
    ASSERT_TRUE(a.admitted && b.admitted);
    auto c = control->admit(tcp, "192.0.2.1:4002");
    EXPECT_EQ(c.refused, refusal::address_connections);
    EXPECT_EQ(tcp->current(), 1U) << "a refused socket gives its listener slot back";
    EXPECT_TRUE(control->admit(tcp, "192.0.2.2:4000").admitted) << "another host is not limited";
    b.admitted.reset();
    EXPECT_TRUE(control->admit(tcp, "192.0.2.1:4003").admitted);
}

TEST_F(admission_test, per_address_connect_rate_refills_over_time) {
    // 3 connects per 3 s: one token per second after the burst.
    auto control = make({.connect_rate_per_address = {{.capacity = 3, .period_seconds = 3}}});
    auto gate = control->add_gate(0);
    for (int i = 0; i < 3; ++i) {
        EXPECT_TRUE(control->admit(gate, "198.51.100.9:1").admitted) << i;  // tickets dropped
    }
    auto fourth = control->admit(gate, "198.51.100.9:1");
    EXPECT_EQ(fourth.refused, refusal::address_rate);
    EXPECT_TRUE(control->admit(gate, "198.51.100.10:1").admitted) << "per address";
    clock_.advance(999ms);
    EXPECT_EQ(control->admit(gate, "198.51.100.9:1").refused, refusal::address_rate);
    clock_.advance(1ms);
    EXPECT_TRUE(control->admit(gate, "198.51.100.9:1").admitted);
}

TEST_F(admission_test, idle_rate_buckets_are_bounded_and_evicted_oldest_first) {
    auto control = make({.connect_rate_per_address = {{.capacity = 1, .period_seconds = 3600}},
                         .max_tracked_addresses = 2});
    auto gate = control->add_gate(0);
    for (const char* host : {"203.0.113.1:1", "203.0.113.2:1", "203.0.113.3:1"}) {
        EXPECT_TRUE(control->admit(gate, host).admitted);  // connects and closes at once
        EXPECT_EQ(control->admit(gate, host).refused, refusal::address_rate);
    }
    EXPECT_EQ(control->tracked_addresses(), 2U);
    // .1 was least recently used: forgotten, so its bucket starts full again. .3 is remembered.
    EXPECT_TRUE(control->admit(gate, "203.0.113.1:1").admitted);
    EXPECT_EQ(control->admit(gate, "203.0.113.3:1").refused, refusal::address_rate);
    EXPECT_LE(control->tracked_addresses(), 2U);
}

TEST_F(admission_test, live_connections_are_never_evicted) {
    auto control = make({.max_connections_per_address = 1,
                         .connect_rate_per_address = {{.capacity = 100, .period_seconds = 1}},
                         .max_tracked_addresses = 1});
    auto gate = control->add_gate(0);
    auto held = control->admit(gate, "203.0.113.1:1");
    ASSERT_TRUE(held.admitted);
    for (int i = 2; i < 10; ++i) {
        (void)control->admit(gate, "203.0.113." + std::to_string(i) + ":1");
    }
    EXPECT_EQ(control->admit(gate, "203.0.113.1:2").refused, refusal::address_connections);
}

TEST_F(admission_test, address_checked_later_for_proxy_listeners) {
    auto control = make({.max_connections_per_address = 1});
    auto gate = control->add_gate(0);
    // The load balancer's address is not checked at accept...
    auto first = control->admit(gate, "");
    auto second = control->admit(gate, "");
    ASSERT_TRUE(first.admitted && second.admitted);
    // ...the client's is, once the PROXY header named it.
    EXPECT_FALSE(first.admitted->admit_address("198.51.100.7:40001"));
    EXPECT_EQ(second.admitted->admit_address("198.51.100.7:40002"), refusal::address_connections);
    EXPECT_FALSE(first.admitted->admit_address("198.51.100.8:1")) << "checked once per ticket";
    first.admitted.reset();
    second.admitted.reset();
    EXPECT_EQ(gate->current(), 0U);
    EXPECT_EQ(control->tracked_addresses(), 0U);
}

TEST(address_key, hosts_and_ipv6_prefixes) {
    EXPECT_EQ(address_key("192.0.2.1:1883"), "192.0.2.1");
    EXPECT_EQ(address_key("192.0.2.1"), "192.0.2.1");
    EXPECT_EQ(address_key("[::ffff:192.0.2.1]:1883"), "192.0.2.1");
    EXPECT_EQ(address_key("[2001:db8:1:2:aaaa::1]:1883"), "2001:db8:1:2::/64");
    EXPECT_EQ(address_key("[2001:db8:1:2:bbbb::9]:5"), "2001:db8:1:2::/64");
    EXPECT_NE(address_key("[2001:db8:1:3::1]:5"), address_key("[2001:db8:1:2::1]:5"));
    EXPECT_EQ(address_key("unknown"), "unknown");
}

TEST(log_throttle, one_line_per_interval_with_the_count_swallowed) {
    log_throttle throttle(10s);
    const auto t0 = starling::clock::steady_point(1h);
    std::uint64_t suppressed = 99;
    EXPECT_TRUE(throttle.should_log(t0, suppressed));
    EXPECT_EQ(suppressed, 0U);
    EXPECT_FALSE(throttle.should_log(t0 + 1s, suppressed));
    EXPECT_FALSE(throttle.should_log(t0 + 9s, suppressed));
    EXPECT_TRUE(throttle.should_log(t0 + 10s, suppressed));
    EXPECT_EQ(suppressed, 2U);
}

}  // namespace
}  // namespace starling::net
