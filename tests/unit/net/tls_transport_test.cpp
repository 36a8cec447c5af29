#include "net/tls_transport.h"

#include "net/tls_context.h"

#include "net_test_support.h"
#include "test_pki.h"
#include <boost/asio/ssl.hpp>
#include <gtest/gtest.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <fstream>
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

// The attack on X_509 identity: a device certificate (CN device-7, signed by the trusted CA)
// with a self-signed certificate CN gw-1 appended to the chain the client sends. The listener
// must expose the chain it verified (device-7 → ca), never the appended certificate, which
// X_509 authentication would otherwise read as an issuer of the leaf.
std::string appended_chain_file(test_pki& pki) {
    pki.make_ca("gw-1");  // self-signed, CN gw-1
    const auto path = pki.path("client-with-gw.pem");
    std::ofstream out(path);
    for (const auto* name : {"client.pem", "gw-1.pem"}) {
        std::ifstream in(pki.path(name));
        out << in.rdbuf();
    }
    return path.string();
}

// The CN of each certificate of a DER chain, in order (readable test failures).
std::vector<std::string> common_names(const std::vector<std::string>& der_chain) {
    std::vector<std::string> out;
    for (const auto& der : der_chain) {
        const auto* p = reinterpret_cast<const unsigned char*>(der.data());
        X509* cert = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
        std::array<char, 256> cn{};
        if (cert != nullptr) {
            X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn.data(),
                                      static_cast<int>(cn.size()));
            X509_free(cert);
        }
        out.emplace_back(cn.data());
    }
    return out;
}

class tls_chain_test : public tls_test {
  protected:
    // Connects with device-7's certificate followed by a self-signed gw-1 and returns what the
    // listener recorded about the peer. With `resume`, connects a second time resuming the
    // first connection's session and returns the second connection's view.
    tls_peer_info connect_with_appended_certificate(client_auth_mode mode, bool resume = false,
                                                    bool tls_1_2 = false) {
        auto options = server_options();
        options.client_auth = mode;
        listen_tls(options);
        if (resume) {
            // The listener sets no session id context, so OpenSSL never resumes its sessions;
            // set one here to reach the resumed-session path.
            static constexpr unsigned char sid_ctx[] = "tls-chain-test";
            SSL_CTX_set_session_id_context(contexts_->current()->native_handle(), sid_ctx,
                                           sizeof(sid_ctx) - 1);
        }
        ssl::context ctx(ssl::context::tls_client);
        if (tls_1_2) {
            SSL_CTX_set_max_proto_version(ctx.native_handle(), TLS1_2_VERSION);
        }
        ctx.load_verify_file(pki_.path("ca.pem").string());
        ctx.set_verify_mode(ssl::verify_peer);
        ctx.use_certificate_chain_file(appended_chain_file(pki_));
        ctx.use_private_key_file(pki_.path("client.key").string(), ssl::context::pem);
        SSL_SESSION* session = nullptr;
        tls_peer_info first;
        {
            tls_client client(port(), ctx);
            EXPECT_FALSE(client.handshake());
            client.write("p");
            EXPECT_EQ(client.read_exactly(1), "p");  // TLS 1.3: the session ticket came too
            first = *next_accepted().conn->tls_peer();
            session = SSL_get1_session(client.stream().native_handle());
            boost::system::error_code ignored;
            client.stream().shutdown(ignored);  // a clean close keeps the session resumable
        }
        if (!resume) {
            SSL_SESSION_free(session);
            return first;
        }
        tls_client again(port(), ctx);
        SSL_set_session(again.stream().native_handle(), session);
        SSL_SESSION_free(session);
        tls_peer_info second;
        if (again.handshake()) {
            resumed_ = false;  // the listener refused to resume: nothing more to check
            return second;
        }
        again.write("q");
        EXPECT_EQ(again.read_exactly(1), "q");
        resumed_ = SSL_session_reused(again.stream().native_handle()) == 1;
        second = *next_accepted().conn->tls_peer();
        return second;
    }

    void expect_only_the_verified_chain(const tls_peer_info& peer) {
        EXPECT_TRUE(peer.verified);
        EXPECT_EQ(peer.subject_cn, "device-7");
        EXPECT_EQ(common_names(peer.der_chain), (std::vector<std::string>{"device-7", "ca"}));
        const std::vector<std::string> verified{der_of(pki_.path("client.pem")),
                                                der_of(pki_.path("ca.pem"))};
        EXPECT_TRUE(peer.der_chain == verified);
    }

    bool resumed_ = false;
};

TEST_F(tls_chain_test, required_client_auth_exposes_only_the_verified_chain) {
    expect_only_the_verified_chain(connect_with_appended_certificate(client_auth_mode::required));
}

TEST_F(tls_chain_test, requested_client_auth_exposes_only_the_verified_chain) {
    expect_only_the_verified_chain(connect_with_appended_certificate(client_auth_mode::requested));
}

// A resumed session keeps the verification verdict but not the verified chain: the listener
// then exposes the leaf alone, never the chain the client sent in the first handshake.
TEST_F(tls_chain_test, resumed_session_exposes_the_leaf_alone) {
    for (const bool tls_1_2 : {false, true}) {
        SCOPED_TRACE(tls_1_2 ? "TLS 1.2" : "TLS 1.3");
        const auto peer =
            connect_with_appended_certificate(client_auth_mode::required, true, tls_1_2);
        EXPECT_TRUE(resumed_);
        EXPECT_TRUE(peer.verified);
        EXPECT_EQ(common_names(peer.der_chain), std::vector<std::string>{"device-7"});
        EXPECT_TRUE(peer.der_chain == std::vector<std::string>{der_of(pki_.path("client.pem"))});
        listener_->stop();
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

// tlsCertificateExpiry_seconds reads this: the served certificate's notAfter, and the new one's
// after a reload.
TEST_F(tls_test, certificate_expiry_follows_the_served_certificate) {
    listen_tls(server_options());
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    constexpr std::int64_t day = 24 * 3600;
    const auto first = contexts_->certificate_not_after();
    ASSERT_TRUE(first.has_value());
    EXPECT_NEAR(static_cast<double>(*first - now), 2.0 * day, 600.0);

    pki_.make_cert("server", "server-two", "ca", 30);
    ASSERT_TRUE(contexts_->check_for_changes());
    const auto second = contexts_->certificate_not_after();
    ASSERT_TRUE(second.has_value());
    EXPECT_NEAR(static_cast<double>(*second - now), 30.0 * day, 600.0);
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
