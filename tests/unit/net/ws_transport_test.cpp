#include "net/ws_transport.h"

#include "net/errc.h"

#include "net_test_support.h"
#include "test_pki.h"
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <gtest/gtest.h>

#include <thread>

namespace starling::net::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;

class ws_test : public net_test {
  protected:
    // Listens with WebSocket (plain, or over TLS when `contexts` is set); received bytes are
    // echoed back in one send.
    void listen_ws(ws_options options = {}, std::shared_ptr<tls_context_provider> contexts = {}) {
        options.handshake.on_failure = [this](std::string_view reason) {
            std::lock_guard lock(failures_mutex_);
            failures_.emplace_back(reason);
        };
        listener_options lo;
        lo.handshake = std::make_shared<ws_handshaker>(std::move(options), std::move(contexts));
        listen(lo, [](connection& conn, recording_handler&, std::span<const std::uint8_t> b) {
            conn.send(std::string(reinterpret_cast<const char*>(b.data()), b.size()));
        });
    }

    // Sends an upgrade request by hand and returns the response.
    http::response<http::string_body> upgrade_raw(const std::string& target,
                                                  const std::string& protocols) {
        test_client client(port());
        http::request<http::empty_body> req{http::verb::get, target, 11};
        req.set(http::field::host, "127.0.0.1");
        req.set(http::field::upgrade, "websocket");
        req.set(http::field::connection, "Upgrade");
        req.set(http::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
        req.set(http::field::sec_websocket_version, "13");
        if (!protocols.empty()) {
            req.set(http::field::sec_websocket_protocol, protocols);
        }
        http::write(client.socket(), req);
        beast::flat_buffer buffer;
        http::response<http::string_body> res;
        http::read(client.socket(), buffer, res);
        return res;
    }

    std::vector<std::string> failures() {
        std::lock_guard lock(failures_mutex_);
        return failures_;
    }

    std::mutex failures_mutex_;
    std::vector<std::string> failures_;
};

// A blocking WebSocket client; `offered` is the Sec-WebSocket-Protocol header it sends.
struct ws_client {
    explicit ws_client(std::uint16_t port, const std::string& offered = "mqtt") {
        beast::get_lowest_layer(ws).connect({asio::ip::make_address("127.0.0.1"), port});
        ws.set_option(websocket::stream_base::decorator([offered](websocket::request_type& req) {
            req.set(http::field::sec_websocket_protocol, offered);
        }));
        ws.handshake(response, "127.0.0.1", "/mqtt");
        ws.binary(true);
    }
    std::string read_message() {
        beast::flat_buffer buffer;
        ws.read(buffer);
        return beast::buffers_to_string(buffer.data());
    }

    asio::io_context context;
    websocket::stream<asio::ip::tcp::socket> ws{context};
    websocket::response_type response;
};

TEST(ws_sub_protocol, first_offered_protocol_that_is_configured_wins) {
    const std::vector<std::string> ours{"mqttv3.1", "mqtt"};
    EXPECT_EQ(choose_sub_protocol("mqtt", ours), "mqtt");
    EXPECT_EQ(choose_sub_protocol("mqtt, mqttv3.1", ours), "mqtt");
    EXPECT_EQ(choose_sub_protocol("wamp,  mqttv3.1 ,mqtt", ours), "mqttv3.1");
    EXPECT_EQ(choose_sub_protocol("wamp", ours), "");
    EXPECT_EQ(choose_sub_protocol("", ours), "");
    EXPECT_EQ(choose_sub_protocol("MQTT", ours), "");  // tokens are case-sensitive
}

TEST_F(ws_test, upgrade_on_mqtt_path_echoes_the_subprotocol_and_carries_binary_messages) {
    listen_ws();
    ws_client client(port(), "wamp, mqtt");
    EXPECT_EQ(client.response[http::field::sec_websocket_protocol], "mqtt");
    client.ws.write(asio::buffer(std::string("\x10\x02hi", 4)));
    EXPECT_EQ(client.read_message(), std::string("\x10\x02hi", 4));
    auto a = next_accepted();
    EXPECT_EQ(a.conn->tls_peer(), nullptr);
    EXPECT_NE(a.conn->remote_address().find("127.0.0.1:"), std::string::npos);
}

TEST_F(ws_test, wrong_path_gets_404_and_missing_or_unknown_subprotocol_gets_400) {
    listen_ws();
    EXPECT_EQ(upgrade_raw("/other", "mqtt").result(), http::status::not_found);
    EXPECT_EQ(upgrade_raw("/mqtt", "").result(), http::status::bad_request);
    EXPECT_EQ(upgrade_raw("/mqtt", "wamp").result(), http::status::bad_request);
    EXPECT_EQ(upgrade_raw("/mqtt?x=1", "mqttv3.1").result(), http::status::switching_protocols);
    // A refusal is counted once its response is written, which may trail the client's read.
    for (int i = 0; i < 3000 && failures().size() < 3; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});  // polling with a deadline
    }
    EXPECT_EQ(failures(), (std::vector<std::string>{"upgrade", "upgrade", "upgrade"}));
}

TEST_F(ws_test, packet_split_across_frames_and_packets_sharing_a_frame_arrive_in_order) {
    listen_ws();
    ws_client client(port());
    auto a = next_accepted();
    client.ws.write(asio::buffer(std::string("\x10\x04")));
    client.ws.write(asio::buffer(std::string("abcd")));
    ASSERT_TRUE(a.handler->wait_received(6));
    client.ws.write(asio::buffer(std::string("\xc0\x00\xc0\x00", 4)));  // two PINGREQs
    ASSERT_TRUE(a.handler->wait_received(10));
    EXPECT_EQ(a.handler->received(), std::string("\x10\x04"
                                                 "abcd\xc0\x00\xc0\x00",
                                                 10));
}

TEST_F(ws_test, text_frame_closes_the_connection) {
    listen_ws();
    ws_client client(port());
    auto a = next_accepted();
    client.ws.text(true);
    client.ws.write(asio::buffer(std::string("hello")));
    ASSERT_TRUE(a.handler->wait_closed());
    EXPECT_EQ(*a.handler->closed(), std::error_code(errc::websocket_text_frame));
    EXPECT_EQ(a.handler->received(), "");
}

TEST_F(ws_test, close_sends_a_close_frame) {
    listen_ws();
    ws_client client(port());
    auto a = next_accepted();
    a.conn->send("bye");
    a.conn->close();
    EXPECT_EQ(client.read_message(), "bye");
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    client.ws.read(buffer, ec);
    EXPECT_EQ(ec, websocket::error::closed);
    ASSERT_TRUE(a.handler->wait_closed());
}

TEST_F(ws_test, secure_websocket_upgrade_over_tls) {
    test_pki pki;
    pki.make_ca("ca");
    pki.make_cert("server", "wss-server", "ca");
    tls_options o;
    o.listener = "wss";
    o.cert_file = pki.path("server.pem");
    o.key_file = pki.path("server.key");
    o.reload_interval = std::chrono::milliseconds{0};
    ws_options w;
    w.listener = "wss";
    listen_ws(w, tls_context_provider::create(pool_.context(), o));

    asio::io_context context;
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.load_verify_file(pki.path("ca.pem").string());
    ctx.set_verify_mode(asio::ssl::verify_peer);
    websocket::stream<asio::ssl::stream<asio::ip::tcp::socket>> ws(context, ctx);
    beast::get_lowest_layer(ws).connect({asio::ip::make_address("127.0.0.1"), port()});
    ws.next_layer().handshake(asio::ssl::stream_base::client);
    ws.set_option(websocket::stream_base::decorator([](websocket::request_type& req) {
        req.set(http::field::sec_websocket_protocol, "mqttv3.1");
    }));
    websocket::response_type response;
    ws.handshake(response, "127.0.0.1", "/mqtt");
    EXPECT_EQ(response[http::field::sec_websocket_protocol], "mqttv3.1");
    ws.binary(true);
    ws.write(asio::buffer(std::string("secure")));
    beast::flat_buffer buffer;
    ws.read(buffer);
    EXPECT_EQ(beast::buffers_to_string(buffer.data()), "secure");
    auto a = next_accepted();
    ASSERT_NE(a.conn->tls_peer(), nullptr);
    EXPECT_EQ(a.conn->tls_peer()->protocol, "TLSv1.3");
}

// The judgement the handshake applies, without sockets (the fuzz target's entry point).
TEST(ws_upgrade_judgement, accepts_refuses_and_waits_like_the_handshake) {
    const ws_options options;
    const std::string head =
        "GET /mqtt?a=b HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n";
    auto ok = judge_upgrade_request(head + "Sec-WebSocket-Protocol: x, mqtt\r\n\r\n", options);
    ASSERT_TRUE(ok);
    EXPECT_TRUE(ok->accepted);
    EXPECT_EQ(ok->protocol, "mqtt");
    auto none = judge_upgrade_request(head + "\r\n", options);
    ASSERT_TRUE(none);
    EXPECT_FALSE(none->accepted);
    EXPECT_EQ(none->status, 400U);
    auto path = judge_upgrade_request("GET /other HTTP/1.1\r\nHost: x\r\n\r\n", options);
    ASSERT_TRUE(path);
    EXPECT_EQ(path->status, 400U) << "not an upgrade at all comes first";
    EXPECT_FALSE(judge_upgrade_request(head, options)) << "incomplete: the handshake reads on";
    EXPECT_FALSE(judge_upgrade_request("\x16\x03\x01 garbage\r\n\r\n", options));
    EXPECT_FALSE(judge_upgrade_request(
        "GET /mqtt HTTP/1.1\r\nX: " + std::string(10000, 'a') + "\r\n\r\n", options))
        << "over the header limit";
}

}  // namespace
}  // namespace starling::net::testing
