#include "http/router.h"

#include <boost/beast/http/field.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

namespace starling::http {

response make_response(status_code code, std::string_view content_type, std::string body) {
    response res{code, 11};
    res.set(boost::beast::http::field::content_type, content_type);
    res.body() = std::move(body);
    return res;
}

response error_response(status_code code, std::string_view message) {
    const nlohmann::json body = {{"status", static_cast<unsigned>(code)}, {"message", message}};
    // Messages may quote what the client sent; invalid UTF-8 becomes U+FFFD instead of throwing.
    return make_response(code, "application/json",
                         body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void router::add(verb method, std::string path, handler fn) {
    add_async(method, std::move(path),
              [fn = std::move(fn)](const request& req, responder respond) { respond(fn(req)); });
}

void router::add_async(verb method, std::string path, async_handler fn) {
    const bool prefix = path.ends_with("/*");
    if (prefix) {
        path.pop_back();  // keep the '/': "/api/*" matches "/api/..." but not "/apix"
    }
    routes_.push_back({method, std::move(path), prefix, std::move(fn)});
}

void router::dispatch(const request& req, const responder& respond) const {
    std::string_view path = req.target();
    path = path.substr(0, path.find('?'));

    // Best match for the path: exact first, else the longest prefix. A method mismatch on the
    // best path is remembered for the 405.
    const route* best = nullptr;
    std::string allowed;
    std::size_t best_length = 0;
    bool best_exact = false;
    for (const auto& r : routes_) {
        const bool exact = !r.prefix && path == r.path;
        const bool by_prefix = r.prefix && path.starts_with(r.path);
        if (!exact && !by_prefix) {
            continue;
        }
        const bool better =
            (exact && !best_exact) || (exact == best_exact && r.path.size() > best_length);
        const bool same = exact == best_exact && r.path.size() == best_length;
        if (better) {
            allowed.clear();
            best = nullptr;
            best_exact = exact;
            best_length = r.path.size();
        }
        if (better || same) {
            if (r.method == req.method()) {
                best = &r;
            }
            if (!allowed.empty()) {
                allowed += ", ";
            }
            allowed += boost::beast::http::to_string(r.method);
        }
    }
    if (best == nullptr) {
        if (allowed.empty()) {
            respond(error_response(status_code::not_found, "no such resource"));
        } else {
            auto res = error_response(status_code::method_not_allowed, "method not allowed");
            res.set(boost::beast::http::field::allow, allowed);
            respond(std::move(res));
        }
        return;
    }
    try {
        best->fn(req, respond);
    } catch (const std::exception& e) {
        // The exception's text may hold internals; it goes to the log, not to the client.
        spdlog::error("http: {} {} failed: {}", req.method_string(), path, e.what());
        respond(error_response(status_code::internal_server_error, "internal error"));
    }
}

}  // namespace starling::http
