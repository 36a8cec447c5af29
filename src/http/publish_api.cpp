#include "http/publish_api.h"

#include "http/api_support.h"

#include <boost/beast/core/detail/base64.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <memory>
#include <string_view>
#include <utility>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/mqtt/publish";

response bad(std::string_view message) { return error_response(status_code::bad_request, message); }

// RFC 4648 base64 with the standard alphabet and padding; nullopt on anything else.
std::optional<std::string> base64_decode(std::string_view text) {
    namespace b64 = boost::beast::detail::base64;
    const auto padding = text.size() - std::min(text.size(), text.find_last_not_of('=') + 1);
    if (text.size() % 4 != 0 || padding > 2) {
        return std::nullopt;
    }
    const auto data = text.substr(0, text.size() - padding);
    const bool alphabet = std::all_of(data.begin(), data.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '+' || c == '/';
    });
    if (!alphabet) {
        return std::nullopt;
    }
    std::string out(b64::decoded_size(text.size()), '\0');
    const auto decoded = b64::decode(out.data(), data.data(), data.size());
    out.resize(decoded.first);
    return out;
}

// An optional string field: absent → nullopt; present and a string → its value; otherwise the
// 400 response.
std::variant<std::optional<std::string>, response> optional_string(const json& body,
                                                                   const char* name) {
    auto it = body.find(name);
    if (it == body.end() || it->is_null()) {
        return std::optional<std::string>{};
    }
    if (!it->is_string()) {
        return bad(std::string(name) + ": expected a string");
    }
    return std::optional<std::string>(it->get<std::string>());
}

}  // namespace

std::variant<publish_request, response> parse_publish_request(std::string_view text) {
    const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) {
        return bad("body: expected a JSON object");
    }
    publish_request r;
    auto topic = body.find("topic");
    if (topic == body.end() || !topic->is_string() ||
        topic->get_ref<const std::string&>().empty()) {
        return bad("topic: a non-empty string is required");
    }
    r.topic = topic->get<std::string>();
    std::string encoding = "text";
    if (auto it = body.find("payloadEncoding"); it != body.end()) {
        if (!it->is_string() || (*it != "text" && *it != "base64")) {
            return bad("payloadEncoding: text or base64");
        }
        encoding = it->get<std::string>();
    }
    if (auto it = body.find("payload"); it != body.end() && !it->is_null()) {
        if (!it->is_string()) {
            return bad("payload: expected a string");
        }
        if (encoding == "base64") {
            auto decoded = base64_decode(it->get_ref<const std::string&>());
            if (!decoded) {
                return bad("payload: not valid base64");
            }
            r.payload = std::move(*decoded);
        } else {
            r.payload = it->get<std::string>();
        }
    }
    if (auto it = body.find("qos"); it != body.end()) {
        if (!it->is_number_integer() || it->get<std::int64_t>() < 0 ||
            it->get<std::int64_t>() > 2) {
            return bad("qos: 0, 1 or 2");
        }
        r.qos = it->get<int>();
    }
    if (auto it = body.find("retain"); it != body.end()) {
        if (!it->is_boolean()) {
            return bad("retain: true or false");
        }
        r.retain = it->get<bool>();
    }
    if (auto it = body.find("userProperties"); it != body.end() && !it->is_null()) {
        if (!it->is_array()) {
            return bad("userProperties: expected an array of {\"k\": ..., \"v\": ...}");
        }
        for (const auto& p : *it) {
            auto k = p.is_object() ? p.find("k") : p.end();
            auto v = p.is_object() ? p.find("v") : p.end();
            if (!p.is_object() || k == p.end() || v == p.end() || !k->is_string() ||
                !v->is_string()) {
                return bad("userProperties: expected an array of {\"k\": ..., \"v\": ...}");
            }
            r.user_properties.emplace_back(k->get<std::string>(), v->get<std::string>());
        }
    }
    if (auto it = body.find("messageExpiryInterval"); it != body.end() && !it->is_null()) {
        if (!it->is_number_integer() || it->get<std::int64_t>() < 1 ||
            it->get<std::int64_t>() > std::numeric_limits<std::uint32_t>::max()) {
            return bad("messageExpiryInterval: seconds, 1 to 4294967295");
        }
        r.message_expiry_interval = it->get<std::uint32_t>();
    }
    for (auto [name, field] :
         {std::pair{"contentType", &r.content_type}, std::pair{"responseTopic", &r.response_topic},
          std::pair{"correlationData", &r.correlation_data}}) {
        auto value = optional_string(body, name);
        if (auto* err = std::get_if<response>(&value)) {
            return std::move(*err);
        }
        *field = std::get<std::optional<std::string>>(std::move(value));
    }
    return r;
}

void add_publish_routes(router& routes, publish_api api) {
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("publish REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<const publish_api>(std::move(api));
    admin.add_async(verb::post, std::string(path), [shared](const request& req, responder done) {
        auto parsed = parse_publish_request(req.body());
        if (auto* err = std::get_if<response>(&parsed)) {
            done(std::move(*err));
            return;
        }
        auto r = std::get<publish_request>(std::move(parsed));
        json answer = {{"topic", r.topic},
                       {"qos", r.qos},
                       {"retain", r.retain},
                       {"payloadBytes", r.payload.size()}};
        shared->publish(std::move(r), [done = std::move(done), answer = std::move(answer)](
                                          publish_outcome outcome, std::string message) {
            switch (outcome) {
                case publish_outcome::published:
                    done(json_response(answer));
                    return;
                case publish_outcome::bad_request:
                    done(bad(message));
                    return;
                case publish_outcome::retained_refused:
                    done(error_response(status_code::conflict, message));
                    return;
                case publish_outcome::unavailable:
                    done(error_response(status_code::service_unavailable, message));
                    return;
            }
        });
    });
}

}  // namespace starling::http
