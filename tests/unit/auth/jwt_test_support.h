#pragma once

// Test helpers for the JWT provider tests: a manual clock, key pairs generated with OpenSSL 3,
// their JWK form, and tokens signed with libjwt.

#include "auth/base64url.h"
#include "starling/clock.h"

#include <jwt.h>
#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace starling::auth::test {

class manual_clock final : public starling::clock {
  public:
    steady_point steady_now() const override {
        return steady_base_ + std::chrono::nanoseconds(offset_ns_.load());
    }
    system_point system_now() const override {
        return system_base_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                  std::chrono::nanoseconds(offset_ns_.load()));
    }
    void advance(std::chrono::nanoseconds d) { offset_ns_ += d.count(); }
    std::int64_t epoch_seconds() const {
        return std::chrono::duration_cast<std::chrono::seconds>(system_now().time_since_epoch())
            .count();
    }

  private:
    const steady_point steady_base_ = std::chrono::steady_clock::now();
    const system_point system_base_ = std::chrono::system_clock::now();
    std::atomic<std::int64_t> offset_ns_{0};
};

inline std::string base64url(std::string_view in) { return auth::base64url_encode(in); }

// A generated key pair: private PEM for signing, public PEM and JWK for the provider.
class key_pair {
  public:
    static key_pair rsa(int bits = 2048) { return key_pair(EVP_RSA_gen(bits)); }
    static key_pair ec(const char* curve = "P-256") { return key_pair(EVP_EC_gen(curve)); }

    key_pair(key_pair&& other) noexcept : key_(other.key_) { other.key_ = nullptr; }
    key_pair(const key_pair&) = delete;
    ~key_pair() { EVP_PKEY_free(key_); }

    std::string private_pem() const {
        BIO* bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PrivateKey(bio, key_, nullptr, nullptr, 0, nullptr, nullptr);
        return drain(bio);
    }
    std::string public_pem() const {
        BIO* bio = BIO_new(BIO_s_mem());
        PEM_write_bio_PUBKEY(bio, key_);
        return drain(bio);
    }
    nlohmann::json jwk(const std::string& kid) const {
        nlohmann::json j;
        j["kid"] = kid;
        j["use"] = "sig";
        if (EVP_PKEY_get_base_id(key_) == EVP_PKEY_RSA) {
            j["kty"] = "RSA";
            j["n"] = bn_param(OSSL_PKEY_PARAM_RSA_N, 0);
            j["e"] = bn_param(OSSL_PKEY_PARAM_RSA_E, 0);
        } else {
            j["kty"] = "EC";
            j["crv"] = "P-256";
            j["x"] = bn_param(OSSL_PKEY_PARAM_EC_PUB_X, 32);
            j["y"] = bn_param(OSSL_PKEY_PARAM_EC_PUB_Y, 32);
        }
        return j;
    }

  private:
    explicit key_pair(EVP_PKEY* key) : key_(key) {
        if (key_ == nullptr) {
            throw std::runtime_error("key generation failed");
        }
    }
    static std::string drain(BIO* bio) {
        char* data = nullptr;
        const long n = BIO_get_mem_data(bio, &data);
        std::string out(data, static_cast<std::size_t>(n));
        BIO_free(bio);
        return out;
    }
    std::string bn_param(const char* name, int pad) const {
        BIGNUM* bn = nullptr;
        EVP_PKEY_get_bn_param(key_, name, &bn);
        std::string bytes(static_cast<std::size_t>(pad > 0 ? pad : BN_num_bytes(bn)), '\0');
        if (pad > 0) {
            BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(bytes.data()), pad);
        } else {
            BN_bn2bin(bn, reinterpret_cast<unsigned char*>(bytes.data()));
        }
        BN_free(bn);
        return base64url(bytes);
    }

    EVP_PKEY* key_;
};

// Signs `claims` with libjwt; `key` is the HMAC secret or a private PEM.
inline std::string sign(jwt_alg_t alg, const std::string& key, const nlohmann::json& claims,
                        const std::string& kid = {}) {
    jwt_t* jwt = nullptr;
    jwt_new(&jwt);
    if (jwt_add_grants_json(jwt, claims.dump().c_str()) != 0) {
        jwt_free(jwt);
        throw std::runtime_error("bad claims");
    }
    if (!kid.empty()) {
        jwt_add_header(jwt, "kid", kid.c_str());
    }
    if (jwt_set_alg(jwt, alg, reinterpret_cast<const unsigned char*>(key.data()),
                    static_cast<int>(key.size())) != 0) {
        jwt_free(jwt);
        throw std::runtime_error("bad key");
    }
    char* text = jwt_encode_str(jwt);
    jwt_free(jwt);
    if (text == nullptr) {
        throw std::runtime_error("signing failed");
    }
    std::string out(text);
    std::free(text);
    return out;
}

// A token assembled by hand (for forgeries libjwt would refuse to produce).
inline std::string unsigned_token(const nlohmann::json& header, const nlohmann::json& claims,
                                  const std::string& signature = {}) {
    return base64url(header.dump()) + "." + base64url(claims.dump()) + "." + signature;
}

}  // namespace starling::auth::test
