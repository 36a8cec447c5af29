#include "auth/admin_tokens.h"

#include "auth/base64url.h"

#include <nlohmann/json.hpp>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>

namespace starling::auth {
namespace {

constexpr std::string_view header_json = R"({"alg":"HS256","typ":"JWT"})";

std::string_view scope_of(admin_token_kind kind) {
    return kind == admin_token_kind::access ? "SYS_ADMIN" : "REFRESH_TOKEN";
}

// A random token id, so two tokens issued in the same second differ.
std::string random_id() {
    std::array<unsigned char, 12> bytes{};
    if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
        return {};
    }
    return base64url_encode(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

}  // namespace

admin_tokens::admin_tokens(admin_token_options options) : options_(std::move(options)) {}

std::string admin_tokens::sign(std::string_view input) const {
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), options_.signing_key.data(), static_cast<int>(options_.signing_key.size()),
         reinterpret_cast<const unsigned char*>(input.data()), input.size(), mac.data(), &mac_len);
    return std::string(reinterpret_cast<const char*>(mac.data()), mac_len);
}

std::string admin_tokens::issue(std::string_view subject, admin_token_kind kind,
                                std::int64_t now_s) const {
    const auto ttl = kind == admin_token_kind::access ? options_.access_ttl : options_.refresh_ttl;
    const nlohmann::json claims = {
        {"sub", std::string(subject)}, {"scopes", {std::string(scope_of(kind))}},
        {"iss", options_.issuer},      {"iat", now_s},
        {"exp", now_s + ttl.count()},  {"jti", random_id()}};
    std::string token =
        base64url_encode(header_json) + '.' +
        base64url_encode(claims.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    token += '.' + base64url_encode(sign(token));
    return token;
}

std::optional<admin_claims> admin_tokens::verify(std::string_view token, admin_token_kind kind,
                                                 std::int64_t now_s) const {
    const auto first = token.find('.');
    const auto second = first == std::string_view::npos ? first : token.find('.', first + 1);
    if (second == std::string_view::npos || token.find('.', second + 1) != std::string_view::npos) {
        return std::nullopt;
    }
    // Compared as text: base64url leaves spare bits in the last character, and a decoder that
    // ignores them would accept several spellings of one signature (a malleable token).
    const auto signature = token.substr(second + 1);
    const auto expected = base64url_encode(sign(token.substr(0, second)));
    if (signature.size() != expected.size() ||
        CRYPTO_memcmp(signature.data(), expected.data(), expected.size()) != 0) {
        return std::nullopt;
    }
    // Signed by this key, so made by issue(): what is left to check is kind, issuer and expiry.
    const auto header_text = base64url_decode(token.substr(0, first));
    const auto claims_text = base64url_decode(token.substr(first + 1, second - first - 1));
    if (!header_text || !claims_text) {
        return std::nullopt;
    }
    const auto header = nlohmann::json::parse(*header_text, nullptr, false);
    const auto claims = nlohmann::json::parse(*claims_text, nullptr, false);
    if (!header.is_object() || header.value("alg", "") != "HS256" || !claims.is_object()) {
        return std::nullopt;
    }
    const auto sub = claims.find("sub");
    const auto scopes = claims.find("scopes");
    const auto exp = claims.find("exp");
    const auto iat = claims.find("iat");
    if (sub == claims.end() || !sub->is_string() || sub->get<std::string>().empty() ||
        scopes == claims.end() || !scopes->is_array() || exp == claims.end() ||
        !exp->is_number_integer() || iat == claims.end() || !iat->is_number_integer() ||
        claims.value("iss", "") != options_.issuer) {
        return std::nullopt;
    }
    if (*scopes != nlohmann::json::array({std::string(scope_of(kind))})) {
        return std::nullopt;
    }
    const auto expires = exp->get<std::int64_t>();
    if (now_s >= expires) {
        return std::nullopt;
    }
    return admin_claims{.subject = sub->get<std::string>(),
                        .kind = kind,
                        .issued_at_s = iat->get<std::int64_t>(),
                        .expires_at_s = expires};
}

}  // namespace starling::auth
