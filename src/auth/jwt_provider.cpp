#include "auth/jwt_provider.h"

#include <nlohmann/json.hpp>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace starling::auth {

namespace {

constexpr std::size_t min_hmac_secret_bytes = 32;

struct md_ctx_deleter {
    void operator()(EVP_MD_CTX* p) const { EVP_MD_CTX_free(p); }
};
struct ecdsa_sig_deleter {
    void operator()(ECDSA_SIG* p) const { ECDSA_SIG_free(p); }
};

struct parsed_token {
    std::string signing_input;  // "<header>.<payload>" as sent: what the signature covers
    std::string signature;      // decoded
    std::string alg;
    std::string kid;
    nlohmann::json claims;
};

// Splits and decodes the token without trusting it: only to choose the key and algorithm.
// Returns the reason when it is not a JWS compact serialization.
std::optional<std::string> parse_token(std::string_view text, parsed_token& out) {
    const auto first = text.find('.');
    const auto second = first == std::string_view::npos ? first : text.find('.', first + 1);
    if (second == std::string_view::npos || text.find('.', second + 1) != std::string_view::npos) {
        return "not a JWT (expected three dot-separated parts)";
    }
    const auto header_text = base64url_decode(text.substr(0, first));
    const auto payload_text = base64url_decode(text.substr(first + 1, second - first - 1));
    auto signature = base64url_decode(text.substr(second + 1));
    if (!header_text || !payload_text || !signature) {
        return "JWT is not base64url";
    }
    const auto header = nlohmann::json::parse(*header_text, nullptr, false);
    out.claims = nlohmann::json::parse(*payload_text, nullptr, false);
    if (header.is_discarded() || !header.is_object() || out.claims.is_discarded() ||
        !out.claims.is_object()) {
        return "JWT header or payload is not a JSON object";
    }
    const auto alg = header.find("alg");
    if (alg == header.end() || !alg->is_string()) {
        return "JWT header has no alg";
    }
    out.alg = alg->get<std::string>();
    if (const auto kid = header.find("kid"); kid != header.end() && kid->is_string()) {
        out.kid = kid->get<std::string>();
    }
    out.signing_input = std::string(text.substr(0, second));
    out.signature = std::move(*signature);
    return std::nullopt;
}

// A claim's value as text for comparison with a configured string.
std::optional<std::string> claim_text(const nlohmann::json& claims, const std::string& name) {
    const auto it = claims.find(name);
    if (it == claims.end() || it->is_null()) {
        return std::nullopt;
    }
    if (it->is_string()) {
        return it->get<std::string>();
    }
    if (it->is_number_integer()) {
        return std::to_string(it->get<std::int64_t>());
    }
    return it->dump();
}

bool claims_match(const std::map<std::string, std::string>& wanted, const nlohmann::json& claims,
                  const auth_request& request, std::string* mismatch) {
    for (const auto& [name, pattern] : wanted) {
        const auto value = claim_text(claims, name);
        if (!value || *value != substitute_identity(pattern, request)) {
            if (mismatch != nullptr) {
                *mismatch =
                    value ? "claim '" + name + "' does not match" : "claim '" + name + "' missing";
            }
            return false;
        }
    }
    return true;
}

// The patterns in a rule claim: a list of strings or one string. nullopt + error when the
// claim is there but malformed; nullopt and no error when it is absent.
std::optional<std::vector<std::string>> rule_claim(const nlohmann::json& claims,
                                                   const std::string& name, std::string& error) {
    if (name.empty()) {
        return std::nullopt;
    }
    const auto it = claims.find(name);
    if (it == claims.end() || it->is_null()) {
        return std::nullopt;
    }
    if (it->is_string()) {
        return std::vector<std::string>{it->get<std::string>()};
    }
    if (!it->is_array()) {
        error = "claim '" + name + "' is not a list of patterns";
        return std::nullopt;
    }
    std::vector<std::string> out;
    for (const auto& item : *it) {
        if (!item.is_string()) {
            error = "claim '" + name + "' holds a non-string pattern";
            return std::nullopt;
        }
        out.push_back(item.get<std::string>());
    }
    return out;
}

// Reads a NumericDate claim (seconds since the epoch, possibly fractional).
std::optional<double> numeric_date(const nlohmann::json& claims, const char* name, bool& bad) {
    const auto it = claims.find(name);
    if (it == claims.end() || it->is_null()) {
        return std::nullopt;
    }
    if (!it->is_number()) {
        bad = true;
        return std::nullopt;
    }
    return it->get<double>();
}

std::shared_ptr<const verification_key> hmac_key(const std::string& secret) {
    auto key = std::make_shared<verification_key>();
    key->family = key_family::hmac;
    key->secret = secret;
    key->algorithms = {"HS256", "HS384", "HS512"};
    return key;
}

// The digest of a JWS algorithm name (RFC 7518 §3.1): the last three characters.
const EVP_MD* digest_of(std::string_view alg) {
    if (alg.ends_with("256")) {
        return EVP_sha256();
    }
    if (alg.ends_with("384")) {
        return EVP_sha384();
    }
    if (alg.ends_with("512")) {
        return EVP_sha512();
    }
    return nullptr;
}

bool digest_verify(EVP_PKEY* key, const EVP_MD* md, std::string_view input,
                   const unsigned char* sig, std::size_t sig_len) {
    std::unique_ptr<EVP_MD_CTX, md_ctx_deleter> ctx(EVP_MD_CTX_new());
    return ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, md, nullptr, key) == 1 &&
           EVP_DigestVerify(ctx.get(), sig, sig_len,
                            reinterpret_cast<const unsigned char*>(input.data()),
                            input.size()) == 1;
}

// Checks a JWS signature with OpenSSL. `alg` has already been matched to the key's family.
bool signature_valid(const verification_key& key, std::string_view alg, std::string_view input,
                     std::string_view signature) {
    const EVP_MD* md = digest_of(alg);
    if (md == nullptr) {
        return false;
    }
    const auto* sig = reinterpret_cast<const unsigned char*>(signature.data());
    switch (key.family) {
        case key_family::hmac: {
            unsigned char mac[EVP_MAX_MD_SIZE];
            unsigned int mac_len = 0;
            if (HMAC(md, key.secret.data(), static_cast<int>(key.secret.size()),
                     reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac,
                     &mac_len) == nullptr) {
                return false;
            }
            return mac_len == signature.size() && CRYPTO_memcmp(mac, sig, mac_len) == 0;
        }
        case key_family::rsa:
            return digest_verify(key.public_key.get(), md, input, sig, signature.size());
        case key_family::ec: {
            // JWS carries R || S, each as long as the curve order (RFC 7518 §3.4); OpenSSL
            // verifies DER, so re-encode.
            const std::size_t half = alg == "ES256" ? 32 : alg == "ES384" ? 48 : 66;
            if (signature.size() != 2 * half) {
                return false;
            }
            std::unique_ptr<ECDSA_SIG, ecdsa_sig_deleter> ecdsa(ECDSA_SIG_new());
            BIGNUM* r = BN_bin2bn(sig, static_cast<int>(half), nullptr);
            BIGNUM* s = BN_bin2bn(sig + half, static_cast<int>(half), nullptr);
            if (!ecdsa || r == nullptr || s == nullptr || ECDSA_SIG_set0(ecdsa.get(), r, s) != 1) {
                BN_free(r);
                BN_free(s);
                return false;
            }
            unsigned char* der = nullptr;
            const int der_len = i2d_ECDSA_SIG(ecdsa.get(), &der);
            if (der_len <= 0) {
                return false;
            }
            const bool ok = digest_verify(key.public_key.get(), md, input, der,
                                          static_cast<std::size_t>(der_len));
            OPENSSL_free(der);
            return ok;
        }
    }
    return false;
}

}  // namespace

struct jwt_provider::core {
    jwt_provider_options options;
    const starling::clock* clock = nullptr;
    std::shared_ptr<const topic_rules> default_rules;

    auth_result verify(const auth_request& request, const parsed_token& token,
                       const verification_key& key) const {
        if (std::find(key.algorithms.begin(), key.algorithms.end(), token.alg) ==
            key.algorithms.end()) {
            return make_deny("JWT: algorithm '" + token.alg + "' not accepted for this key");
        }
        if (!signature_valid(key, token.alg, token.signing_input, token.signature)) {
            return make_deny("JWT: invalid signature");
        }
        return check_claims(request, token.claims);
    }

    auth_result check_claims(const auth_request& request, const nlohmann::json& claims) const {
        const double now =
            std::chrono::duration<double>(clock->system_now().time_since_epoch()).count();
        const double skew = static_cast<double>(options.clock_skew.count());
        bool bad_date = false;
        const auto exp = numeric_date(claims, "exp", bad_date);
        const auto nbf = numeric_date(claims, "nbf", bad_date);
        if (bad_date) {
            return make_deny("JWT: exp or nbf is not a number");
        }
        if (!exp && !options.allow_tokens_without_exp) {
            // A token without exp would be valid forever: one leak is a permanent key.
            return make_deny("JWT: token has no exp claim");
        }
        if (exp && now > *exp + skew) {
            return make_deny("JWT: token expired");
        }
        if (nbf && now + skew < *nbf) {
            return make_deny("JWT: token not yet valid (nbf)");
        }
        std::string mismatch;
        if (!claims_match(options.auth_claims, claims, request, &mismatch)) {
            return make_deny("JWT: " + mismatch, false);
        }
        auto type = options.default_client_type;
        if (!options.client_type_claims.empty() &&
            claims_match(options.client_type_claims, claims, request, nullptr)) {
            type = type == client_type::device ? client_type::application : client_type::device;
        }
        std::string error;
        auto publish = rule_claim(claims, options.pub_auth_rule_claim, error);
        auto subscribe = rule_claim(claims, options.sub_auth_rule_claim, error);
        if (!error.empty()) {
            return make_deny("JWT: " + error, false);
        }
        auto result = [&] {
            if (!publish && !subscribe) {
                return make_allow(type, default_rules);
            }
            std::string bad;
            auto rules =
                compile_topic_rules(publish.value_or(options.auth_rules.publish),
                                    subscribe.value_or(options.auth_rules.subscribe), &bad);
            if (!rules) {
                return make_deny("JWT: invalid rule pattern '" + bad + "' in the token", false);
            }
            return make_allow(type, std::move(*rules));
        }();
        if (result.outcome == verdict::allow && exp) {
            // The authenticator caches an allow no longer than this: never past the token's exp.
            result.valid_for = valid_until(*exp, now);
        }
        return result;
    }

    // Whole milliseconds from `now` to `exp` (seconds since the epoch), 0 when already past.
    static std::chrono::milliseconds valid_until(double exp, double now) {
        const double left_ms = std::floor((exp - now) * 1000.0);
        if (!(left_ms > 0.0)) {
            return std::chrono::milliseconds(0);
        }
        // A far-future exp (or a huge number) is capped; the cache's own TTL is far smaller.
        constexpr double cap_ms = 1e15;
        return std::chrono::milliseconds(static_cast<std::int64_t>(std::min(left_ms, cap_ms)));
    }
};

std::optional<std::string> jwt_provider_options::validation_error() const {
    if (verifier == jwt_verifier_type::jwks) {
        if (auto error = jwks.validation_error()) {
            return "jwtVerifierConfiguration." + *error;
        }
    } else if (algorithm == jwt_sign_algorithm::hmac_based) {
        if (secret.size() < min_hmac_secret_bytes) {
            return "jwtVerifierConfiguration.jwtSignAlgorithmConfiguration.secret: must be at "
                   "least 32 bytes";
        }
        if (secret == jwt_example_secret) {
            return "jwtVerifierConfiguration.jwtSignAlgorithmConfiguration.secret: is the "
                   "published example secret, which anyone can sign tokens with; set your own "
                   "(at least 32 random bytes)";
        }
    } else {
        std::string why;
        if (!key_from_pem(public_pem_key, &why)) {
            return "jwtVerifierConfiguration.jwtSignAlgorithmConfiguration.publicPemKey: " + why;
        }
    }
    if (clock_skew.count() < 0) {
        return "clock skew: must not be negative";
    }
    std::string bad;
    if (!compile_topic_rules(auth_rules.publish, auth_rules.subscribe, &bad)) {
        return "authRules: invalid regular expression '" + bad + "'";
    }
    return std::nullopt;
}

namespace {

std::shared_ptr<const jwt_provider::core> make_core(jwt_provider_options options,
                                                    const starling::clock& clock) {
    if (auto error = options.validation_error()) {
        throw std::invalid_argument("JWT auth provider: " + *error);
    }
    auto c = std::make_shared<jwt_provider::core>();
    c->default_rules =
        compile_topic_rules(options.auth_rules.publish, options.auth_rules.subscribe).value();
    c->options = std::move(options);
    c->clock = &clock;
    return c;
}

}  // namespace

jwt_provider::jwt_provider(jwt_provider_options options, boost::asio::any_io_executor executor,
                           const starling::clock& clock)
    : core_(make_core(std::move(options), clock)) {
    const auto& o = core_->options;
    if (o.verifier == jwt_verifier_type::jwks) {
        jwks_ = std::make_unique<jwks_cache>(o.jwks, std::move(executor), clock);
    } else if (o.algorithm == jwt_sign_algorithm::hmac_based) {
        static_key_ = hmac_key(o.secret);
    } else {
        static_key_ =
            std::make_shared<const verification_key>(key_from_pem(o.public_pem_key).value());
    }
}

jwt_provider::~jwt_provider() { stop(); }

void jwt_provider::start() {
    if (jwks_) {
        jwks_->start();
    }
}

void jwt_provider::stop() {
    if (jwks_) {
        jwks_->stop();
    }
}

void jwt_provider::authenticate(const auth_request& request,
                                std::function<void(auth_result)> done) {
    if (!request.password) {
        done(auth_result{});  // not_applicable: no token to check
        return;
    }
    const auto finish = [](const auth_request& req, auth_result result,
                           const std::function<void(auth_result)>& callback) {
        if (result.outcome == verdict::deny) {
            spdlog::info("JWT auth: client '{}' from {} denied: {}", req.client_id,
                         req.remote_address, result.reason);
        }
        callback(std::move(result));
    };
    auto token = std::make_shared<parsed_token>();
    if (auto error = parse_token(*request.password, *token)) {
        finish(request, make_deny("JWT: " + *error), done);
        return;
    }
    if (static_key_) {
        finish(request, core_->verify(request, *token, *static_key_), done);
        return;
    }
    jwks_->find(token->kid, [core = core_, request, token, finish,
                             done = std::move(done)](jwks_cache::lookup found) {
        if (found.status == jwks_cache::lookup_status::found) {
            finish(request, core->verify(request, *token, *found.key), done);
        } else if (found.status == jwks_cache::lookup_status::unavailable) {
            finish(request, make_unavailable(found.detail), done);
        } else {
            finish(request, make_deny("JWT: " + found.detail), done);
        }
    });
}

}  // namespace starling::auth
