#include "auth/http_provider.h"

#include "unit/auth/provider_test_support.h"
#include "unit/auth/test_http_server.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <regex>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;
using test::io_thread;
using test::scripted_response;
using test::test_http_server;

auth_request make_request(std::string client_id = "dev-1", std::string username = "alice",
                          std::string password = "secret") {
    auth_request r;
    r.client_id = std::move(client_id);
    r.username = std::move(username);
    r.password = std::move(password);
    r.remote_address = "127.0.0.1:5555";
    return r;
}

using test::authenticate;
using test::matches;

http_provider_options options_for(const test_http_server& server) {
    http_provider_options o;
    o.rest_endpoint_url = server.url();
    o.read_timeout = 5000ms;
    return o;
}

TEST(http_provider, allows_on_2xx_with_client_type_and_rules_from_the_answer) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{200, R"({"clientType": "APPLICATION",
                                          "pubAuthRulePatterns": ["sensors/.*"]})"};
    });
    io_thread io;
    http_provider provider(options_for(server), io.executor());

    const auto r = authenticate(provider, make_request());

    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
    EXPECT_EQ(r.type, client_type::application);
    ASSERT_TRUE(r.rules);
    EXPECT_FALSE(r.rules->allow_all);
    EXPECT_TRUE(matches(r.rules->publish, "sensors/t1"));
    EXPECT_FALSE(matches(r.rules->publish, "actuators/t1"));
    // The subscribe side was not in the answer: the configured authRules (".*") apply.
    EXPECT_TRUE(matches(r.rules->subscribe, "anything/at/all"));

    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "POST");
    EXPECT_EQ(requests[0].target, "/auth");
    EXPECT_EQ(requests[0].headers.at("Content-Type"), "application/json");
    const auto body = nlohmann::json::parse(requests[0].body);
    EXPECT_EQ(body["clientId"], "dev-1");
    EXPECT_EQ(body["username"], "alice");
    EXPECT_EQ(body["password"], "secret");
}

TEST(http_provider, plain_2xx_uses_defaults) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{204, "", "text/plain"};
    });
    io_thread io;
    auto o = options_for(server);
    o.default_client_type = client_type::application;
    http_provider provider(o, io.executor());

    const auto r = authenticate(provider, make_request());

    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
    EXPECT_EQ(r.type, client_type::application);
    ASSERT_TRUE(r.rules);
    EXPECT_TRUE(r.rules->allow_all);
}

TEST(http_provider, denies_401_and_403_as_bad_credentials) {
    std::atomic<unsigned> status{401};
    test_http_server server([&status](const test::recorded_request&) {
        return scripted_response{status.load(), R"({"error": "nope"})"};
    });
    io_thread io;
    http_provider provider(options_for(server), io.executor());

    const auto r401 = authenticate(provider, make_request());
    EXPECT_EQ(r401.outcome, verdict::deny);
    EXPECT_TRUE(r401.bad_credentials);
    EXPECT_FALSE(is_provider_unavailable(r401));
    EXPECT_NE(r401.reason.find("401"), std::string::npos) << r401.reason;

    status = 403;  // the server thread reads it only while handling the next request
    const auto r403 = authenticate(provider, make_request());
    EXPECT_EQ(r403.outcome, verdict::deny);
    EXPECT_TRUE(r403.bad_credentials);
    EXPECT_FALSE(is_provider_unavailable(r403));
}

TEST(http_provider, status_500_fails_closed_as_unavailable) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{500, "boom", "text/plain"};
    });
    io_thread io;
    http_provider provider(options_for(server), io.executor());

    const auto r = authenticate(provider, make_request());

    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(r)) << r.reason;
    EXPECT_FALSE(r.bad_credentials);
    EXPECT_NE(r.reason.find("500"), std::string::npos) << r.reason;
}

TEST(http_provider, silent_server_is_bounded_by_read_timeout) {
    test_http_server server([](const test::recorded_request&) {
        return std::optional<scripted_response>{};  // never answers
    });
    io_thread io;
    auto o = options_for(server);
    o.read_timeout = 300ms;
    http_provider provider(o, io.executor());

    const auto start = std::chrono::steady_clock::now();
    const auto r = authenticate(provider, make_request());
    const auto elapsed = std::chrono::steady_clock::now() - start;

    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(r)) << r.reason;
    EXPECT_NE(r.reason.find("timeout"), std::string::npos) << r.reason;
    EXPECT_GE(elapsed, 250ms);
    EXPECT_LT(elapsed, 5s);
    EXPECT_EQ(provider.in_flight(), 0u);
}

TEST(http_provider, unreachable_endpoint_is_a_transport_failure) {
    std::string dead_url;
    {
        test_http_server gone([](const test::recorded_request&) { return scripted_response{}; });
        dead_url = gone.url();
    }  // its port is closed now
    io_thread io;
    http_provider_options o;
    o.rest_endpoint_url = dead_url;
    o.read_timeout = 2000ms;
    http_provider provider(o, io.executor());

    const auto r = authenticate(provider, make_request());

    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(r)) << r.reason;
}

TEST(http_provider, requests_beyond_the_parallel_limit_are_refused_and_counted) {
    test_http_server server([](const test::recorded_request&) {
        return std::optional<scripted_response>{};  // hold every request
    });
    io_thread io;
    auto o = options_for(server);
    o.max_parallel_requests = 2;
    o.read_timeout = 400ms;
    http_provider provider(o, io.executor());

    std::promise<auth_result> p1;
    std::promise<auth_result> p2;
    provider.authenticate(make_request("a"), [&p1](auth_result r) { p1.set_value(r); });
    provider.authenticate(make_request("b"), [&p2](auth_result r) { p2.set_value(r); });
    EXPECT_EQ(provider.in_flight(), 2u);

    // The third is answered at once, before either of the held requests ends.
    std::optional<auth_result> third;
    provider.authenticate(make_request("c"), [&third](auth_result r) { third = std::move(r); });
    ASSERT_TRUE(third.has_value());
    EXPECT_EQ(third->outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(*third));
    EXPECT_NE(third->reason.find("too many pending auth requests"), std::string::npos);
    // Shed, not failed: a flood must not open the circuit breaker for everyone.
    EXPECT_TRUE(third->shed);
    EXPECT_FALSE(third->failed);
    EXPECT_EQ(provider.rejected_overload(), 1u);

    auto f1 = p1.get_future();
    auto f2 = p2.get_future();
    ASSERT_EQ(f1.wait_for(10s), std::future_status::ready);
    ASSERT_EQ(f2.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(f1.get().outcome, verdict::deny);
    EXPECT_EQ(f2.get().outcome, verdict::deny);
    EXPECT_EQ(provider.in_flight(), 0u);
}

TEST(http_provider, body_template_escapes_values_as_json) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{200, "{}"};
    });
    io_thread io;
    auto o = options_for(server);
    o.request_body = R"({"id":"${clientId}","user":"${username}","pw":"${password}","k":1})";
    http_provider provider(o, io.executor());

    const std::string nasty_password = "pa\"ss\\word\n\x01\"}, \"admin\": true, \"x\": \"";
    const std::string nasty_user = "al\u00e9ce \"quoted\"";
    const auto r = authenticate(provider, make_request("c\"1", nasty_user, nasty_password));
    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;

    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 1u);
    const auto body = nlohmann::json::parse(requests[0].body);  // throws if not valid JSON
    EXPECT_EQ(body.size(), 4u);
    EXPECT_EQ(body["id"], "c\"1");
    EXPECT_EQ(body["user"], nasty_user);
    EXPECT_EQ(body["pw"], nasty_password);
    EXPECT_EQ(body["k"], 1);
    EXPECT_FALSE(body.contains("admin"));
}

TEST(http_provider, invalid_utf8_password_still_gives_valid_json) {
    http_provider_options o;
    io_thread io;
    http_provider provider(o, io.executor());
    auto request = make_request();
    request.password = std::string("\xff\xfe", 2);
    request.username.reset();
    const auto body = nlohmann::json::parse(provider.render_body(request));
    EXPECT_EQ(body["username"], "");
    EXPECT_EQ(body["password"], "\xEF\xBF\xBD\xEF\xBF\xBD");  // two U+FFFD
}

TEST(http_provider, reuses_keep_alive_connections) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{200, "{}"};
    });
    io_thread io;
    http_provider provider(options_for(server), io.executor());

    for (int i = 0; i < 5; ++i) {
        ASSERT_EQ(authenticate(provider, make_request()).outcome, verdict::allow);
    }
    EXPECT_EQ(server.requests().size(), 5u);
    EXPECT_EQ(server.accepts(), 1u);
    EXPECT_EQ(provider.connections_opened(), 1u);
}

TEST(http_provider, server_closing_connections_costs_a_new_connection_each_time) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{200, "{}", "application/json", /*close=*/true};
    });
    io_thread io;
    http_provider provider(options_for(server), io.executor());

    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(authenticate(provider, make_request()).outcome, verdict::allow);
    }
    EXPECT_EQ(server.accepts(), 3u);
}

TEST(http_provider, method_headers_and_basic_credentials_are_sent) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{200, "{}"};
    });
    io_thread io;
    auto o = options_for(server);
    o.request_method = "PUT";
    o.headers.emplace_back("X-Api-Key", "k1");
    o.basic_username = "svc";
    o.basic_password = "pw";
    http_provider provider(o, io.executor());

    ASSERT_EQ(authenticate(provider, make_request()).outcome, verdict::allow);
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].method, "PUT");
    EXPECT_EQ(requests[0].headers.at("X-Api-Key"), "k1");
    EXPECT_EQ(requests[0].headers.at("Authorization"), "Basic c3ZjOnB3");
}

TEST(http_provider, invalid_rule_in_the_answer_fails_closed) {
    test_http_server server([](const test::recorded_request&) {
        return scripted_response{200, R"({"subAuthRulePatterns": ["(unclosed"]})"};
    });
    io_thread io;
    http_provider provider(options_for(server), io.executor());

    const auto r = authenticate(provider, make_request());
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(r)) << r.reason;
}

// A self-signed certificate for 127.0.0.1 (the test's trust anchor), written to a file for
// the client's ca_file; the file is removed at destruction.
class self_signed_cert {
  public:
    self_signed_cert() {
        EVP_PKEY* key = EVP_EC_gen("P-256");
        X509* x = X509_new();
        X509_set_version(x, 2);
        ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
        X509_gmtime_adj(X509_getm_notBefore(x), -60);
        X509_gmtime_adj(X509_getm_notAfter(x), 3600);
        X509_set_pubkey(x, key);
        X509_NAME* name = X509_get_subject_name(x);
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
        X509_set_issuer_name(x, name);
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
        X509_EXTENSION* san =
            X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1");
        X509_add_ext(x, san, -1);
        X509_EXTENSION_free(san);
        X509_sign(x, key, EVP_sha256());

        BIO* bio = BIO_new(BIO_s_mem());
        PEM_write_bio_X509(bio, x);
        cert_pem_ = drain(bio);
        bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
        key_pem_ = drain(bio);
        X509_free(x);
        EVP_PKEY_free(key);

        path_ = std::filesystem::temp_directory_path() /
                ("starling-auth-ca-" + std::to_string(::getpid()) + "-" +
                 std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".pem");
        std::ofstream(path_) << cert_pem_;
        server_context_.use_certificate_chain(boost::asio::buffer(cert_pem_));
        server_context_.use_private_key(boost::asio::buffer(key_pem_),
                                        boost::asio::ssl::context::pem);
    }
    ~self_signed_cert() { std::filesystem::remove(path_); }

    std::string ca_file() const { return path_.string(); }
    boost::asio::ssl::context* server_context() { return &server_context_; }

  private:
    static std::string drain(BIO* bio) {
        char* data = nullptr;
        const long n = BIO_get_mem_data(bio, &data);
        std::string out(data, static_cast<std::size_t>(n));
        BIO_free(bio);
        return out;
    }

    std::string cert_pem_;
    std::string key_pem_;
    std::filesystem::path path_;
    boost::asio::ssl::context server_context_{boost::asio::ssl::context::tls_server};
};

TEST(http_provider, https_endpoint_verified_against_the_configured_trust_store) {
    self_signed_cert cert;
    test_http_server server(
        [](const test::recorded_request&) {
            return scripted_response{200, R"({"clientType": "APPLICATION"})"};
        },
        cert.server_context());
    io_thread io;
    auto o = options_for(server);
    ASSERT_TRUE(o.rest_endpoint_url.starts_with("https://"));
    o.ca_file = cert.ca_file();
    http_provider provider(o, io.executor());

    for (int i = 0; i < 3; ++i) {
        const auto r = authenticate(provider, make_request());
        ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
        EXPECT_EQ(r.type, client_type::application);
    }
    EXPECT_EQ(server.accepts(), 1u);  // one TLS handshake, then keep-alive
}

TEST(http_provider, https_endpoint_with_an_untrusted_certificate_fails_closed) {
    self_signed_cert cert;
    test_http_server server(
        [](const test::recorded_request&) {
            return scripted_response{200, "{}"};
        },
        cert.server_context());
    io_thread io;
    auto o = options_for(server);  // system trust store: the test certificate is unknown
    http_provider provider(o, io.executor());

    const auto r = authenticate(provider, make_request());
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_TRUE(is_provider_unavailable(r)) << r.reason;
    EXPECT_NE(r.reason.find("TLS"), std::string::npos) << r.reason;
    EXPECT_TRUE(server.requests().empty());
}

TEST(http_provider_options, validation_names_the_key) {
    http_provider_options o;
    EXPECT_FALSE(o.validation_error().has_value());

    o.rest_endpoint_url = "ftp://example.com";
    ASSERT_TRUE(o.validation_error().has_value());
    EXPECT_TRUE(o.validation_error()->starts_with("restEndpointUrl:"));

    o = {};
    o.max_parallel_requests = 0;
    EXPECT_TRUE(o.validation_error()->starts_with("maxParallelRequestsCount:"));

    o = {};
    o.auth_rules.publish = {"[bad"};
    EXPECT_TRUE(o.validation_error()->starts_with("authRules:"));

    io_thread io;
    o = {};
    o.rest_endpoint_url = "localhost:8080";
    EXPECT_THROW(http_provider(o, io.executor()), std::invalid_argument);
}

TEST(url, parses_http_and_https) {
    auto u = url::parse("https://auth.example.com/v1/check?x=1");
    ASSERT_TRUE(u);
    EXPECT_TRUE(u->tls);
    EXPECT_EQ(u->host, "auth.example.com");
    EXPECT_EQ(u->port, 443);
    EXPECT_EQ(u->target, "/v1/check?x=1");

    u = url::parse("http://[::1]:8080");
    ASSERT_TRUE(u);
    EXPECT_EQ(u->host, "::1");
    EXPECT_EQ(u->port, 8080);
    EXPECT_EQ(u->target, "/");

    EXPECT_FALSE(url::parse("http://:80/"));
    EXPECT_FALSE(url::parse("http://host:99999/"));
    EXPECT_FALSE(url::parse("http://user:pw@host/"));
}

}  // namespace
}  // namespace starling::auth
