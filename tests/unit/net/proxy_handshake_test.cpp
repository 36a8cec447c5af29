#include "net/proxy_handshake.h"

#include "net/proxy_protocol.h"

#include "net_test_support.h"
#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace starling::net {
namespace {

using testing::net_test;
using testing::test_client;

// The reasons handed to handshake_options::on_failure, in order (called on I/O threads).
struct failure_log {
    std::mutex mutex;
    std::vector<std::string> reasons;

    std::vector<std::string> get() {
        std::lock_guard lock(mutex);
        return reasons;
    }
};

class proxy_test : public net_test {
  protected:
    void listen_with_proxy(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
        handshake_options h;
        h.timeout = timeout;
        h.on_failure = [log = failures_](std::string_view reason) {
            std::lock_guard lock(log->mutex);
            log->reasons.emplace_back(reason);
        };
        listener_options options;
        options.handshake = std::make_shared<proxy_handshaker>("tcp", nullptr, h);
        listen(options);
    }

    std::shared_ptr<failure_log> failures_ = std::make_shared<failure_log>();
};

std::string v2_signature() {
    return {reinterpret_cast<const char*>(proxy_protocol::v2_signature),
            sizeof proxy_protocol::v2_signature};
}

TEST_F(proxy_test, v1_header_sets_the_address_and_following_bytes_reach_the_handler) {
    listen_with_proxy();
    test_client client(port());
    // Header and the client's first bytes in one segment: nothing past the header may be lost.
    client.write("PROXY TCP4 198.51.100.7 10.0.0.1 40001 1883\r\nhello mqtt");
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    EXPECT_EQ(a.conn->remote_address(), "198.51.100.7:40001");
    ASSERT_TRUE(a.handler->wait_received(10));
    EXPECT_EQ(a.handler->received(), "hello mqtt");
    EXPECT_TRUE(failures_->get().empty());
}

TEST_F(proxy_test, v2_ipv6_header_in_pieces) {
    listen_with_proxy();
    test_client client(port());
    std::string header = v2_signature() + std::string("\x21\x21\x00\x24", 4);
    std::string addresses(36, '\0');
    addresses[0] = '\x20';  // 2001:db8::8
    addresses[1] = '\x01';
    addresses[2] = '\x0d';
    addresses[3] = '\xb8';
    addresses[15] = '\x08';
    addresses[16] = '\x20';  // destination 2001:db8::1
    addresses[17] = '\x01';
    addresses[31] = '\x01';
    addresses[32] = '\x9c';  // source port 40004
    addresses[33] = '\x44';
    addresses[34] = '\x07';  // destination port 1883
    addresses[35] = '\x5b';
    const std::string all = header + addresses + "tail";
    client.write(all.substr(0, 5));
    client.write(all.substr(5, 20));
    client.write(all.substr(25));
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    EXPECT_EQ(a.conn->remote_address(), "[2001:db8::8]:40004");
    ASSERT_TRUE(a.handler->wait_received(4));
    EXPECT_EQ(a.handler->received(), "tail");
}

TEST_F(proxy_test, v2_local_keeps_the_socket_address) {
    listen_with_proxy();
    test_client client(port());
    client.write(v2_signature() + std::string("\x20\x00\x00\x00", 4) + "x");
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    EXPECT_EQ(a.conn->remote_address(), "127.0.0.1:" + std::to_string(client.local_port()));
    ASSERT_TRUE(a.handler->wait_received(1));
    EXPECT_EQ(a.handler->received(), "x");
}

TEST_F(proxy_test, missing_header_closes_and_counts_without_a_connection) {
    listen_with_proxy();
    test_client client(port());
    // The start of an MQTT CONNECT (12 bytes), no PROXY header.
    const char connect_start[] = "\x10\x0c\x00\x04MQTT\x05\x02\x00\x3c";
    client.write(std::string(connect_start, sizeof connect_start - 1));
    boost::system::error_code end;
    EXPECT_EQ(client.read_to_end(end), "");
    EXPECT_TRUE(end);
    EXPECT_EQ(failures_->get(), std::vector<std::string>{"proxy"});
    EXPECT_EQ(listener_->stats().accepted.load(), 0U);
}

TEST_F(proxy_test, malformed_v1_closes) {
    listen_with_proxy();
    test_client client(port());
    client.write("PROXY TCP4 1.2.3.4.5 10.0.0.1 1 2\r\n");
    boost::system::error_code end;
    EXPECT_EQ(client.read_to_end(end), "");
    EXPECT_EQ(failures_->get(), std::vector<std::string>{"proxy"});
}

TEST_F(proxy_test, silent_client_is_dropped_at_the_deadline) {
    listen_with_proxy(std::chrono::milliseconds(200));
    test_client client(port());
    client.write("PROXY TCP4");  // part of a header, then silence
    boost::system::error_code end;
    EXPECT_EQ(client.read_to_end(end), "");
    EXPECT_EQ(failures_->get(), std::vector<std::string>{"timeout"});
    EXPECT_EQ(listener_->stats().accepted.load(), 0U);
}

}  // namespace
}  // namespace starling::net
