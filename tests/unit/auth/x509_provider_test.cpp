// X_509 provider against certificates made here: a CA, a leaf it signed, and a self-signed
// impostor with the same CN.

#include "auth/x509_provider.h"

#include "adapters/embedded/sqlite_metadata_store.h"
#include "auth/credentials.h"

#include "auth_test_support.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <future>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;

struct key_and_cert {
    EVP_PKEY* key = nullptr;
    X509* cert = nullptr;
    ~key_and_cert() {
        X509_free(cert);
        EVP_PKEY_free(key);
    }
    std::string der() const {
        unsigned char* out = nullptr;
        const int n = i2d_X509(cert, &out);
        std::string der(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
        OPENSSL_free(out);
        return der;
    }
};

// A certificate for `cn`, signed by `issuer` (self-signed when null), valid from
// now + not_before_days for `days` days.
std::unique_ptr<key_and_cert> make_cert(const std::string& cn, const key_and_cert* issuer, bool ca,
                                        long not_before_days = -1, long days = 30) {
    auto kc = std::make_unique<key_and_cert>();
    kc->key = EVP_EC_gen("P-256");
    kc->cert = X509_new();
    X509_set_version(kc->cert, 2);
    static long serial = 1;
    ASN1_INTEGER_set(X509_get_serialNumber(kc->cert), serial++);
    X509_gmtime_adj(X509_getm_notBefore(kc->cert), not_before_days * 86400);
    X509_gmtime_adj(X509_getm_notAfter(kc->cert), (not_before_days + days) * 86400);
    X509_set_pubkey(kc->cert, kc->key);
    X509_NAME* name = X509_get_subject_name(kc->cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(kc->cert, issuer ? X509_get_subject_name(issuer->cert) : name);
    if (ca) {
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, kc->cert, kc->cert, nullptr, nullptr, 0);
        X509_EXTENSION* ext =
            X509V3_EXT_conf_nid(nullptr, &ctx, NID_basic_constraints, "critical,CA:TRUE");
        X509_add_ext(kc->cert, ext, -1);
        X509_EXTENSION_free(ext);
    }
    X509_sign(kc->cert, issuer ? issuer->key : kc->key, EVP_sha256());
    return kc;
}

class x509_provider_test : public ::testing::Test {
  protected:
    x509_provider_test() {
        ca_ = make_cert("Test CA", nullptr, true, -1, 365);
        ca_file_ = dir_.path() / "ca.pem";
        FILE* f = std::fopen(ca_file_.c_str(), "w");
        PEM_write_X509(f, ca_->cert);
        std::fclose(f);
        adapters::embedded::sqlite_metadata_store::options opts;
        opts.data_dir = dir_.path();
        store_ = std::move(adapters::embedded::sqlite_metadata_store::open(opts, clock_).value());
    }
    ~x509_provider_test() override {
        pool_.stop();
        store_->stop();
    }

    void add(credentials_spec spec) {
        std::string why;
        auto row = to_credentials_row(spec, &why, 4);
        ASSERT_TRUE(row) << why;
        std::promise<status> saved;
        store_->save_credentials(std::move(*row), [&](status st) { saved.set_value(st); });
        ASSERT_TRUE(saved.get_future().get());
    }

    auth_result run(const std::vector<const key_and_cert*>& chain, x509_options options = {},
                    bool verified_by_listener = false) {
        if (options.trust_store.empty() && !verified_by_listener) {
            options.trust_store.push_back(ca_file_);
        }
        x509_provider provider(options, *store_, pool_, clock_);
        peer_certificate cert;
        for (const auto* c : chain) {
            cert.der_chain.push_back(c->der());
        }
        cert.verified_by_listener = verified_by_listener;
        std::promise<auth_result> p;
        auto f = p.get_future();
        provider.authenticate(auth_request{.client_id = "c", .tls = true, .certificate = cert},
                              [&p](auth_result r) { p.set_value(std::move(r)); });
        EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
        return f.get();
    }

    starling::testing::temp_dir dir_;
    testing::manual_clock clock_;
    worker_pool pool_{"x509-test", 1, 100};
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> store_;
    std::unique_ptr<key_and_cert> ca_;
    std::filesystem::path ca_file_;
};

TEST_F(x509_provider_test, trusted_leaf_with_exact_cn_credentials_is_allowed) {
    add({.name = "d1",
         .type = client_type::application,
         .credentials_type = "X_509",
         .cert_cn = "device-1",
         .publish_patterns = std::vector<std::string>{"devices/1/.*"}});
    auto leaf = make_cert("device-1", ca_.get(), false);
    auto r = run({leaf.get()});
    EXPECT_EQ(r.outcome, verdict::allow) << r.reason;
    EXPECT_EQ(r.type, client_type::application);
    ASSERT_TRUE(r.rules);
    EXPECT_TRUE(r.rules->may_publish("devices/1/t"));
    EXPECT_FALSE(r.rules->may_publish("devices/2/t"));
}

TEST_F(x509_provider_test, untrusted_chain_is_denied_and_no_certificate_passes) {
    add({.name = "d1", .credentials_type = "X_509", .cert_cn = "device-1"});
    auto impostor = make_cert("device-1", nullptr, false);
    auto r = run({impostor.get()});
    EXPECT_EQ(r.outcome, verdict::deny);
    EXPECT_FALSE(r.bad_credentials);
    EXPECT_NE(r.reason.find("chain rejected"), std::string::npos) << r.reason;
    EXPECT_EQ(run({}).outcome, verdict::not_applicable);
}

TEST_F(x509_provider_test, expired_certificate_needs_the_skip_option) {
    add({.name = "old", .credentials_type = "X_509", .cert_cn = "old-device"});
    auto expired = make_cert("old-device", ca_.get(), false, -60, 30);
    EXPECT_EQ(run({expired.get()}).outcome, verdict::deny);
    EXPECT_EQ(run({expired.get()}, {.skip_validity_check = true}).outcome, verdict::allow);
}

TEST_F(x509_provider_test, regex_credentials_and_the_chain_cn_are_used) {
    add({.name = "fleet",
         .credentials_type = "X_509",
         .cert_cn = "gw-[0-9]+",
         .cert_cn_is_regex = true,
         .subscribe_patterns = std::vector<std::string>{"gw/.*"}});
    auto gw = make_cert("gw-42", ca_.get(), false);
    auto r = run({gw.get()});
    EXPECT_EQ(r.outcome, verdict::allow) << r.reason;
    EXPECT_TRUE(r.rules->may_subscribe("gw/x"));
    EXPECT_FALSE(r.rules->may_subscribe("other"));

    // Credentials for the intermediate's CN cover every leaf it signed.
    auto intermediate = make_cert("Plant Intermediate", ca_.get(), true);
    auto leaf = make_cert("sensor-9", intermediate.get(), false);
    EXPECT_EQ(run({leaf.get(), intermediate.get()}).outcome, verdict::not_applicable);
    add({.name = "plant", .credentials_type = "X_509", .cert_cn = "Plant Intermediate"});
    r = run({leaf.get(), intermediate.get()});
    EXPECT_EQ(r.outcome, verdict::allow) << r.reason;
}

// The verified attack: a device certificate (CN device-7, no credentials) with a certificate
// CN gw-1 appended to the chain it sends, where X_509 credentials exist for gw-[0-9]+ only.
// Names come from the verified path (device-7 → Test CA) alone, so the device is not a gateway.
TEST_F(x509_provider_test, appended_certificate_off_the_verified_path_lends_no_identity) {
    add({.name = "gateways",
         .type = client_type::application,
         .credentials_type = "X_509",
         .cert_cn = "gw-[0-9]+",
         .cert_cn_is_regex = true,
         .publish_patterns = std::vector<std::string>{"gateways/.*"}});
    auto device = make_cert("device-7", ca_.get(), false);
    // A self-signed gw-1 the attacker made, and a genuine CA-signed gw-1 certificate (public:
    // appending it needs no key). Neither is an issuer of the device certificate.
    auto self_signed_gw = make_cert("gw-1", nullptr, true);
    auto genuine_gw = make_cert("gw-1", ca_.get(), false);
    for (const auto* appended : {self_signed_gw.get(), genuine_gw.get()}) {
        auto r = run({device.get(), appended});
        EXPECT_NE(r.outcome, verdict::allow) << r.reason;
        EXPECT_EQ(r.outcome, verdict::not_applicable) << r.reason;  // the chain refuses: deny
        EXPECT_NE(r.reason.find("device-7"), std::string::npos) << r.reason;
        EXPECT_EQ(r.rules, nullptr);
    }
    // Exact credentials for gw-1 are not reached that way either.
    add({.name = "gw-1", .credentials_type = "X_509", .cert_cn = "gw-1"});
    EXPECT_EQ(run({device.get(), self_signed_gw.get()}).outcome, verdict::not_applicable);
    // The real gateway still gets in.
    auto r = run({genuine_gw.get()});
    EXPECT_EQ(r.outcome, verdict::allow) << r.reason;
}

// Leaf → intermediate → root: credentials for the intermediate's CN still cover the leaf (the
// intermediate is on the verified path), and so do credentials for the trust anchor's CN even
// when the client did not send it (the verified path ends there).
TEST_F(x509_provider_test, issuer_cns_on_the_verified_path_still_match) {
    auto intermediate = make_cert("Line Intermediate", ca_.get(), true);
    auto leaf = make_cert("meter-3", intermediate.get(), false);
    add({.name = "line",
         .credentials_type = "X_509",
         .cert_cn = "Line Intermediate",
         .publish_patterns = std::vector<std::string>{"line/.*"}});
    auto r = run({leaf.get(), intermediate.get()});
    ASSERT_EQ(r.outcome, verdict::allow) << r.reason;
    EXPECT_TRUE(r.rules->may_publish("line/3"));
    EXPECT_FALSE(r.rules->may_publish("other/3"));

    auto direct = make_cert("meter-4", ca_.get(), false);
    EXPECT_EQ(run({direct.get()}).outcome, verdict::not_applicable);
    add({.name = "root", .credentials_type = "X_509", .cert_cn = "Test CA"});
    EXPECT_EQ(run({direct.get()}).outcome, verdict::allow);
}

TEST_F(x509_provider_test, listener_verification_stands_in_for_a_trust_store) {
    add({.name = "d1", .credentials_type = "X_509", .cert_cn = "device-1"});
    auto leaf = make_cert("device-1", nullptr, false);
    EXPECT_EQ(run({leaf.get()}, {}, /*verified_by_listener=*/true).outcome, verdict::allow);
}

TEST_F(x509_provider_test, unreadable_trust_store_names_the_key) {
    try {
        x509_provider provider({.trust_store = {dir_.path() / "missing.pem"}}, *store_, pool_,
                               clock_);
        FAIL() << "a missing CA file must be refused";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("security.mqtt.ssl.trust-store"), std::string::npos);
    }
}

}  // namespace
}  // namespace starling::auth
