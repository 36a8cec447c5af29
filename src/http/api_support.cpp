#include "http/api_support.h"

#include <openssl/crypto.h>

namespace starling::http {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

}  // namespace

bool bearer_authorized(const request& req, std::string_view token) {
    for (const auto* header : {"Authorization", "X-Authorization"}) {
        auto it = req.find(header);
        if (it == req.end()) {
            continue;
        }
        std::string_view value = it->value();
        if (!value.starts_with("Bearer ")) {
            continue;
        }
        value.remove_prefix(7);
        if (value.size() == token.size() &&
            CRYPTO_memcmp(value.data(), token.data(), token.size()) == 0) {
            return true;
        }
    }
    return false;
}

std::optional<std::string> url_decode(std::string_view in) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] == '+') {
            out.push_back(' ');
        } else if (in[i] == '%') {
            if (i + 2 >= in.size()) {
                return std::nullopt;
            }
            const int hi = hex_value(in[i + 1]);
            const int lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else {
            out.push_back(in[i]);
        }
    }
    return out;
}

std::optional<query_params> query_of(const request& req) {
    query_params params;
    const std::string_view target(req.target().data(), req.target().size());
    const std::size_t q = target.find('?');
    if (q == std::string_view::npos) {
        return params;
    }
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        const std::size_t amp = rest.find('&');
        const std::string_view pair = rest.substr(0, amp);
        rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
        if (pair.empty()) {
            continue;
        }
        const std::size_t eq = pair.find('=');
        auto key = url_decode(pair.substr(0, eq));
        auto value =
            url_decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
        if (!key || !value) {
            return std::nullopt;
        }
        params.insert_or_assign(std::move(*key), std::move(*value));
    }
    return params;
}

}  // namespace starling::http
