// The listener's hostile-client defences with real sockets: the connect deadline (from accept,
// through the handshake), the listener cap, per-address limits behind a PROXY header.

#include "net/admission.h"
#include "net/errc.h"
#include "net/handshake.h"
#include "net/proxy_handshake.h"
#include "net/tcp_listener.h"

#include "net_test_support.h"
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace starling::net {
namespace {

using namespace std::chrono_literals;
using testing::net_test;
using testing::test_client;

// Refusals and deadline closes reported by the listener, for assertions.
struct events {
    std::mutex mutex;
    std::vector<refusal> refused;
    int timeouts = 0;

    std::vector<refusal> refusals() {
        std::lock_guard lock(mutex);
        return refused;
    }
    int timeout_count() {
        std::lock_guard lock(mutex);
        return timeouts;
    }
};

class listener_limits_test : public net_test {
  protected:
    listener_options limited(listener_options o = {}) {
        o.on_refused = [e = events_](refusal r) {
            std::lock_guard lock(e->mutex);
            e->refused.push_back(r);
        };
        o.on_connect_timeout = [e = events_] {
            std::lock_guard lock(e->mutex);
            ++e->timeouts;
        };
        return o;
    }

    // The server closed the client's connection (read returns end of stream or a reset).
    static bool closed_by_server(test_client& client) {
        boost::system::error_code end;
        client.read_to_end(end);
        return static_cast<bool>(end);
    }

    std::shared_ptr<events> events_ = std::make_shared<events>();
};

TEST_F(listener_limits_test, a_silent_connection_is_closed_at_the_connect_deadline) {
    auto o = limited();
    o.connect_timeout = 300ms;
    listen(o);
    test_client silent(port());
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(*a.handler->closed(), errc::connect_timeout);
    EXPECT_TRUE(closed_by_server(silent));
    EXPECT_EQ(events_->timeout_count(), 1);
    EXPECT_EQ(listener_->stats().connect_timeouts.load(), 1U);
    EXPECT_EQ(listener_->current_connections(), 0U) << "the slot is free again";
}

TEST_F(listener_limits_test, a_partial_connect_does_not_count_but_connect_completed_does) {
    auto o = limited();
    o.connect_timeout = 400ms;
    // Bytes "done" complete the CONNECT; anything else is a partial one.
    listen(o, [](connection& conn, testing::recording_handler& h, std::span<const std::uint8_t>) {
        if (h.received().find("done") != std::string::npos) {
            conn.connect_completed();
        }
    });
    test_client complete(port());
    auto c = next_accepted();
    complete.write("done");
    test_client partial(port());
    auto p = next_accepted();
    ASSERT_TRUE(p.conn && c.conn);
    partial.write("\x10\x20");  // the first bytes of a CONNECT, never the rest
    ASSERT_TRUE(c.handler->wait_received(4));
    // The partial one's deadline (accepted second, so never earlier than the other's) closes
    // it; by then the completed one has passed its own deadline too and must still be open.
    ASSERT_TRUE(p.handler->wait_closed());
    EXPECT_EQ(*p.handler->closed(), errc::connect_timeout);
    EXPECT_FALSE(c.handler->closed().has_value());
    complete.write("more");
    EXPECT_TRUE(c.handler->wait_received(8));
    EXPECT_EQ(events_->timeout_count(), 1);
}

TEST_F(listener_limits_test, the_deadline_runs_from_accept_through_the_handshake) {
    auto failures = std::make_shared<std::atomic<int>>(0);
    handshake_options h;  // the step's own timeout is long: the listener's deadline must win
    h.timeout = 60s;
    h.on_failure = [failures](std::string_view reason) {
        if (reason == "timeout") {
            failures->fetch_add(1);
        }
    };
    auto o = limited();
    o.connect_timeout = 300ms;
    o.handshake = std::make_shared<proxy_handshaker>("tcp", nullptr, h);
    listen(o);
    const auto started = std::chrono::steady_clock::now();
    test_client silent(port());
    EXPECT_TRUE(closed_by_server(silent));
    EXPECT_LT(std::chrono::steady_clock::now() - started, 30s);
    // The count and the slot's release follow the close (the slot goes with the handshake's
    // state once its last handler returns): polled, with a bound.
    for (int i = 0; i < 3000 && (failures->load() == 0 || listener_->current_connections() != 0);
         ++i) {
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(failures->load(), 1);
    EXPECT_EQ(listener_->current_connections(), 0U);
}

TEST_F(listener_limits_test, the_listener_cap_refuses_and_frees_slots) {
    auto o = limited();
    o.max_connections = 1;
    listen(o);
    test_client first(port());
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    test_client second(port());
    EXPECT_TRUE(closed_by_server(second));
    EXPECT_EQ(events_->refusals(), std::vector<refusal>{refusal::max_connections});
    EXPECT_EQ(listener_->stats().refused.load(), 1U);

    first.close();
    ASSERT_TRUE(a.handler->wait_closed());
    test_client third(port());
    auto c = next_accepted();
    EXPECT_TRUE(c.conn) << "the closed connection's slot was released";
}

TEST_F(listener_limits_test, per_address_limits_use_the_proxy_header_address) {
    auto control = admission_control::create({.max_connections_per_address = 1});
    auto o = limited();
    o.admission = control;
    o.address_from_proxy_header = true;
    o.handshake = std::make_shared<proxy_handshaker>("tcp", nullptr, handshake_options{});
    listen(o);
    // Three sockets from 127.0.0.1 (the "load balancer"), two of them for the same client.
    test_client one(port());
    one.write("PROXY TCP4 198.51.100.7 10.0.0.1 40001 1883\r\n");
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    test_client other_client(port());
    other_client.write("PROXY TCP4 198.51.100.8 10.0.0.1 40001 1883\r\n");
    auto b = next_accepted();
    ASSERT_TRUE(b.conn);
    test_client same_client(port());
    same_client.write("PROXY TCP4 198.51.100.7 10.0.0.1 40002 1883\r\n");
    EXPECT_TRUE(closed_by_server(same_client));
    EXPECT_EQ(events_->refusals(), std::vector<refusal>{refusal::address_connections});
}

}  // namespace
}  // namespace starling::net
