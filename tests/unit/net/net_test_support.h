#pragma once

// Shared fixture for the net tests: an io_pool, a loopback listener on port 0 whose accepted
// connections report to a recording_handler, and a blocking Asio client.

#include "net/connection.h"
#include "net/io_pool.h"
#include "net/tcp_listener.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace starling::net::testing {

// Guards against a hang turning into a stuck CI job; never the synchronization itself.
inline constexpr std::chrono::seconds test_deadline{30};

class recording_handler final : public connection_handler {
  public:
    using bytes_hook =
        std::function<void(connection&, recording_handler&, std::span<const std::uint8_t>)>;

    explicit recording_handler(bytes_hook hook) : hook_(std::move(hook)) {}

    void attach(const std::shared_ptr<connection>& conn) { conn_ = conn; }

    void on_bytes(std::span<const std::uint8_t> bytes) override {
        {
            std::lock_guard lock(mutex_);
            received_.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
            ++on_bytes_calls_;
        }
        changed_.notify_all();
        if (hook_) {
            if (auto conn = conn_.lock()) {
                hook_(*conn, *this, bytes);
            }
        }
    }

    void on_writability_changed(bool writable) override {
        {
            std::lock_guard lock(mutex_);
            writability_.push_back(writable);
        }
        changed_.notify_all();
    }

    void on_closed(std::error_code reason) override {
        {
            std::lock_guard lock(mutex_);
            EXPECT_FALSE(closed_.has_value()) << "on_closed called twice";
            closed_ = reason;
        }
        changed_.notify_all();
    }

    // Waits until `pred` (called under the lock) holds; false on the deadline.
    template <class Pred>
    bool wait(Pred pred) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, test_deadline, [&] { return pred(*this); });
    }

    bool wait_received(std::size_t n) {
        return wait([n](const recording_handler& h) { return h.received_.size() >= n; });
    }
    bool wait_closed() {
        return wait([](const recording_handler& h) { return h.closed_.has_value(); });
    }
    bool wait_writability_events(std::size_t n) {
        return wait([n](const recording_handler& h) { return h.writability_.size() >= n; });
    }

    std::string received() const {
        std::lock_guard lock(mutex_);
        return received_;
    }
    std::size_t received_size() const {
        std::lock_guard lock(mutex_);
        return received_.size();
    }
    std::size_t on_bytes_calls() const {
        std::lock_guard lock(mutex_);
        return on_bytes_calls_;
    }
    std::vector<bool> writability() const {
        std::lock_guard lock(mutex_);
        return writability_;
    }
    std::optional<std::error_code> closed() const {
        std::lock_guard lock(mutex_);
        return closed_;
    }

  private:
    bytes_hook hook_;
    std::weak_ptr<connection> conn_;
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    std::string received_;
    std::size_t on_bytes_calls_ = 0;
    std::vector<bool> writability_;
    std::optional<std::error_code> closed_;
};

// What the fixture's accept handler produced for one connection.
struct accepted {
    std::shared_ptr<connection> conn;
    std::shared_ptr<recording_handler> handler;
};

class net_test : public ::testing::Test {
  protected:
    void SetUp() override { pool_.start(); }

    void TearDown() override {
        if (listener_) {
            listener_->stop();
        }
        std::deque<accepted> all;
        {
            std::lock_guard lock(mutex_);
            all = accepted_;
        }
        for (auto& a : all) {
            a.conn->abort();  // no-op for those already closed
            EXPECT_TRUE(a.handler->wait_closed());
        }
        listener_.reset();
        pool_.stop();
    }

    // Starts the listener. Each accepted connection gets a recording_handler running `hook`,
    // after `before_start` (if any) ran on the unstarted connection.
    void listen(listener_options options = {}, recording_handler::bytes_hook hook = {},
                std::function<void(connection&)> before_start = {}) {
        options.bind_address = "127.0.0.1";
        options.port = 0;
        listener_ = std::make_unique<tcp_listener>(pool_, options);
        auto started = listener_->start([this, hook, before_start](std::shared_ptr<connection> c) {
            auto handler = std::make_shared<recording_handler>(hook);
            handler->attach(c);
            if (before_start) {
                before_start(*c);
            }
            c->start(handler);
            {
                std::lock_guard lock(mutex_);
                accepted_.push_back({c, handler});
            }
            accepted_cv_.notify_all();
        });
        ASSERT_TRUE(started.has_value()) << started.error().message();
        ASSERT_NE(listener_->local_port(), 0);
    }

    // The next accepted connection, in accept order.
    accepted next_accepted() {
        std::unique_lock lock(mutex_);
        const bool ok =
            accepted_cv_.wait_for(lock, test_deadline, [this] { return next_ < accepted_.size(); });
        EXPECT_TRUE(ok) << "no connection accepted";
        if (!ok) {
            return {};
        }
        return accepted_[next_++];
    }

    std::uint16_t port() const { return listener_->local_port(); }

    io_pool pool_{"test-io", 2};
    std::unique_ptr<tcp_listener> listener_;
    std::mutex mutex_;
    std::condition_variable accepted_cv_;
    std::deque<accepted> accepted_;
    std::size_t next_ = 0;
};

// A blocking loopback client running on the test thread.
class test_client {
  public:
    explicit test_client(std::uint16_t port, int receive_buffer = 0) {
        socket_.open(boost::asio::ip::tcp::v4());
        if (receive_buffer != 0) {
            socket_.set_option(boost::asio::socket_base::receive_buffer_size(receive_buffer));
        }
        socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    }

    void write(std::string_view bytes) {
        boost::asio::write(socket_, boost::asio::buffer(bytes.data(), bytes.size()));
    }

    std::string read_exactly(std::size_t n) {
        std::string out(n, '\0');
        boost::asio::read(socket_, boost::asio::buffer(out));
        return out;
    }

    // Reads until the peer closes; returns the bytes and stores the terminating error.
    std::string read_to_end(boost::system::error_code& end) {
        std::string out;
        std::vector<char> buffer(64 * 1024);
        for (;;) {
            const std::size_t n = socket_.read_some(boost::asio::buffer(buffer), end);
            if (end) {
                return out;
            }
            out.append(buffer.data(), n);
        }
    }

    std::uint16_t local_port() const { return socket_.local_endpoint().port(); }
    boost::asio::ip::tcp::socket& socket() { return socket_; }
    void close() { socket_.close(); }

  private:
    boost::asio::io_context context_;
    boost::asio::ip::tcp::socket socket_{context_};
};

// Deterministic filler so reordering or loss shows up in comparisons.
inline std::string pattern(std::size_t size, std::size_t seed = 0) {
    std::string out(size, '\0');
    for (std::size_t i = 0; i < size; ++i) {
        out[i] = static_cast<char>('a' + (i + seed) % 26);
    }
    return out;
}

}  // namespace starling::net::testing
