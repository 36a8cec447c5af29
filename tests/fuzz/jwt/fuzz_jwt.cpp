// libFuzzer target for the JWT provider's pre-authentication path: splitting the CONNECT
// password into a JWS, base64url and JSON decoding of header and payload, the choice of key and
// algorithm from the untrusted header, signature dispatch (HMAC, RSA, ECDSA with the R||S to DER
// re-encoding), and — for tokens the target signs itself — the claims checks (exp/nbf, claim
// matching, rule claims compiled as RE2 patterns).
//
// Input: a mode byte, then
//   mode 0: the password, as is;
//   mode 1: header JSON, NUL, payload JSON — base64url-encoded and HMAC-signed here with the
//           provider's secret (so the claims code runs on arbitrary payloads);
//   mode 2: three NUL-separated byte strings, each base64url-encoded: header, payload and a
//           signature of any length.
//
// Properties (an abort is a finding): no crash or sanitizer report; an unsigned or foreign
// token (modes 0 and 2) is never allowed by any of the three providers (HMAC secret, RSA and EC
// public keys); an allow carries a non-negative valid_for.

#include "auth/base64url.h"
#include "auth/jwt_provider.h"

#include <boost/asio/io_context.hpp>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace starling::auth;

constexpr std::string_view hmac_secret = "fuzz-secret-of-at-least-thirty-two-bytes";

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_jwt invariant violated: %s\n", what);
        std::abort();
    }
}

std::string base64url(std::string_view in) { return starling::auth::base64url_encode(in); }

std::string public_pem(EVP_PKEY* key) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, key);
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(size));
    BIO_free(bio);
    EVP_PKEY_free(key);
    return out;
}

struct providers {
    boost::asio::io_context io;  // unused by ALGORITHM_BASED verification, required to build
    std::vector<std::unique_ptr<jwt_provider>> all;
    jwt_provider* hmac = nullptr;

    providers() {
        jwt_provider_options h;
        h.secret = std::string(hmac_secret);
        // Every claims feature on, so signed payloads reach each of them.
        h.auth_claims = {{"sub", "${clientId}"}};
        h.client_type_claims = {{"role", "app"}};
        h.pub_auth_rule_claim = "pub";
        h.sub_auth_rule_claim = "sub_rules";
        all.push_back(std::make_unique<jwt_provider>(h, io.get_executor()));
        hmac = all.back().get();
        for (EVP_PKEY* key : {EVP_RSA_gen(2048), EVP_EC_gen("P-256")}) {
            jwt_provider_options o;
            o.algorithm = jwt_sign_algorithm::pem_key;
            o.public_pem_key = public_pem(key);
            all.push_back(std::make_unique<jwt_provider>(o, io.get_executor()));
        }
    }
};

providers& instance() {
    static providers p = [] {
        spdlog::set_level(spdlog::level::off);  // every denied token is logged at info
        return providers();
    }();
    return p;
}

// Static keys answer inline, on this thread.
auth_result run(jwt_provider& provider, std::string password) {
    auth_request request;
    request.client_id = "dev-1";
    request.username = "alice";
    request.password = std::move(password);
    request.remote_address = "127.0.0.1:1";
    auth_result out;
    bool answered = false;
    provider.authenticate(request, [&](auth_result r) {
        out = std::move(r);
        answered = true;
    });
    check(answered, "a static-key provider did not answer inline");
    if (out.outcome == verdict::allow && out.valid_for) {
        check(out.valid_for->count() >= 0, "negative valid_for");
    }
    return out;
}

std::vector<std::string_view> split(std::string_view in, std::size_t parts) {
    std::vector<std::string_view> out;
    while (out.size() + 1 < parts) {
        const auto nul = in.find('\0');
        if (nul == std::string_view::npos) {
            break;
        }
        out.push_back(in.substr(0, nul));
        in.remove_prefix(nul + 1);
    }
    out.push_back(in);
    while (out.size() < parts) {
        out.emplace_back();
    }
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    auto& p = instance();
    const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
    switch (data[0] % 3) {
        case 0:
            for (auto& provider : p.all) {
                check(run(*provider, std::string(input)).outcome != verdict::allow,
                      "an arbitrary password was allowed");
            }
            break;
        case 1: {
            const auto parts = split(input, 2);
            const std::string signing_input = base64url(parts[0]) + "." + base64url(parts[1]);
            unsigned char mac[EVP_MAX_MD_SIZE];
            unsigned int mac_len = 0;
            HMAC(EVP_sha256(), hmac_secret.data(), static_cast<int>(hmac_secret.size()),
                 reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(),
                 mac, &mac_len);
            const std::string token =
                signing_input + "." +
                base64url(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
            run(*p.hmac, token);  // any verdict; the header decides whether HS256 is accepted
            for (std::size_t i = 1; i < p.all.size(); ++i) {
                check(run(*p.all[i], token).outcome != verdict::allow,
                      "an HMAC-signed token passed a public-key verifier");
            }
            break;
        }
        default: {
            const auto parts = split(input, 3);
            const std::string token =
                base64url(parts[0]) + "." + base64url(parts[1]) + "." + base64url(parts[2]);
            for (auto& provider : p.all) {
                check(run(*provider, token).outcome != verdict::allow,
                      "a token with a made-up signature was allowed");
            }
            break;
        }
    }
    return 0;
}
