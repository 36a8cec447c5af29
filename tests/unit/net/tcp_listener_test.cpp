#include "net/tcp_listener.h"

#include "net/errc.h"
#include "net/io_pool.h"

#include "net_test_support.h"
#include <boost/asio/ip/tcp.hpp>
#include <gtest/gtest.h>

namespace starling::net {
namespace {

using testing::net_test;
using testing::test_client;

listener_options on(std::string address, std::uint16_t port) {
    listener_options options;
    options.bind_address = std::move(address);
    options.port = port;
    return options;
}

TEST_F(net_test, port_zero_binds_an_ephemeral_port) {
    listen();
    tcp_listener second(pool_, on("127.0.0.1", 0));
    ASSERT_TRUE(second.start([](std::shared_ptr<connection>) {}).has_value());
    EXPECT_NE(second.local_port(), 0);
    EXPECT_NE(second.local_port(), port());

    test_client client(port());
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    EXPECT_EQ(listener_->stats().accepted.load(), 1U);
    EXPECT_EQ(a.conn->remote_address(), "127.0.0.1:" + std::to_string(client.local_port()));
}

TEST_F(net_test, a_port_in_use_or_a_bad_address_fails_start) {
    listen();
    tcp_listener clash(pool_, on("127.0.0.1", port()));
    auto result = clash.start([](std::shared_ptr<connection>) {});
    ASSERT_FALSE(result.has_value());
    EXPECT_EQ(result.error(), std::errc::address_in_use);

    tcp_listener bad(pool_, on("not-an-ip", 0));
    auto bad_result = bad.start([](std::shared_ptr<connection>) {});
    ASSERT_FALSE(bad_result.has_value());
    EXPECT_EQ(bad_result.error(), errc::invalid_address);
}

TEST_F(net_test, connection_ids_are_unique) {
    listen();
    test_client first(port());
    test_client second(port());
    auto a = next_accepted();
    auto b = next_accepted();
    ASSERT_TRUE(a.conn && b.conn);
    EXPECT_NE(a.conn->id(), b.conn->id());
    EXPECT_NE(a.conn->id(), 0U);
}

TEST_F(net_test, stop_refuses_new_connections_and_keeps_existing_ones) {
    listen({}, [](connection& c, testing::recording_handler&, std::span<const std::uint8_t> b) {
        c.send(std::string(reinterpret_cast<const char*>(b.data()), b.size()));
    });
    test_client client(port());
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);
    const auto bound = port();
    listener_->stop();
    listener_->stop();  // idempotent

    // The listening socket is closed: a loopback connect is refused at once.
    boost::asio::io_context ctx;
    boost::asio::ip::tcp::socket refused(ctx);
    boost::system::error_code ec;
    refused.connect({boost::asio::ip::make_address("127.0.0.1"), bound}, ec);
    EXPECT_EQ(ec, boost::asio::error::connection_refused);

    client.write("still here");
    EXPECT_EQ(client.read_exactly(10), "still here");
}

}  // namespace
}  // namespace starling::net
