#include "net/connection.h"

#include "net/errc.h"

#include "net_test_support.h"
#include <boost/asio/error.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace starling::net {
namespace {

using testing::net_test;
using testing::pattern;
using testing::recording_handler;
using testing::test_client;

std::string as_string(std::span<const std::uint8_t> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

TEST_F(net_test, echo_through_the_handler) {
    listen({}, [](connection& c, recording_handler&, std::span<const std::uint8_t> bytes) {
        EXPECT_TRUE(c.send(as_string(bytes)));
    });
    test_client client(port());
    client.write("hello");
    EXPECT_EQ(client.read_exactly(5), "hello");
    client.write(" world");
    EXPECT_EQ(client.read_exactly(6), " world");

    auto a = next_accepted();
    EXPECT_EQ(a.handler->received(), "hello world");
    EXPECT_EQ(a.conn->stats().bytes_received.load(), 11U);
    EXPECT_TRUE(a.conn->is_writable());
}

TEST_F(net_test, sends_queued_together_go_out_in_one_gathered_write) {
    constexpr int pieces = 1000;
    listen({}, [](connection& c, recording_handler&, std::span<const std::uint8_t>) {
        // On the strand: the writer cannot start before this returns, so every piece is queued
        // when it does.
        for (int i = 0; i < pieces; ++i) {
            c.send(pattern(10, static_cast<std::size_t>(i)));
        }
    });
    test_client client(port());
    client.write("go");
    std::string expected;
    for (int i = 0; i < pieces; ++i) {
        expected += pattern(10, static_cast<std::size_t>(i));
    }
    EXPECT_EQ(client.read_exactly(expected.size()), expected);
    auto a = next_accepted();
    EXPECT_EQ(a.conn->stats().write_operations.load(), 1U);

    // bytes_sent is counted when the write completes, which may trail the client's read; a
    // graceful close reports on_closed only after every write completed.
    a.conn->close();
    boost::system::error_code end;
    client.read_to_end(end);
    client.close();
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(a.conn->stats().bytes_sent.load(), expected.size());
}

TEST_F(net_test, sends_from_many_threads_keep_each_threads_order) {
    listen();
    test_client client(port());
    auto a = next_accepted();
    ASSERT_TRUE(a.conn);

    constexpr int threads = 4;
    constexpr int per_thread = 2000;
    std::vector<std::thread> senders;
    for (int t = 0; t < threads; ++t) {
        senders.emplace_back([conn = a.conn, t] {
            for (int i = 0; i < per_thread; ++i) {
                // Fixed-size record: thread digit + 6-digit sequence number.
                // (The buffer is larger than 8 so the compiler can prove no truncation.)
                char record[32];
                std::snprintf(record, sizeof record, "%d%06d", t % 10, i % 1000000);
                ASSERT_TRUE(conn->send(std::string(record, 7)));
            }
        });
    }
    for (auto& s : senders) {
        s.join();
    }
    const std::string all = client.read_exactly(std::size_t{threads} * per_thread * 7);
    std::vector<int> next(threads, 0);
    for (std::size_t pos = 0; pos < all.size(); pos += 7) {
        const int t = all[pos] - '0';
        ASSERT_GE(t, 0);
        ASSERT_LT(t, threads);
        EXPECT_EQ(std::stoi(all.substr(pos + 1, 6)), next[t]);
        ++next[t];
    }
    EXPECT_LT(a.conn->stats().write_operations.load(), std::uint64_t{threads * per_thread});
}

TEST_F(net_test, writability_follows_the_watermarks) {
    constexpr std::size_t high = 256 * 1024;
    constexpr std::size_t low = 128 * 1024;
    // Far more than the kernel can buffer on loopback (send buffer at most 4 MiB, receive
    // buffer pinned small below), so the queue cannot drain below `low` until the client reads.
    constexpr std::size_t total = 16 * 1024 * 1024;
    constexpr std::size_t chunk = 64 * 1024;
    listener_options options;
    options.connection.write_buffer_high_water_mark = high;
    options.connection.write_buffer_low_water_mark = low;
    options.connection.write_buffer_hard_limit = 2 * total;
    std::promise<bool> writable_after_burst;
    listen(options, [&](connection& c, recording_handler&, std::span<const std::uint8_t>) {
        for (std::size_t sent = 0; sent < total; sent += chunk) {
            EXPECT_TRUE(c.send(pattern(chunk, sent)));  // accepted even when non-writable
        }
        writable_after_burst.set_value(c.is_writable());
    });
    test_client client(port(), 16 * 1024);
    auto a = next_accepted();
    client.write("go");

    EXPECT_FALSE(writable_after_burst.get_future().get());  // send() flips it synchronously
    ASSERT_TRUE(a.handler->wait_writability_events(1));
    EXPECT_EQ(a.handler->writability(), std::vector<bool>{false});
    EXPECT_FALSE(a.conn->is_writable());
    EXPECT_GT(a.conn->queued_bytes(), low);

    // Now read: the queue drains and the connection becomes writable again.
    std::string got = client.read_exactly(total);
    ASSERT_TRUE(a.handler->wait_writability_events(2));
    EXPECT_EQ(a.handler->writability(), (std::vector<bool>{false, true}));
    EXPECT_TRUE(a.conn->is_writable());
    std::string expected;
    expected.reserve(total);
    for (std::size_t sent = 0; sent < total; sent += chunk) {
        expected += pattern(chunk, sent);
    }
    EXPECT_TRUE(got == expected);
}

TEST_F(net_test, passing_the_hard_limit_aborts_the_connection) {
    listener_options options;
    options.connection.write_buffer_high_water_mark = 64 * 1024;
    options.connection.write_buffer_low_water_mark = 32 * 1024;
    options.connection.write_buffer_hard_limit = 256 * 1024;
    std::promise<std::vector<bool>> results;
    listen(options, [&](connection& c, recording_handler&, std::span<const std::uint8_t>) {
        std::vector<bool> r;
        r.push_back(c.send(std::string(100 * 1024, 'x')));  // over high: non-writable, accepted
        r.push_back(c.send(std::string(100 * 1024, 'x')));  // 200 KiB: still under the limit
        r.push_back(c.send(std::string(100 * 1024, 'x')));  // 300 KiB: over the hard limit
        r.push_back(c.send("x"));                           // the connection is going away
        results.set_value(r);
    });
    test_client client(port(), 16 * 1024);
    auto a = next_accepted();
    client.write("go");
    EXPECT_EQ(results.get_future().get(), (std::vector<bool>{true, true, false, false}));
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(*a.handler->closed(), errc::write_queue_overflow);
    EXPECT_EQ(a.conn->queued_bytes(), 0U);
}

TEST_F(net_test, pause_stops_reading_until_resume) {
    listener_options options;
    options.so_receive_buffer = 16 * 1024;
    std::promise<void> paused;
    listen(options, [&](connection& c, recording_handler& h, std::span<const std::uint8_t>) {
        if (h.on_bytes_calls() == 1) {
            c.pause_reading();  // from inside on_bytes: nothing more until resume
            paused.set_value();
        }
    });
    test_client client(port());
    auto a = next_accepted();
    client.write("x");
    paused.get_future().wait();
    EXPECT_TRUE(a.conn->reading_paused());

    // With the server not reading, the kernel buffers fill and the client's writes stall.
    client.socket().non_blocking(true);
    const std::string block = pattern(64 * 1024);
    std::size_t written = 0;
    for (;;) {
        boost::system::error_code ec;
        written += client.socket().write_some(boost::asio::buffer(block), ec);
        if (ec == boost::asio::error::would_block) {
            break;
        }
        ASSERT_FALSE(ec) << ec.message();
        ASSERT_LT(written, 256U * 1024 * 1024) << "the peer kept reading while paused";
    }
    EXPECT_EQ(a.handler->received_size(), 1U);
    EXPECT_EQ(a.handler->on_bytes_calls(), 1U);

    a.conn->resume_reading();
    EXPECT_FALSE(a.conn->reading_paused());
    ASSERT_TRUE(a.handler->wait_received(1 + written));
    EXPECT_EQ(a.handler->received_size(), 1 + written);
}

TEST_F(net_test, close_flushes_pending_writes_first) {
    constexpr std::size_t size = 4 * 1024 * 1024;
    std::promise<bool> send_after_close;
    listen({}, [&](connection& c, recording_handler&, std::span<const std::uint8_t>) {
        c.send(pattern(size));
        c.close();
        send_after_close.set_value(c.send("late"));
    });
    test_client client(port(), 16 * 1024);
    auto a = next_accepted();
    client.write("go");
    EXPECT_FALSE(send_after_close.get_future().get());

    boost::system::error_code end;
    const std::string got = client.read_to_end(end);
    EXPECT_EQ(end, boost::asio::error::eof);  // a FIN, not a reset
    EXPECT_TRUE(got == pattern(size)) << "got " << got.size() << " bytes";
    client.close();  // our FIN completes the server's lingering close

    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_FALSE(*a.handler->closed()) << a.handler->closed()->message();
}

TEST_F(net_test, close_gives_up_after_the_timeout_when_the_peer_does_not_read) {
    listener_options options;
    options.connection.close_timeout = std::chrono::milliseconds(100);
    options.connection.write_buffer_hard_limit = 64 * 1024 * 1024;
    listen(options, [&](connection& c, recording_handler&, std::span<const std::uint8_t>) {
        c.send(pattern(16 * 1024 * 1024));  // cannot fit in the kernel buffers
        c.close();
    });
    test_client client(port(), 16 * 1024);
    auto a = next_accepted();
    client.write("go");
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(*a.handler->closed(), errc::close_timeout);
}

TEST_F(net_test, abort_closes_at_once) {
    listen({}, [&](connection& c, recording_handler&, std::span<const std::uint8_t>) {
        c.abort();
        EXPECT_FALSE(c.send("late"));
    });
    test_client client(port());
    auto a = next_accepted();
    client.write("go");
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(*a.handler->closed(), errc::aborted);
    boost::system::error_code end;
    client.read_to_end(end);
    EXPECT_TRUE(end);
}

TEST_F(net_test, the_peer_closing_is_reported) {
    listen();
    test_client client(port());
    auto a = next_accepted();
    client.close();
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(*a.handler->closed(), errc::peer_closed);
}

TEST_F(net_test, sends_before_start_are_written) {
    listen({}, {}, [](connection& c) { EXPECT_TRUE(c.send("welcome")); });
    test_client client(port());
    EXPECT_EQ(client.read_exactly(7), "welcome");
}

}  // namespace
}  // namespace starling::net
