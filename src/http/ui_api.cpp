#include "http/ui_api.h"

#include <boost/beast/http/field.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace starling::http {

namespace {

using boost::beast::http::field;

// Scripts, styles and images from this origin only; the API on this origin; the MQTT-over-
// WebSocket debugging client may open ws:/wss: to any host (the WS listener is another port).
constexpr std::string_view content_security_policy =
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

// FNV-1a over the body: cheap, stable across restarts of one build, different across builds
// whose file differs, which is all an ETag needs.
std::string etag_of(std::string_view body) {
    std::uint64_t h = 14695981039346656037ULL;
    for (const unsigned char c : body) {
        h = (h ^ c) * 1099511628211ULL;
    }
    constexpr std::string_view hex = "0123456789abcdef";
    std::string tag = "\"";
    for (int shift = 60; shift >= 0; shift -= 4) {
        tag.push_back(hex[(h >> shift) & 0xF]);
    }
    tag.push_back('"');
    return tag;
}

const ui_asset* find_asset(std::string_view path) {
    for (const auto& asset : ui_assets()) {
        if (asset.path == path) {
            return &asset;
        }
    }
    return nullptr;
}

response serve(const request& req, const ui_asset& asset) {
    const std::string etag = etag_of(asset.body);
    response res;
    if (req[field::if_none_match] == etag) {
        res = make_response(status_code::not_modified, ui_content_type(asset.path), "");
    } else {
        res = make_response(status_code::ok, ui_content_type(asset.path), std::string(asset.body));
    }
    res.set(field::etag, etag);
    res.set(field::cache_control, "no-cache");
    res.set("Content-Security-Policy", content_security_policy);
    res.set("X-Content-Type-Options", "nosniff");
    res.set("Referrer-Policy", "no-referrer");
    return res;
}

}  // namespace

std::string_view ui_content_type(std::string_view path) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 8> types{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".md", "text/markdown; charset=utf-8"},
    }};
    for (const auto& [suffix, type] : types) {
        if (path.ends_with(suffix)) {
            return type;
        }
    }
    return "application/octet-stream";
}

void add_ui_routes(router& routes, const api_access& access) {
    if (!access.enabled()) {
        return;
    }
    routes.add(verb::get, "/", [](const request& req) {
        const auto* index = find_asset("index.html");
        return index ? serve(req, *index) : error_response(status_code::not_found, "no UI built");
    });
    routes.add(verb::get, "/ui/*", [](const request& req) {
        std::string_view path = req.target();
        path = path.substr(0, path.find_first_of("?#"));
        path.remove_prefix(std::string_view("/ui/").size());
        // The table holds exact names only, so "..", "%2e" or a doubled '/' simply finds nothing.
        const auto* asset = find_asset(path);
        return asset ? serve(req, *asset) : error_response(status_code::not_found, "no such file");
    });
}

}  // namespace starling::http
