#include "auth/jwks_cache.h"

#include "auth/provider_support.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <nlohmann/json.hpp>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <map>
#include <mutex>

namespace starling::auth {

namespace {

struct pkey_deleter {
    void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct pkey_ctx_deleter {
    void operator()(EVP_PKEY_CTX* p) const { EVP_PKEY_CTX_free(p); }
};
struct bio_deleter {
    void operator()(BIO* p) const { BIO_free(p); }
};
struct bn_deleter {
    void operator()(BIGNUM* p) const { BN_free(p); }
};
struct param_bld_deleter {
    void operator()(OSSL_PARAM_BLD* p) const { OSSL_PARAM_BLD_free(p); }
};
struct params_deleter {
    void operator()(OSSL_PARAM* p) const { OSSL_PARAM_free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_deleter>;

result<verification_key> fail(std::string* why, std::string text) {
    if (why != nullptr) {
        *why = std::move(text);
    }
    return std::make_error_code(std::errc::invalid_argument);
}

// Describes an OpenSSL key as a verification_key: its family, the token algorithms it may
// verify (an EC key only the one matching its curve, RFC 7518 §3.4) and its PEM.
result<verification_key> describe(pkey_ptr owned, std::string* why) {
    verification_key out;
    EVP_PKEY* key = owned.get();
    switch (EVP_PKEY_get_base_id(key)) {
        case EVP_PKEY_RSA:
            if (EVP_PKEY_get_bits(key) < 2048) {
                return fail(why, "RSA key shorter than 2048 bits");
            }
            out.family = key_family::rsa;
            out.algorithms = {"RS256", "RS384", "RS512"};
            break;
        case EVP_PKEY_EC: {
            char group[64] = {};
            std::size_t len = 0;
            if (EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group,
                                               sizeof(group), &len) != 1) {
                return fail(why, "EC key without a named curve");
            }
            const std::string_view name(group, len);
            out.family = key_family::ec;
            if (name == "prime256v1" || name == "P-256") {
                out.algorithms = {"ES256"};
            } else if (name == "secp384r1" || name == "P-384") {
                out.algorithms = {"ES384"};
            } else if (name == "secp521r1" || name == "P-521") {
                out.algorithms = {"ES512"};
            } else {
                return fail(why, "unsupported EC curve " + std::string(name));
            }
            break;
        }
        default:
            return fail(why, "not an RSA or EC public key");
    }
    std::unique_ptr<BIO, bio_deleter> bio(BIO_new(BIO_s_mem()));
    if (!bio || PEM_write_bio_PUBKEY(bio.get(), key) != 1) {
        return fail(why, "cannot encode the key as PEM");
    }
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    out.pem.assign(data, static_cast<std::size_t>(size));
    out.public_key = std::shared_ptr<EVP_PKEY>(owned.release(), pkey_deleter{});
    return out;
}

std::unique_ptr<BIGNUM, bn_deleter> bignum(const nlohmann::json& jwk, const char* field,
                                           std::string* raw = nullptr) {
    const auto it = jwk.find(field);
    if (it == jwk.end() || !it->is_string()) {
        return nullptr;
    }
    auto bytes = base64url_decode(it->get<std::string>());
    if (!bytes || bytes->empty()) {
        return nullptr;
    }
    if (raw != nullptr) {
        *raw = *bytes;
    }
    return std::unique_ptr<BIGNUM, bn_deleter>(
        BN_bin2bn(reinterpret_cast<const unsigned char*>(bytes->data()),
                  static_cast<int>(bytes->size()), nullptr));
}

pkey_ptr key_from_params(const char* type, OSSL_PARAM_BLD* bld) {
    std::unique_ptr<OSSL_PARAM, params_deleter> params(OSSL_PARAM_BLD_to_param(bld));
    std::unique_ptr<EVP_PKEY_CTX, pkey_ctx_deleter> ctx(
        EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
    if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) {
        return nullptr;
    }
    EVP_PKEY* key = nullptr;
    if (EVP_PKEY_fromdata(ctx.get(), &key, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
        return nullptr;
    }
    return pkey_ptr(key);
}

}  // namespace

result<verification_key> key_from_pem(std::string_view pem, std::string* why) {
    std::unique_ptr<BIO, bio_deleter> bio(
        BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    pkey_ptr key(bio ? PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    if (!key) {
        return fail(why, "not a PEM public key (-----BEGIN PUBLIC KEY-----)");
    }
    return describe(std::move(key), why);
}

// A string member, or "" when it is absent or not a string. (json::value() throws on a member
// of another type, and a JWKS document is whatever the endpoint served.)
std::string string_member(const nlohmann::json& object, const char* name) {
    const auto it = object.find(name);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

result<verification_key> key_from_jwk(const nlohmann::json& jwk, std::string* why) {
    if (!jwk.is_object()) {
        return fail(why, "JWK is not an object");
    }
    const std::string kty = string_member(jwk, "kty");
    if (jwk.contains("use") && string_member(jwk, "use") != "sig") {
        return fail(why, "JWK use is not \"sig\"");
    }
    std::unique_ptr<OSSL_PARAM_BLD, param_bld_deleter> bld(OSSL_PARAM_BLD_new());
    pkey_ptr key;
    if (kty == "RSA") {
        auto n = bignum(jwk, "n");
        auto e = bignum(jwk, "e");
        if (!n || !e) {
            return fail(why, "RSA JWK without valid n and e");
        }
        if (OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, n.get()) != 1 ||
            OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, e.get()) != 1) {
            return fail(why, "cannot build the RSA key");
        }
        key = key_from_params("RSA", bld.get());
    } else if (kty == "EC") {
        const std::string crv = string_member(jwk, "crv");
        const char* group = nullptr;
        std::size_t size = 0;
        if (crv == "P-256") {
            group = "prime256v1";
            size = 32;
        } else if (crv == "P-384") {
            group = "secp384r1";
            size = 48;
        } else if (crv == "P-521") {
            group = "secp521r1";
            size = 66;
        } else {
            return fail(why, "EC JWK with unsupported crv '" + crv + "'");
        }
        const auto x = jwk.contains("x") && jwk["x"].is_string()
                           ? base64url_decode(jwk["x"].get<std::string>())
                           : std::nullopt;
        const auto y = jwk.contains("y") && jwk["y"].is_string()
                           ? base64url_decode(jwk["y"].get<std::string>())
                           : std::nullopt;
        if (!x || !y || x->size() != size || y->size() != size) {
            return fail(why, "EC JWK without valid x and y");
        }
        // Uncompressed point: 0x04 || x || y.
        std::string point = "\x04" + *x + *y;
        if (OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
            OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                             point.size()) != 1) {
            return fail(why, "cannot build the EC key");
        }
        key = key_from_params("EC", bld.get());
    } else {
        return fail(why, "unsupported JWK kty '" + kty + "'");
    }
    if (!key) {
        return fail(why, "OpenSSL rejected the " + kty + " key");
    }
    auto out = describe(std::move(key), why);
    if (!out) {
        return out;
    }
    out->kid = string_member(jwk, "kid");
    // A JWK that names its algorithm may verify only that one.
    if (const auto alg = jwk.find("alg"); alg != jwk.end() && alg->is_string()) {
        const auto name = alg->get<std::string>();
        if (std::find(out->algorithms.begin(), out->algorithms.end(), name) ==
            out->algorithms.end()) {
            return fail(why, "JWK alg '" + name + "' does not fit its key");
        }
        out->algorithms = {name};
    }
    return out;
}

result<std::vector<verification_key>> keys_from_jwks(std::string_view body, std::string* why) {
    const auto doc = nlohmann::json::parse(body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("keys") ||
        !doc["keys"].is_array()) {
        if (why != nullptr) {
            *why = "not a JWKS document ({\"keys\": [...]})";
        }
        return std::make_error_code(std::errc::invalid_argument);
    }
    std::vector<verification_key> keys;
    for (const auto& jwk : doc["keys"]) {
        std::string reason;
        auto key = key_from_jwk(jwk, &reason);
        if (!key) {
            spdlog::warn("JWKS: skipping key '{}': {}",
                         jwk.is_object() ? string_member(jwk, "kid") : std::string(), reason);
            continue;
        }
        keys.push_back(std::move(*key));
    }
    return keys;
}

std::optional<std::string> jwks_options::validation_error() const {
    if (!url::parse(endpoint)) {
        return "endpoint: '" + endpoint + "' is not an http:// or https:// URL with a host";
    }
    if (refresh_interval < std::chrono::seconds(300)) {
        return "refreshInterval: must be at least 300 seconds";
    }
    if (fetch_timeout.count() <= 0) {
        return "fetch timeout: must be positive";
    }
    if (max_document_kb == 0) {
        return "max document size: must be at least 1 KiB";
    }
    return std::nullopt;
}

namespace {

using key_map = std::map<std::string, std::shared_ptr<const verification_key>, std::less<>>;

// Lookups waiting for a fetch; beyond this many the lookup is answered unavailable at once.
constexpr std::size_t max_waiters = 10000;

http_client_options client_options(const jwks_options& o) {
    http_client_options c;
    c.max_connections = 1;
    c.max_response_bytes = o.max_document_kb * 1024;
    c.verify_tls_peer = o.verify_tls_peer;
    c.ca_file = o.ca_file;
    return c;
}

}  // namespace

struct jwks_cache::state : std::enable_shared_from_this<jwks_cache::state> {
    state(jwks_options o, boost::asio::any_io_executor executor, const starling::clock& c)
        : options(std::move(o)),
          strand(make_serial_executor(executor)),
          clock(c),
          client(url::parse(options.endpoint).value(), executor, client_options(options)),
          refresh_timer(strand) {}

    jwks_options options;
    boost::asio::any_io_executor strand;  // serial
    const starling::clock& clock;
    http_client client;
    boost::asio::steady_timer refresh_timer;

    // Read from any thread under the mutex; replaced (never mutated) on the strand.
    mutable std::mutex mutex;
    std::shared_ptr<const key_map> keys;

    // Strand only.
    bool stopped = false;
    bool fetching = false;
    std::optional<starling::clock::steady_point> last_fetch;
    std::string last_error;
    std::vector<std::pair<std::string, lookup_done>> waiters;

    std::atomic<std::size_t> fetches{0};

    std::shared_ptr<const key_map> snapshot() const {
        std::lock_guard lock(mutex);
        return keys;
    }

    static std::shared_ptr<const verification_key> pick(const key_map& map,
                                                        const std::string& kid) {
        if (kid.empty()) {
            return map.size() == 1 ? map.begin()->second : nullptr;
        }
        const auto it = map.find(kid);
        return it == map.end() ? nullptr : it->second;
    }

    void fetch() {
        if (stopped || fetching) {
            return;
        }
        fetching = true;
        last_fetch = clock.steady_now();
        fetches.fetch_add(1, std::memory_order_relaxed);
        client.request("GET", options.headers, {}, options.fetch_timeout,
                       [self = shared_from_this()](result<http_response> response) {
                           // The client calls back on its own strand; state lives on ours.
                           boost::asio::post(self->strand, [self, response = std::move(response)] {
                               self->on_fetched(response);
                           });
                       });
    }

    void on_fetched(const result<http_response>& response) {
        fetching = false;
        std::string error;
        if (!response) {
            error = response.error().message();
        } else if (response->status < 200 || response->status > 299) {
            error = "HTTP status " + std::to_string(response->status);
        } else {
            std::string why;
            auto parsed = keys_from_jwks(response->body, &why);
            if (!parsed) {
                error = why;
            } else {
                auto map = std::make_shared<key_map>();
                for (auto& key : *parsed) {
                    const auto kid = key.kid;
                    (*map)[kid] = std::make_shared<const verification_key>(std::move(key));
                }
                spdlog::info("JWKS {}: {} keys loaded", options.endpoint, map->size());
                std::lock_guard lock(mutex);
                keys = std::move(map);
            }
        }
        if (!error.empty()) {
            spdlog::error("JWKS {}: fetch failed, keeping {} known keys: {}", options.endpoint,
                          snapshot() ? snapshot()->size() : 0, error);
        }
        last_error = error;
        auto pending = std::move(waiters);
        waiters.clear();
        const auto map = snapshot();
        for (auto& [kid, done] : pending) {
            answer(map, kid, error, done);
        }
    }

    static void answer(const std::shared_ptr<const key_map>& map, const std::string& kid,
                       const std::string& error, const lookup_done& done) {
        if (map) {
            if (auto key = pick(*map, kid)) {
                done({lookup_status::found, std::move(key), {}});
                return;
            }
        }
        if (!map && !error.empty()) {
            done({lookup_status::unavailable, nullptr, "JWKS unavailable: " + error});
            return;
        }
        done({lookup_status::unknown_kid, nullptr,
              kid.empty() ? "token has no kid" : "unknown kid '" + kid + "'"});
    }

    void schedule_refresh() {
        if (stopped) {
            return;
        }
        refresh_timer.expires_after(options.refresh_interval);
        refresh_timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
            if (ec || self->stopped) {
                return;
            }
            self->fetch();
            self->schedule_refresh();
        });
    }
};

jwks_cache::jwks_cache(jwks_options options, boost::asio::any_io_executor executor,
                       const starling::clock& clock) {
    if (auto error = options.validation_error()) {
        throw std::invalid_argument("JWKS: " + *error);
    }
    state_ = std::make_shared<state>(std::move(options), std::move(executor), clock);
}

jwks_cache::~jwks_cache() { stop(); }

void jwks_cache::start() {
    boost::asio::post(state_->strand, [s = state_] {
        s->fetch();
        s->schedule_refresh();
    });
}

void jwks_cache::stop() {
    boost::asio::post(state_->strand, [s = state_] {
        if (s->stopped) {
            return;
        }
        s->stopped = true;
        s->refresh_timer.cancel();
        s->client.stop();
        auto pending = std::move(s->waiters);
        s->waiters.clear();
        for (auto& [kid, done] : pending) {
            done({lookup_status::unavailable, nullptr, "JWKS cache stopped"});
        }
    });
}

void jwks_cache::find(const std::string& kid, lookup_done done) {
    if (const auto map = state_->snapshot()) {
        if (auto key = state::pick(*map, kid)) {
            done({lookup_status::found, std::move(key), {}});
            return;
        }
    }
    boost::asio::post(state_->strand, [s = state_, kid, done = std::move(done)]() mutable {
        const auto map = s->snapshot();
        if (map) {
            if (auto key = state::pick(*map, kid)) {
                done({lookup_status::found, std::move(key), {}});
                return;
            }
        }
        if (s->stopped) {
            done({lookup_status::unavailable, nullptr, "JWKS cache stopped"});
            return;
        }
        const bool may_fetch = !s->last_fetch || s->clock.steady_now() - *s->last_fetch >=
                                                     s->options.unknown_kid_min_interval;
        if (!s->fetching && !may_fetch) {
            state::answer(map, kid, s->last_error, done);
            return;
        }
        if (s->waiters.size() >= max_waiters) {
            done({lookup_status::unavailable, nullptr, "too many lookups waiting for JWKS"});
            return;
        }
        s->waiters.emplace_back(kid, std::move(done));
        s->fetch();  // no-op while a fetch is in progress
    });
}

std::size_t jwks_cache::fetch_count() const {
    return state_->fetches.load(std::memory_order_relaxed);
}

std::size_t jwks_cache::key_count() const {
    const auto map = state_->snapshot();
    return map ? map->size() : 0;
}

}  // namespace starling::auth
