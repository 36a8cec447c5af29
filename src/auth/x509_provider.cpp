#include "auth/x509_provider.h"

#include "auth/credentials.h"

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <spdlog/spdlog.h>

#include <stdexcept>

namespace starling::auth {
namespace {

// Bounds the listing of regex credentials (they are few: one per device fleet, not per device).
constexpr std::size_t regex_credentials_limit = 10000;

struct x509_deleter {
    void operator()(X509* x) const { X509_free(x); }
};
using x509_ptr = std::unique_ptr<X509, x509_deleter>;

std::optional<std::vector<x509_ptr>> parse_chain(const std::vector<std::string>& der_chain) {
    std::vector<x509_ptr> out;
    for (const auto& der : der_chain) {
        const auto* p = reinterpret_cast<const unsigned char*>(der.data());
        X509* cert = d2i_X509(nullptr, &p, static_cast<long>(der.size()));
        if (cert == nullptr) {
            ERR_clear_error();
            return std::nullopt;
        }
        out.emplace_back(cert);
    }
    return out;
}

std::string common_name(X509* cert) {
    X509_NAME* subject = X509_get_subject_name(cert);
    const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (index < 0) {
        return {};
    }
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
    unsigned char* utf8 = nullptr;
    const int length = ASN1_STRING_to_UTF8(&utf8, data);
    if (length < 0) {
        ERR_clear_error();
        return {};
    }
    std::string cn(reinterpret_cast<char*>(utf8), static_cast<std::size_t>(length));
    OPENSSL_free(utf8);
    return cn;
}

std::string openssl_error() {
    const unsigned long code = ERR_get_error();
    ERR_clear_error();
    if (code == 0) {
        return "unknown error";
    }
    std::array<char, 256> buffer{};
    ERR_error_string_n(code, buffer.data(), buffer.size());
    return buffer.data();
}

}  // namespace

struct x509_provider::trust {
    X509_STORE* store = nullptr;
    ~trust() { X509_STORE_free(store); }
};

x509_provider::x509_provider(x509_options options, metadata_store& store, worker_pool& pool,
                             const starling::clock& clock)
    : options_(std::move(options)),
      store_(store),
      pool_(pool),
      clock_(clock),
      trust_(std::make_unique<trust>()) {
    if (options_.trust_store.empty()) {
        return;
    }
    trust_->store = X509_STORE_new();
    for (const auto& file : options_.trust_store) {
        if (X509_STORE_load_file(trust_->store, file.c_str()) != 1) {
            throw std::runtime_error("security.mqtt.ssl.trust-store: cannot load CA file " +
                                     file.string() + ": " + openssl_error());
        }
    }
}

x509_provider::~x509_provider() = default;

std::optional<std::vector<std::string>> x509_provider::chain_common_names(
    const std::vector<std::string>& der_chain) {
    auto chain = parse_chain(der_chain);
    if (!chain) {
        return std::nullopt;
    }
    std::vector<std::string> cns;
    for (const auto& cert : *chain) {
        cns.push_back(common_name(cert.get()));
    }
    return cns;
}

x509_provider::verified_names x509_provider::verify_chain(const peer_certificate& cert) const {
    if (trust_->store == nullptr) {
        // The listener verified the chain, and recorded the chain it built and trusted (leaf to
        // trust anchor, SSL_get0_verified_chain): nothing the client merely appended.
        if (!cert.verified_by_listener) {
            return {.error = "no trust store configured and the listener did not verify the chain"};
        }
        auto cns = chain_common_names(cert.der_chain);
        if (!cns) {
            return {.error = "client certificate does not parse"};
        }
        return {.cns = std::move(*cns)};
    }
    auto chain = parse_chain(cert.der_chain);
    if (!chain || chain->empty()) {
        return {.error = "client certificate does not parse"};
    }
    STACK_OF(X509)* untrusted = sk_X509_new_null();
    for (std::size_t i = 1; i < chain->size(); ++i) {
        sk_X509_push(untrusted, (*chain)[i].get());
    }
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    verified_names out;
    if (X509_STORE_CTX_init(ctx, trust_->store, chain->front().get(), untrusted) != 1) {
        out.error = "chain verification could not start: " + openssl_error();
    } else {
        if (options_.skip_validity_check) {
            X509_STORE_CTX_set_flags(ctx, X509_V_FLAG_NO_CHECK_TIME);
        }
        if (X509_verify_cert(ctx) != 1) {
            out.error = std::string("chain rejected: ") +
                        X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx));
            ERR_clear_error();
        } else {
            // Identity comes from the chain OpenSSL built and verified, leaf to trust anchor:
            // a certificate the client sent that is not on that path (a self-signed "gw-1"
            // appended to a device's chain) names nobody.
            STACK_OF(X509)* verified = X509_STORE_CTX_get0_chain(ctx);
            const int n = verified == nullptr ? 0 : sk_X509_num(verified);
            for (int i = 0; i < n; ++i) {
                out.cns.push_back(common_name(sk_X509_value(verified, i)));
            }
            if (out.cns.empty()) {
                out.error = "chain verification produced no chain";
            }
        }
    }
    X509_STORE_CTX_free(ctx);
    sk_X509_free(untrusted);  // the certificates themselves belong to `chain`
    return out;
}

void x509_provider::authenticate(const auth_request& request,
                                 std::function<void(auth_result)> done) {
    if (!request.certificate || request.certificate->der_chain.empty()) {
        done(auth_result{.outcome = verdict::not_applicable, .reason = "no client certificate"});
        return;
    }
    auto job = [this, cert = *request.certificate, client_id = request.client_id, done]() mutable {
        auto verified = verify_chain(cert);
        if (!verified.error.empty()) {
            done(auth_result{
                .outcome = verdict::deny, .reason = verified.error, .bad_credentials = false});
            return;
        }
        lookup(std::move(verified.cns), std::move(client_id), std::move(done));
    };
    if (!pool_.submit(std::move(job))) {
        // Load shedding, not a provider failure (auth_result::shed).
        done(auth_result{.outcome = verdict::deny,
                         .reason = "auth worker pool busy",
                         .bad_credentials = false,
                         .shed = true});
    }
}

void x509_provider::lookup(std::vector<std::string> cns, std::string client_id,
                           std::function<void(auth_result)> done) {
    std::vector<std::string> ids;
    for (const auto& cn : cns) {
        if (!cn.empty()) {
            ids.push_back(ssl_credentials_id(cn));
        }
    }
    store_.find_credentials(ids, [this, cns, client_id = std::move(client_id),
                                  done = std::move(done)](
                                     result<std::vector<client_credentials>> exact) mutable {
        if (!exact) {
            done(auth_result{.outcome = verdict::deny,
                             .reason = "credentials store error: " + exact.error().message(),
                             .bad_credentials = false,
                             .failed = true});
            return;
        }
        {
            std::lock_guard lock(cache_mutex_);
            if (clock_.steady_now() < regex_rows_expire_) {
                auto rows = regex_rows_;
                decide(cns, client_id, std::move(*exact), std::move(rows), done);
                return;
            }
        }
        // Regex credentials cannot be found by id: list them (cached, as TBMQ's
        // sslRegexBasedCredentials cache).
        store_.list_credentials(
            regex_credentials_limit, 0,
            [this, cns, client_id, exact = std::move(*exact),
             done](result<std::vector<client_credentials>> all) mutable {
                if (!all) {
                    done(auth_result{.outcome = verdict::deny,
                                     .reason = "credentials store error: " + all.error().message(),
                                     .bad_credentials = false,
                                     .failed = true});
                    return;
                }
                std::vector<client_credentials> regex_rows;
                for (auto& row : *all) {
                    if (row.credentials_type != credentials_type_x509) {
                        continue;
                    }
                    auto parsed = parse_x509_credentials(row.credentials_value, "");
                    if (parsed && parsed->cert_cn_is_regex) {
                        regex_rows.push_back(std::move(row));
                    }
                }
                {
                    std::lock_guard lock(cache_mutex_);
                    regex_rows_ = regex_rows;
                    regex_rows_expire_ = clock_.steady_now() + options_.regex_cache_ttl;
                }
                decide(cns, client_id, std::move(exact), std::move(regex_rows), done);
            });
    });
}

void x509_provider::decide(const std::vector<std::string>& cns, const std::string& client_id,
                           std::vector<client_credentials> exact,
                           std::vector<client_credentials> regex_rows,
                           const std::function<void(auth_result)>& done) {
    const std::string leaf_cn = cns.empty() ? std::string() : cns.front();
    for (const auto& cn : cns) {  // leaf first
        if (cn.empty()) {
            continue;
        }
        const client_credentials* chosen = nullptr;
        const auto id = ssl_credentials_id(cn);
        for (const auto& row : exact) {
            if (row.credentials_id == id && row.credentials_type == credentials_type_x509) {
                chosen = &row;
                break;
            }
        }
        if (chosen == nullptr) {
            for (const auto& row : regex_rows) {
                auto parsed = parse_x509_credentials(row.credentials_value, "");
                if (parsed && cn_pattern_matches(parsed->cert_cn_pattern, cn)) {
                    chosen = &row;
                    break;
                }
            }
        }
        if (chosen == nullptr) {
            continue;
        }
        std::string why;
        auto parsed = parse_x509_credentials(chosen->credentials_value, leaf_cn, &why);
        if (!parsed) {
            spdlog::warn("credentials {}: unusable X_509 value: {}", chosen->credentials_id, why);
            continue;
        }
        if (!parsed->rules) {
            done(auth_result{.outcome = verdict::deny,
                             .reason = "no authRulesMapping entry of " + chosen->credentials_id +
                                       " matches CN '" + leaf_cn + "'",
                             .bad_credentials = false});
            return;
        }
        if (!client_id_allowed(parsed->client_id_pattern, client_id)) {
            done(auth_result{.outcome = verdict::deny,
                             .reason = "client id not allowed by clientIdPattern '" +
                                       parsed->client_id_pattern->source() + "' of credentials " +
                                       chosen->credentials_id,
                             .bad_credentials = false});
            return;
        }
        done(auth_result{.outcome = verdict::allow,
                         .type = chosen->type,
                         .rules = std::move(parsed->rules),
                         .reason = "credentials " + chosen->credentials_id});
        return;
    }
    // Unknown certificate: another provider (JWT, HTTP) may still know the client.
    done(auth_result{.outcome = verdict::not_applicable,
                     .reason = "no X_509 credentials for CN '" + leaf_cn + "'"});
}

}  // namespace starling::auth
