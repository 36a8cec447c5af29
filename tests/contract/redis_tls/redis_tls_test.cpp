// TLS to Redis (redis.ssl.*): the whole device-inbox contract through a private redis-server
// that speaks only TLS, plus what only TLS does — a server whose certificate the CA does not
// vouch for is refused, a plain-text client gets nothing, mutual TLS needs the client certificate,
// large values cross the bridge intact, and a server that goes away fails calls (never a false
// success) until it is back. Needs redis-server built with TLS (Debian's is) and the openssl
// CLI; skips without them.

#include "adapters/redis/redis_connection.h"
#include "adapters/redis/redis_device_inbox.h"
#include "adapters/redis/redis_errc.h"

#include "contract/device_inbox/contract_support.h"
#include "contract/device_inbox/device_inbox_contract.h"
#include "unit/net/test_pki.h"
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <thread>

namespace starling::testing {

namespace {

using adapters::redis::open_redis_device_inbox;
using adapters::redis::redis_connection;
using adapters::redis::redis_endpoint;
using adapters::redis::redis_errc;
using adapters::redis::redis_inbox_config;
using adapters::redis::redis_tls;

std::uint16_t unused_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

// A redis-server listening only on a TLS port, with a CA, a server certificate for
// 127.0.0.1/localhost, a client certificate, and a second CA that signed nothing here.
class tls_redis {
  public:
    explicit tls_redis(bool require_client_cert) : require_client_cert_(require_client_cert) {
        pki_.make_ca("ca");
        pki_.make_ca("other-ca");
        pki_.make_cert("server", "redis", "ca");
        pki_.make_cert("client", "starling", "ca");
    }
    ~tls_redis() { stop(); }

    bool start() {
        const auto port = std::to_string(port_);
        const auto cert = pki_.path("server.pem").string();
        const auto key = pki_.path("server.key").string();
        const auto ca = pki_.path("ca.pem").string();
        const char* auth = require_client_cert_ ? "yes" : "no";
        pid_ = ::fork();
        if (pid_ == 0) {
            const int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, 1);
            ::dup2(devnull, 2);
            ::execlp("redis-server", "redis-server", "--port", "0", "--tls-port", port.c_str(),
                     "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--tls-cert-file",
                     cert.c_str(), "--tls-key-file", key.c_str(), "--tls-ca-cert-file", ca.c_str(),
                     "--tls-auth-clients", auth, static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // Polls until a TLS PING answers: the server gives no other sign of readiness.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            redis_connection conn(endpoint(tls()));
            if (conn.connect()) {
                const std::string_view ping[] = {"PING"};
                if (auto reply = conn.command(ping); reply) {
                    return true;
                }
            }
            last_error_ = conn.last_error();
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                return false;  // e.g. a redis-server built without TLS
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }

    void stop() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int status = 0;
            ::waitpid(pid_, &status, 0);
            pid_ = -1;
        }
    }

    redis_tls tls(const std::string& ca = "ca", bool client_cert = true) const {
        redis_tls t{.enabled = true, .ca_file = pki_.path(ca + ".pem").string()};
        if (client_cert) {
            t.cert_file = pki_.path("client.pem").string();
            t.key_file = pki_.path("client.key").string();
        }
        return t;
    }

    redis_endpoint endpoint(const redis_tls& t, const std::string& host = "127.0.0.1") const {
        return redis_endpoint{.host = host,
                              .port = port_,
                              .connect_timeout = std::chrono::seconds(2),
                              .command_timeout = std::chrono::seconds(5),
                              .tls = t};
    }

    std::uint16_t port() const { return port_; }
    const std::string& last_error() const { return last_error_; }

  private:
    bool require_client_cert_;
    net::testing::test_pki pki_;
    std::uint16_t port_ = unused_port();
    pid_t pid_ = -1;
    std::string last_error_;
};

bool have_tools() {
    return std::system(
               "command -v redis-server >/dev/null 2>&1 && "
               "command -v openssl >/dev/null 2>&1") == 0;
}

// One server for the contract suite (not requiring client certificates).
tls_redis* shared_server(std::string* why) {
    static std::string error;
    static std::unique_ptr<tls_redis> server = [] {
        ::signal(SIGPIPE, SIG_IGN);  // as starlingd does: a closed socket is an error, not death
        if (!have_tools()) {
            error = "redis-server or openssl is not installed";
            return std::unique_ptr<tls_redis>();
        }
        auto s = std::make_unique<tls_redis>(false);
        if (!s->start()) {
            error = "redis-server did not start with a TLS port (built without TLS?): " +
                    s->last_error();
            return std::unique_ptr<tls_redis>();
        }
        return s;
    }();
    *why = error;
    return server.get();
}

std::string unique_prefix() {
    static std::atomic<int> counter{0};
    return "tls-test:" + std::to_string(counter++) + ":";
}

redis_inbox_config tls_config(const tls_redis& server, const redis_tls& tls) {
    redis_inbox_config config;
    config.host = "127.0.0.1";
    config.port = server.port();
    config.tls = tls;
    config.connect_timeout = std::chrono::seconds(2);
    config.command_timeout = std::chrono::seconds(5);
    config.key_prefix = unique_prefix();
    return config;
}

class redis_tls_inbox_factory final : public device_inbox_factory {
  public:
    std::string name() const override { return "redis_tls"; }

    std::shared_ptr<device_inbox> create(const inbox_settings& settings,
                                         const clock& clk) override {
        std::string why;
        auto* server = shared_server(&why);
        if (server == nullptr) {
            skip(why);
            return nullptr;
        }
        auto config = tls_config(*server, server->tls("ca", false));
        config.max_messages = settings.max_messages;
        config.default_ttl = std::chrono::milliseconds(settings.default_ttl_ms);
        auto inbox = open_redis_device_inbox(config, clk);
        if (!inbox) {
            ADD_FAILURE() << "open: " << inbox.error().message();
            return nullptr;
        }
        return std::shared_ptr<device_inbox>(std::move(inbox.value()));
    }

  private:
    static void skip(const std::string& why) { GTEST_SKIP() << why; }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(redis_tls, device_inbox_contract,
                         ::testing::Values(std::make_shared<redis_tls_inbox_factory>()),
                         factory_name<device_inbox_factory>);

namespace {

class redis_tls_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        server_ = shared_server(&why);
        if (server_ == nullptr) {
            GTEST_SKIP() << why;
        }
    }
    tls_redis* server_ = nullptr;
};

TEST_F(redis_tls_test, refuses_a_server_the_ca_does_not_vouch_for) {
    redis_connection conn(server_->endpoint(server_->tls("other-ca")));
    auto st = conn.connect();
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), redis_errc::not_connected);
    EXPECT_NE(conn.last_error().find("certificate"), std::string::npos) << conn.last_error();
}

TEST_F(redis_tls_test, plain_text_client_gets_nothing) {
    redis_connection conn(server_->endpoint(redis_tls{}));
    if (conn.connect()) {
        const std::string_view ping[] = {"PING"};
        auto reply = conn.command(ping);
        EXPECT_FALSE(reply && adapters::redis::reply_text(**reply) == "PONG");
    }
}

TEST_F(redis_tls_test, large_values_cross_intact) {
    redis_connection conn(server_->endpoint(server_->tls()));
    ASSERT_TRUE(conn.connect()) << conn.last_error();
    std::string value(3 * 1024 * 1024 + 17, '\0');
    for (std::size_t i = 0; i < value.size(); ++i) {
        value[i] = static_cast<char>((i * 131) % 251);
    }
    const std::string key = unique_prefix() + "large";
    const std::string_view set[] = {"SET", key, value};
    auto stored = conn.command(set);
    ASSERT_TRUE(stored);
    EXPECT_EQ(adapters::redis::reply_text(**stored), "OK");
    const std::string_view get[] = {"GET", key};
    auto read = conn.command(get);
    ASSERT_TRUE(read);
    EXPECT_TRUE(adapters::redis::reply_text(**read) == value);
    const std::string_view del[] = {"DEL", key};
    (void)conn.command(del);
}

TEST(redis_tls_mutual, needs_the_client_certificate) {
    ::signal(SIGPIPE, SIG_IGN);
    if (!have_tools()) {
        GTEST_SKIP() << "redis-server or openssl is not installed";
    }
    tls_redis server(true);
    if (!server.start()) {
        GTEST_SKIP() << "redis-server did not start with a TLS port";
    }
    redis_connection without(server.endpoint(server.tls("ca", false)));
    bool refused = !without.connect();
    if (!refused) {
        // TLS 1.3 finishes the client's handshake before the server checks the certificate:
        // the refusal shows on the first command.
        const std::string_view ping[] = {"PING"};
        auto reply = without.command(ping);
        refused = !reply || adapters::redis::reply_text(**reply) != "PONG";
    }
    EXPECT_TRUE(refused);

    redis_connection with(server.endpoint(server.tls("ca", true)));
    ASSERT_TRUE(with.connect()) << with.last_error();
    const std::string_view ping[] = {"PING"};
    auto reply = with.command(ping);
    ASSERT_TRUE(reply);
    EXPECT_EQ(adapters::redis::reply_text(**reply), "PONG");
}

TEST(redis_tls_outage, calls_fail_while_the_server_is_gone_and_recover_after) {
    ::signal(SIGPIPE, SIG_IGN);
    if (!have_tools()) {
        GTEST_SKIP() << "redis-server or openssl is not installed";
    }
    tls_redis server(false);
    if (!server.start()) {
        GTEST_SKIP() << "redis-server did not start with a TLS port";
    }
    auto config = tls_config(server, server.tls("ca", false));
    config.connections = 1;
    config.reconnect_min = std::chrono::milliseconds(20);
    config.reconnect_max = std::chrono::milliseconds(200);
    manual_clock clk;
    auto opened = open_redis_device_inbox(config, clk);
    ASSERT_TRUE(opened) << opened.error().message();
    auto& inbox = *opened.value();
    auto append = [&](const std::string& record) {
        std::vector<inbox_entry> batch{{.record = record}};
        return await<result<device_inbox::append_result>>(
            [&](auto done) { inbox.append("device", std::move(batch), std::move(done)); });
    };
    ASSERT_TRUE(append("before"));
    server.stop();
    EXPECT_FALSE(append("while-gone"));
    ASSERT_TRUE(server.start());
    // The worker reconnects in the background (backoff ≤ 200 ms); poll the next calls.
    result<device_inbox::append_result> after = make_error_code(redis_errc::not_connected);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!after && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        after = append("after");
    }
    ASSERT_TRUE(after) << after.error().message();
}

}  // namespace

}  // namespace starling::testing
