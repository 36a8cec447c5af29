#include "http/server.h"

#include "http/actuator.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/read.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace starling::http {
namespace {

namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;
using ::testing::HasSubstr;

// A blocking HTTP client on its own socket; the server runs on the fixture's I/O threads.
class client {
  public:
    explicit client(std::uint16_t port) : socket_(io_) {
        socket_.connect({net::ip::make_address("127.0.0.1"), port});
    }

    void send(std::string_view raw) { net::write(socket_, net::buffer(raw)); }

    response read() {
        response res;
        bhttp::read(socket_, buffer_, res);
        return res;
    }

    response get(std::string_view target) {
        send("GET " + std::string(target) + " HTTP/1.1\r\nHost: test\r\n\r\n");
        return read();
    }

    // True when the server has closed the connection (no more bytes, EOF or reset).
    bool closed_by_server() {
        char byte = 0;
        boost::system::error_code ec;
        const auto n = socket_.read_some(net::buffer(&byte, 1), ec);
        return n == 0 && (ec == net::error::eof || ec == net::error::connection_reset);
    }

  private:
    net::io_context io_;
    tcp::socket socket_;
    boost::beast::flat_buffer buffer_;
};

class http_server : public ::testing::Test {
  protected:
    void start(router routes, server_options options = {}, int io_threads = 1) {
        server_.emplace(io_, std::move(routes), options);
        const auto started = server_->start("127.0.0.1", 0);
        ASSERT_TRUE(started) << started.error().message();
        ASSERT_NE(server_->local_port(), 0);
        for (int i = 0; i < io_threads; ++i) {
            threads_.emplace_back([this] { io_.run(); });
        }
    }

    // Starts with the actuator routes and a running node.
    void start_actuator(server_options options = {}, int io_threads = 1) {
        health_.set_lifecycle(lifecycle::running);
        router routes;
        add_actuator_routes(routes, health_, metrics_);
        start(std::move(routes), options, io_threads);
    }

    // Stops the server and joins the I/O threads: they return only when every connection's
    // asynchronous work has ended, which is what stop() promises.
    void stop_and_join() {
        if (server_) {
            server_->stop();
        }
        work_.reset();
        for (auto& t : threads_) {
            t.join();
        }
        threads_.clear();
    }

    void TearDown() override {
        stop_and_join();
        if (server_) {
            EXPECT_EQ(server_->connection_count(), 0U);
        }
    }

    std::uint16_t port() const { return server_->local_port(); }

    net::io_context io_;
    std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{
        net::make_work_guard(io_)};
    std::optional<server> server_;
    std::vector<std::thread> threads_;
    health_registry health_;
    metrics::registry metrics_;
};

TEST_F(http_server, health_endpoint_reports_components) {
    health_.add("messageLog", [] {
        return component_health{health_status::up, {{"partitions", 16}}};
    });
    start_actuator();
    client c(port());
    const auto res = c.get("/actuator/health");
    EXPECT_EQ(res.result(), status_code::ok);
    EXPECT_EQ(res[bhttp::field::content_type], "application/json");
    const auto body = nlohmann::json::parse(res.body());
    EXPECT_EQ(body["status"], "UP");
    EXPECT_EQ(body["components"]["messageLog"]["status"], "UP");
    EXPECT_EQ(body["components"]["messageLog"]["details"]["partitions"], 16);
}

TEST_F(http_server, health_status_maps_to_http_status_on_one_keep_alive_connection) {
    std::atomic<health_status> log_status{health_status::up};
    health_.add("messageLog", [&] { return component_health{log_status.load(), {}}; });
    start_actuator();
    client c(port());

    log_status = health_status::degraded;
    auto res = c.get("/actuator/health");
    EXPECT_EQ(res.result(), status_code::ok);
    EXPECT_EQ(nlohmann::json::parse(res.body())["status"], "DEGRADED");
    EXPECT_TRUE(res.keep_alive());

    log_status = health_status::down;
    res = c.get("/actuator/health");
    EXPECT_EQ(res.result(), status_code::service_unavailable);
    EXPECT_EQ(nlohmann::json::parse(res.body())["status"], "DOWN");

    log_status = health_status::up;
    health_.set_lifecycle(lifecycle::stopping);
    res = c.get("/actuator/health");
    EXPECT_EQ(res.result(), status_code::service_unavailable);
    EXPECT_EQ(nlohmann::json::parse(res.body())["status"], "OUT_OF_SERVICE");
}

TEST_F(http_server, prometheus_endpoint_serves_the_registry) {
    start_actuator();
    metrics_.broker().client_connected();
    client c(port());
    const auto res = c.get("/actuator/prometheus");
    EXPECT_EQ(res.result(), status_code::ok);
    EXPECT_EQ(res[bhttp::field::content_type], "text/plain; version=0.0.4");
    EXPECT_THAT(res.body(), HasSubstr("\nconnectedSessions 1\n"));
    EXPECT_THAT(res.body(), HasSubstr("# TYPE droppedMsgs_total counter"));
}

TEST_F(http_server, unknown_path_is_404_and_wrong_method_405) {
    start_actuator();
    client c(port());
    EXPECT_EQ(c.get("/nothing/here").result(), status_code::not_found);
    c.send("POST /actuator/health HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n");
    const auto res = c.read();
    EXPECT_EQ(res.result(), status_code::method_not_allowed);
    EXPECT_EQ(res[bhttp::field::allow], "GET");
}

TEST_F(http_server, malformed_request_gets_400_and_the_connection_closes) {
    start_actuator();
    client c(port());
    c.send("THIS IS NOT HTTP\r\n\r\n");
    const auto res = c.read();
    EXPECT_EQ(res.result(), status_code::bad_request);
    EXPECT_FALSE(res.keep_alive());
    EXPECT_TRUE(c.closed_by_server());
}

TEST_F(http_server, oversized_body_gets_413) {
    router routes;
    routes.add(verb::post, "/upload", [](const request&) {
        return make_response(status_code::ok, "text/plain", "stored");
    });
    server_options options;
    options.max_body_bytes = 1024;
    start(std::move(routes), options);

    client small(port());
    small.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1024\r\n\r\n" +
               std::string(1024, 'x'));
    EXPECT_EQ(small.read().result(), status_code::ok);

    client big(port());
    big.send("POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 1025\r\n\r\n" +
             std::string(1025, 'x'));
    EXPECT_EQ(big.read().result(), status_code::payload_too_large);
    EXPECT_TRUE(big.closed_by_server());
}

TEST_F(http_server, oversized_headers_get_431) {
    server_options options;
    options.max_header_bytes = 512;
    start(router{}, options);
    client c(port());
    c.send("GET / HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(1024, 'y') + "\r\n\r\n");
    EXPECT_EQ(c.read().result(), status_code::request_header_fields_too_large);
}

TEST_F(http_server, http_1_0_without_keep_alive_is_closed_after_the_response) {
    start_actuator();
    client c(port());
    c.send("GET /actuator/health HTTP/1.0\r\n\r\n");
    const auto res = c.read();
    EXPECT_EQ(res.result(), status_code::ok);
    EXPECT_EQ(res.version(), 10U);
    EXPECT_TRUE(c.closed_by_server());
}

TEST_F(http_server, pipelined_requests_are_answered_in_order) {
    start_actuator();
    client c(port());
    c.send(
        "GET /actuator/health HTTP/1.1\r\nHost: t\r\n\r\n"
        "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n"
        "GET /actuator/prometheus HTTP/1.1\r\nHost: t\r\n\r\n");
    EXPECT_EQ(c.read().result(), status_code::ok);
    EXPECT_EQ(c.read().result(), status_code::not_found);
    EXPECT_THAT(c.read().body(), HasSubstr("connectedSessions"));
}

TEST_F(http_server, async_handler_answered_from_another_thread) {
    std::promise<responder> pending;
    router routes;
    routes.add_async(verb::get, "/api/slow", [&](const request&, responder respond) {
        pending.set_value(std::move(respond));
    });
    start(std::move(routes));
    client c(port());
    c.send("GET /api/slow HTTP/1.1\r\nHost: t\r\n\r\n");
    auto respond = pending.get_future().get();  // the handler has run on the I/O thread
    respond(make_response(status_code::accepted, "text/plain", "later"));
    const auto res = c.read();
    EXPECT_EQ(res.result(), status_code::accepted);
    EXPECT_EQ(res.body(), "later");
}

TEST_F(http_server, stop_closes_connections_and_the_listener) {
    start_actuator();
    client c(port());
    EXPECT_EQ(c.get("/actuator/health").result(), status_code::ok);
    EXPECT_EQ(server_->connection_count(), 1U);
    const auto bound = port();

    server_->stop();
    EXPECT_TRUE(c.closed_by_server());
    // The listener was closed before the connection (both posted in that order to the one
    // I/O thread), so nothing accepts any more.
    net::io_context io;
    tcp::socket s(io);
    boost::system::error_code ec;
    s.connect({net::ip::make_address("127.0.0.1"), bound}, ec);
    EXPECT_EQ(ec, net::error::connection_refused);

    stop_and_join();
    EXPECT_EQ(server_->connection_count(), 0U);
}

TEST_F(http_server, connections_over_the_limit_are_closed) {
    server_options options;
    options.max_connections = 1;
    options.reserved_health_connections = 0;
    start_actuator(options);
    client first(port());
    EXPECT_EQ(first.get("/actuator/health").result(), status_code::ok);  // now registered
    client second(port());
    EXPECT_TRUE(second.closed_by_server());
    EXPECT_EQ(first.get("/actuator/health").result(), status_code::ok);
}

// Every ordinary slot taken: the health endpoint still answers, in a reserved slot that serves
// nothing else and one request only.
TEST_F(http_server, reserved_slots_serve_only_health_when_ordinary_slots_are_full) {
    auto refusals = std::make_shared<std::vector<std::string>>();
    auto refusals_mutex = std::make_shared<std::mutex>();
    server_options options;
    options.max_connections = 1;
    options.reserved_health_connections = 1;
    options.on_refused = [refusals, refusals_mutex](std::string_view reason) {
        std::lock_guard lock(*refusals_mutex);
        refusals->emplace_back(reason);
    };
    start_actuator(options);
    client hog(port());
    EXPECT_EQ(hog.get("/actuator/prometheus").result(), status_code::ok);  // the only slot

    // The reserved slot is free again once its connection is gone (the server lingers until
    // the client's FIN, so the client closes first).
    auto reserved_slot_free = [this] {
        for (int i = 0; i < 5000 && server_->connection_count() > 1; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));  // bounded polling
        }
        return server_->connection_count() == 1;
    };
    {
        client probe(port());
        const auto health = probe.get("/actuator/health?probe=liveness");
        EXPECT_EQ(health.result(), status_code::ok);
        EXPECT_FALSE(health.keep_alive());
        EXPECT_TRUE(probe.closed_by_server());
    }
    ASSERT_TRUE(reserved_slot_free());
    {
        client scraper(port());
        const auto metrics = scraper.get("/actuator/prometheus");
        EXPECT_EQ(metrics.result(), status_code::service_unavailable);
        EXPECT_TRUE(scraper.closed_by_server());
    }
    ASSERT_TRUE(reserved_slot_free());
    {
        std::lock_guard lock(*refusals_mutex);
        EXPECT_EQ(*refusals, std::vector<std::string>{"reserved_slot"});
    }
    EXPECT_EQ(hog.get("/actuator/health").result(), status_code::ok) << "the hog keeps its slot";
}

TEST_F(http_server, connections_per_address_are_limited) {
    auto refused = std::make_shared<std::atomic<int>>(0);
    server_options options;
    options.max_connections_per_address = 2;
    options.on_refused = [refused](std::string_view reason) {
        if (reason == "address_connections") {
            refused->fetch_add(1);
        }
    };
    start_actuator(options);
    client a(port());
    client b(port());
    EXPECT_EQ(a.get("/actuator/health").result(), status_code::ok);
    EXPECT_EQ(b.get("/actuator/health").result(), status_code::ok);
    client c(port());
    EXPECT_TRUE(c.closed_by_server()) << "a third connection from 127.0.0.1";
    EXPECT_EQ(refused->load(), 1);
    EXPECT_EQ(a.get("/actuator/health").result(), status_code::ok);
}

TEST_F(http_server, idle_connection_times_out) {
    server_options options;
    options.idle_timeout = std::chrono::seconds(1);
    start(router{}, options);
    client c(port());
    // Waiting here is the behaviour under test, not a stand-in for synchronization: the
    // read returns when the server closes the silent connection.
    const auto before = std::chrono::steady_clock::now();
    EXPECT_TRUE(c.closed_by_server());
    EXPECT_GE(std::chrono::steady_clock::now() - before, std::chrono::milliseconds(900));
}

TEST_F(http_server, start_reports_bind_errors) {
    start_actuator();
    net::io_context other_io;
    server other(other_io, router{});
    const auto clash = other.start("127.0.0.1", port());
    ASSERT_FALSE(clash);
    EXPECT_EQ(clash.error(), std::errc::address_in_use);

    server bad(other_io, router{});
    EXPECT_FALSE(bad.start("not-an-address", 0));
    EXPECT_EQ(bad.local_port(), 0);
}

TEST_F(http_server, start_twice_is_refused) {
    start_actuator();
    EXPECT_FALSE(server_->start("127.0.0.1", 0));
}

TEST_F(http_server, many_clients_on_many_io_threads) {
    start_actuator({}, 2);
    constexpr int clients = 4;
    constexpr int requests = 50;
    std::vector<std::thread> workers;
    std::atomic<int> ok{0};
    for (int i = 0; i < clients; ++i) {
        workers.emplace_back([&] {
            client c(port());
            for (int r = 0; r < requests; ++r) {
                if (c.get(r % 2 == 0 ? "/actuator/health" : "/actuator/prometheus").result() ==
                    status_code::ok) {
                    ++ok;
                }
            }
        });
    }
    for (auto& w : workers) {
        w.join();
    }
    EXPECT_EQ(ok.load(), clients * requests);
}

}  // namespace
}  // namespace starling::http
