#include "net/tls_transport.h"

#include "net/tls_context.h"

#include "net_test_support.h"
#include "test_pki.h"
#include <boost/asio/ssl.hpp>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <atomic>
#include <thread>

namespace starling::net::testing {
namespace {

namespace asio = boost::asio;
namespace ssl = asio::ssl;

// A blocking TLS client on the test thread.
class tls_client {
  public:
    tls_client(std::uint16_t port, ssl::context& ctx) : stream_(context_, ctx) {
        stream_.lowest_layer().connect({asio::ip::make_address("127.0.0.1"), port});
    }
    boost::system::error_code handshake() {
        boost::system::error_code ec;
        stream_.handshake(ssl::stream_base::client, ec);
        return ec;
    }
    void write(std::string_view bytes) {
        asio::write(stream_, asio::buffer(bytes.data(), bytes.size()));
    }
    std::string read_exactly(std::size_t n) {
        std::string out(n, '\0');
        asio::read(stream_, asio::buffer(out));
        return out;
    }
    // The CN of the server certificate this connection got.
    std::string server_cn() {
        X509* cert = SSL_get_peer_certificate(stream_.native_handle());
        if (cert == nullptr) {
            return {};
        }
        std::array<char, 256> cn{};
        X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn.data(),
                                  static_cast<int>(cn.size()));
        X509_free(cert);
        return cn.data();
    }
    ssl::stream<asio::ip::tcp::socket>& stream() { return stream_; }

  private:
    asio::io_context context_;
    ssl::stream<asio::ip::tcp::socket> stream_;
};

std::string der_of(const std::filesystem::path& pem) {
    std::string out;
    if (FILE* f = std::fopen(pem.c_str(), "r")) {
        if (X509* cert = PEM_read_X509(f, nullptr, nullptr, nullptr)) {
            unsigned char* der = nullptr;
            const int n = i2d_X509(cert, &der);
            out.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
            OPENSSL_free(der);
            X509_free(cert);
        }
        std::fclose(f);
    }
    return out;
}

class tls_test : public net_test {
  protected:
    void SetUp() override {
        net_test::SetUp();
        pki_.make_ca("ca");
        pki_.make_cert("server", "server-one", "ca");
        pki_.make_ca("other-ca");
        pki_.make_cert("client", "device-7", "ca");
        pki_.make_cert("stranger", "intruder", "other-ca");
    }

    tls_options server_options() {
        tls_options o;
        o.listener = "ssl";
        o.cert_file = pki_.path("server.pem");
        o.key_file = pki_.path("server.key");
        o.trust_store = pki_.path("ca.pem");
        o.reload_interval = std::chrono::milliseconds{0};
        return o;
    }

    // Listens with TLS; received bytes are echoed back.
    void listen_tls(tls_options options,
                    std::chrono::milliseconds timeout = std::chrono::seconds{10}) {
        contexts_ = tls_context_provider::create(pool_.context(), std::move(options));
        handshake_options h;
        h.timeout = timeout;
        h.on_failure = [this](std::string_view reason) {
            std::lock_guard lock(failures_mutex_);
            failures_.emplace_back(reason);
        };
        listener_options lo;
        lo.handshake = std::make_shared<tls_handshaker>(contexts_, h);
        listen(lo, [](connection& conn, recording_handler&, std::span<const std::uint8_t> b) {
            conn.send(std::string(reinterpret_cast<const char*>(b.data()), b.size()));
        });
    }

    ssl::context client_context(const std::string& cert = {}) {
        ssl::context ctx(ssl::context::tls_client);
        ctx.load_verify_file(pki_.path("ca.pem").string());
        ctx.set_verify_mode(ssl::verify_peer);
        if (!cert.empty()) {
            ctx.use_certificate_chain_file(pki_.path(cert + ".pem").string());
            ctx.use_private_key_file(pki_.path(cert + ".key").string(), ssl::context::pem);
        }
        return ctx;
    }

    std::vector<std::string> failures() {
        std::lock_guard lock(failures_mutex_);
        return failures_;
    }

    test_pki pki_;
    std::shared_ptr<tls_context_provider> contexts_;
    std::mutex failures_mutex_;
    std::vector<std::string> failures_;
};

TEST_F(tls_test, echo_through_a_real_socket_pair) {
    listen_tls(server_options());
    auto ctx = client_context();
    tls_client client(port(), ctx);
    ASSERT_FALSE(client.handshake());
    client.write("hello over tls");
    EXPECT_EQ(client.read_exactly(14), "hello over tls");
    auto a = next_accepted();
    ASSERT_NE(a.conn->tls_peer(), nullptr);
    EXPECT_EQ(a.conn->tls_peer()->protocol, "TLSv1.3");
    EXPECT_FALSE(a.conn->tls_peer()->cipher.empty());
    EXPECT_TRUE(a.conn->tls_peer()->der_chain.empty());  // client_auth none
    EXPECT_FALSE(a.conn->tls_peer()->verified);
    EXPECT_NE(a.conn->remote_address().find("127.0.0.1:"), std::string::npos);
}

TEST_F(tls_test, tls_1_2_client_is_refused_when_the_listener_wants_1_3) {
    auto options = server_options();
    options.min_protocol = tls_protocol::tls_1_3;
    listen_tls(options);
    auto ctx = client_context();
    SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    tls_client client(port(), ctx);
    EXPECT_TRUE(client.handshake());
    // The failure is counted once the server side gave up.
    for (int i = 0; i < 3000 && failures().empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});  // polling with a deadline
    }
    EXPECT_EQ(failures(), std::vector<std::string>{"tls"});
}

TEST_F(tls_test, tls_1_2_client_is_accepted_by_default) {
    listen_tls(server_options());
    auto ctx = client_context();
    SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    tls_client client(port(), ctx);
    ASSERT_FALSE(client.handshake());
    client.write("x");
    EXPECT_EQ(client.read_exactly(1), "x");
    EXPECT_EQ(next_accepted().conn->tls_peer()->protocol, "TLSv1.2");
}

TEST_F(tls_test, required_client_certificate_is_verified_and_exposed) {
    auto options = server_options();
    options.client_auth = client_auth_mode::required;
    listen_tls(options);
    auto ctx = client_context("client");
    tls_client client(port(), ctx);
    ASSERT_FALSE(client.handshake());
    client.write("ping");
    EXPECT_EQ(client.read_exactly(4), "ping");
    auto a = next_accepted();
    const auto* peer = a.conn->tls_peer();
    ASSERT_NE(peer, nullptr);
    EXPECT_TRUE(peer->verified);
    EXPECT_EQ(peer->subject_cn, "device-7");
    // Leaf first (OpenSSL clients append the chain from their trust store by themselves).
    ASSERT_GE(peer->der_chain.size(), 1U);
    EXPECT_EQ(peer->der_chain[0], der_of(pki_.path("client.pem")));
    if (peer->der_chain.size() > 1) {
        EXPECT_EQ(peer->der_chain[1], der_of(pki_.path("ca.pem")));
    }
}

TEST_F(tls_test, required_client_certificate_missing_or_from_another_ca_is_refused) {
    auto options = server_options();
    options.client_auth = client_auth_mode::required;
    listen_tls(options);
    for (const std::string cert : {"", "stranger"}) {
        auto ctx = client_context(cert);
        tls_client client(port(), ctx);
        // TLS 1.3: the client's handshake may finish before the server's verdict arrives, so
        // the refusal shows on the first read at the latest.
        auto ec = client.handshake();
        if (!ec) {
            client.write("x");
            std::array<char, 1> byte{};
            client.stream().read_some(asio::buffer(byte), ec);
        }
        EXPECT_TRUE(ec) << "certificate '" << cert << "' was accepted";
    }
    for (int i = 0; i < 3000 && failures().size() < 2; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});  // polling with a deadline
    }
    EXPECT_EQ(failures().size(), 2U);
}

TEST_F(tls_test, requested_client_certificate_is_optional_and_verified_flag_tells) {
    auto options = server_options();
    options.client_auth = client_auth_mode::requested;
    listen_tls(options);
    {
        auto ctx = client_context("stranger");
        tls_client client(port(), ctx);
        ASSERT_FALSE(client.handshake());
        client.write("a");
        EXPECT_EQ(client.read_exactly(1), "a");
        const auto* peer = next_accepted().conn->tls_peer();
        EXPECT_FALSE(peer->verified);
        EXPECT_EQ(peer->subject_cn, "intruder");
    }
    {
        auto ctx = client_context();
        tls_client client(port(), ctx);
        ASSERT_FALSE(client.handshake());
        client.write("b");
        EXPECT_EQ(client.read_exactly(1), "b");
        const auto* peer = next_accepted().conn->tls_peer();
        EXPECT_FALSE(peer->verified);
        EXPECT_TRUE(peer->der_chain.empty());
    }
}

TEST_F(tls_test, silent_client_is_dropped_after_the_handshake_timeout) {
    listen_tls(server_options(), std::chrono::milliseconds{200});
    test_client silent(port());
    boost::system::error_code end;
    const auto got = silent.read_to_end(end);  // returns when the server closes
    EXPECT_TRUE(got.empty());
    EXPECT_TRUE(end);
    for (int i = 0; i < 3000 && failures().empty(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds{1});  // polling with a deadline
    }
    EXPECT_EQ(failures(), std::vector<std::string>{"timeout"});
}

TEST_F(tls_test, changed_certificate_is_used_for_new_handshakes_and_a_broken_one_is_ignored) {
    listen_tls(server_options());
    auto ctx = client_context();
    tls_client before(port(), ctx);
    ASSERT_FALSE(before.handshake());
    EXPECT_EQ(before.server_cn(), "server-one");
    EXPECT_FALSE(contexts_->check_for_changes());  // nothing changed yet

    pki_.make_cert("server", "server-two", "ca");  // rewrites server.pem and server.key
    EXPECT_TRUE(contexts_->check_for_changes());
    tls_client after(port(), ctx);
    ASSERT_FALSE(after.handshake());
    EXPECT_EQ(after.server_cn(), "server-two");
    // The connection made before the reload still works.
    before.write("still here");
    EXPECT_EQ(before.read_exactly(10), "still here");

    std::ofstream(pki_.path("server.pem"), std::ios::trunc) << "not a certificate\n";
    EXPECT_FALSE(contexts_->check_for_changes());
    EXPECT_EQ(contexts_->reload_failures(), 1U);
    tls_client third(port(), ctx);
    ASSERT_FALSE(third.handshake());
    EXPECT_EQ(third.server_cn(), "server-two");
}

TEST(tls_context, bad_files_and_cipher_names_are_reported) {
    test_pki pki;
    pki.make_ca("ca");
    pki.make_cert("server", "s", "ca");
    tls_options o;
    o.cert_file = pki.path("missing.pem");
    o.key_file = pki.path("server.key");
    auto built = build_tls_context(o);
    EXPECT_EQ(built.context, nullptr);
    EXPECT_NE(built.error.find("missing.pem"), std::string::npos) << built.error;

    o.cert_file = pki.path("server.pem");
    o.key_file = pki.path("ca.key");
    built = build_tls_context(o);
    EXPECT_NE(built.error.find("ca.key"), std::string::npos) << built.error;

    o.key_file = pki.path("server.key");
    o.cipher_suites = "TLS_NO_SUCH_CIPHER";
    built = build_tls_context(o);
    EXPECT_NE(built.error.find("TLS_NO_SUCH_CIPHER"), std::string::npos) << built.error;

    o.cipher_suites = "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256";
    built = build_tls_context(o);
    EXPECT_NE(built.context, nullptr) << built.error;
}

}  // namespace
}  // namespace starling::net::testing
