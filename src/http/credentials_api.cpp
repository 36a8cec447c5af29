#include "http/credentials_api.h"

#include "auth/credentials.h"
#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <charconv>
#include <memory>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view base_path = "/api/mqtt/client/credentials";
constexpr std::size_t max_page_size = 1000;

std::size_t query_number(std::string_view target, std::string_view name, std::size_t fallback) {
    const auto q = target.find('?');
    if (q == std::string_view::npos) {
        return fallback;
    }
    auto query = target.substr(q + 1);
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        const auto eq = pair.find('=');
        if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
            std::size_t value = 0;
            const auto text = pair.substr(eq + 1);
            auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
            if (ec == std::errc{} && p == text.data() + text.size()) {
                return value;
            }
        }
        if (amp == std::string_view::npos) {
            break;
        }
        query = query.substr(amp + 1);
    }
    return fallback;
}

json to_json(const client_credentials& c) {
    json value = json::parse(c.credentials_value, nullptr, false);
    if (value.is_object() && value.contains("password") && !value["password"].is_null()) {
        value["password"] = "***";  // never hand out hashes
    }
    return json{{"id", c.id},
                {"createdTime", c.created_time_ms},
                {"name", c.name},
                {"clientType", c.type == client_type::application ? "APPLICATION" : "DEVICE"},
                {"credentialsId", c.credentials_id},
                {"credentialsType", c.credentials_type},
                {"credentialsValue", value}};
}

std::optional<std::vector<std::string>> patterns(const json& rules, const char* a, const char* b) {
    for (const char* key : {a, b}) {
        if (auto it = rules.find(key); it != rules.end() && it->is_array()) {
            std::vector<std::string> out;
            for (const auto& p : *it) {
                if (p.is_string()) {
                    out.push_back(p.get<std::string>());
                }
            }
            return out;
        }
    }
    return std::nullopt;
}

// TBMQ's request body → spec; the error names the field.
std::optional<auth::credentials_spec> parse_spec(const std::string& body, std::string& why) {
    const json doc = json::parse(body, nullptr, false);
    if (!doc.is_object()) {
        why = "body is not a JSON object";
        return std::nullopt;
    }
    // A string member: absent → fallback; present but not a string → an error naming it.
    // (json::value() would throw on the wrong type, and a handler must answer 400, not 500.)
    auto member_text = [&why](const json& object, const char* key,
                              const char* fallback) -> std::optional<std::string> {
        const auto it = object.find(key);
        if (it == object.end() || it->is_null()) {
            return std::string(fallback);
        }
        if (!it->is_string()) {
            why = std::string(key) + " must be a string";
            return std::nullopt;
        }
        return it->get<std::string>();
    };
    auth::credentials_spec spec;
    const auto name = member_text(doc, "name", "");
    const auto type = member_text(doc, "clientType", "DEVICE");
    const auto credentials_type = member_text(doc, "credentialsType", "");
    if (!name || !type || !credentials_type) {
        return std::nullopt;
    }
    spec.name = *name;
    if (spec.name.empty()) {
        why = "name is required";
        return std::nullopt;
    }
    if (*type != "DEVICE" && *type != "APPLICATION") {
        why = "clientType must be DEVICE or APPLICATION";
        return std::nullopt;
    }
    spec.type = *type == "APPLICATION" ? client_type::application : client_type::device;
    spec.credentials_type = *credentials_type;
    json value = doc.contains("credentialsValue") ? doc["credentialsValue"] : json::object();
    if (value.is_string()) {
        value = json::parse(value.get<std::string>(), nullptr, false);  // TBMQ sends a string
    }
    if (!value.is_object()) {
        why = "credentialsValue must be a JSON object (or a string holding one)";
        return std::nullopt;
    }
    auto text = [&value](const char* key) -> std::optional<std::string> {
        auto it = value.find(key);
        return it != value.end() && it->is_string() ? std::optional(it->get<std::string>())
                                                    : std::nullopt;
    };
    json rules = json::object();
    if (spec.credentials_type == auth::credentials_type_basic) {
        spec.client_id = text("clientId");
        spec.username = text("userName");
        spec.password = text("password");
        if (auto it = value.find("authRules"); it != value.end() && it->is_object()) {
            rules = *it;
        }
    } else if (spec.credentials_type == auth::credentials_type_x509) {
        spec.cert_cn = text("certCnPattern");
        if (auto it = value.find("certCnIsRegex"); it != value.end() && !it->is_null()) {
            if (!it->is_boolean()) {
                why = "credentialsValue.certCnIsRegex must be true or false";
                return std::nullopt;
            }
            spec.cert_cn_is_regex = it->get<bool>();
        }
        // One rule set for every CN (the YAML form); a full authRulesMapping is not taken here.
        if (auto it = value.find("authRules"); it != value.end() && it->is_object()) {
            rules = *it;
        }
    }
    spec.client_id_pattern = text("clientIdPattern");
    spec.publish_patterns = patterns(rules, "pubAuthRulePatterns", "pub");
    spec.subscribe_patterns = patterns(rules, "subAuthRulePatterns", "sub");
    return spec;
}

}  // namespace

void add_credentials_routes(router& routes, metadata_store& store, auth::worker_pool& pool,
                            auth::authenticator* authenticator, api_access access) {
    admin_routes admin(routes, std::move(access));
    const std::string path(base_path);

    admin.add_async(verb::get, path, [&store](const request& req, responder respond) {
        const auto size =
            std::clamp<std::size_t>(query_number(req.target(), "pageSize", 100), 1, max_page_size);
        const auto page = query_number(req.target(), "page", 0);
        // One more than asked: tells whether another page exists.
        store.list_credentials(
            size + 1, page * size, [respond, size](result<std::vector<client_credentials>> rows) {
                if (!rows) {
                    respond(
                        error_response(status_code::service_unavailable, rows.error().message()));
                    return;
                }
                json data = json::array();
                for (std::size_t i = 0; i < rows->size() && i < size; ++i) {
                    data.push_back(to_json((*rows)[i]));
                }
                json body{{"data", data}, {"hasNext", rows->size() > size}};
                respond(make_response(status_code::ok, "application/json", body.dump()));
            });
    });

    admin.add_async(
        verb::post, path, [&store, &pool, authenticator](const request& req, responder respond) {
            std::string why;
            auto spec = parse_spec(req.body(), why);
            if (!spec) {
                respond(error_response(status_code::bad_request, why));
                return;
            }
            // bcrypt hashing is slow by design: off the I/O thread.
            const bool queued =
                pool.submit([&store, authenticator, spec = std::move(*spec), respond]() mutable {
                    std::string error;
                    auto row = auth::to_credentials_row(spec, &error);
                    if (!row) {
                        respond(error_response(status_code::bad_request, error));
                        return;
                    }
                    auto saved_row = *row;
                    store.save_credentials(
                        std::move(*row), [respond, authenticator, saved_row](status st) {
                            if (!st) {
                                respond(error_response(status_code::service_unavailable,
                                                       st.error().message()));
                                return;
                            }
                            if (authenticator != nullptr) {
                                authenticator->clear_cache();
                            }
                            spdlog::info("credentials {} saved through the REST API",
                                         saved_row.credentials_id);
                            respond(make_response(status_code::ok, "application/json",
                                                  to_json(saved_row).dump()));
                        });
                });
            if (!queued) {
                respond(error_response(status_code::service_unavailable, "auth worker pool busy"));
            }
        });

    admin.add_async(
        verb::delete_, path + "/*", [&store, authenticator](const request& req, responder respond) {
            std::string_view target = req.target();
            target = target.substr(0, target.find('?'));
            auto decoded = url_decode(target.substr(base_path.size() + 1));
            if (!decoded) {
                respond(error_response(status_code::bad_request,
                                       "credentials id: malformed percent-encoding"));
                return;
            }
            std::string id = std::move(*decoded);
            if (id.empty()) {
                respond(error_response(status_code::bad_request, "credentials id missing"));
                return;
            }
            store.delete_credentials(id, [respond, authenticator, id](status st) {
                if (!st) {
                    respond(error_response(status_code::service_unavailable, st.error().message()));
                    return;
                }
                if (authenticator != nullptr) {
                    authenticator->clear_cache();
                }
                spdlog::info("credentials {} deleted through the REST API", id);
                // The id was URL-decoded from the path: any bytes; invalid UTF-8 → U+FFFD.
                respond(make_response(status_code::ok, "application/json",
                                      json{{"credentialsId", id}}.dump(
                                          -1, ' ', false, json::error_handler_t::replace)));
            });
        });
}

}  // namespace starling::http
