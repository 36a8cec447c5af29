#include "http/credentials_api.h"

#include "auth/credentials.h"
#include "auth/password.h"
#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view base_path = "/api/mqtt/client/credentials";
// Rows one bulk import may carry: each plain password costs a bcrypt hash (tens of ms).
constexpr std::size_t max_import_rows = 1000;

// What answers show in place of a stored password hash (never handed out).
constexpr std::string_view masked_password = "***";

json to_json(const client_credentials& c) {
    json value = json::parse(c.credentials_value, nullptr, false);
    if (value.is_object() && value.contains("password") && !value["password"].is_null()) {
        value["password"] = masked_password;
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

// TBMQ's request body (or one element of a JSON bulk import) → spec; the error names the field.
std::optional<auth::credentials_spec> parse_spec(const json& doc, std::string& why) {
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

// RFC 4180 CSV: records of fields separated by ',', a field in double quotes may hold commas,
// line breaks and "" for a quote; CRLF or LF ends a record. nullopt on an unterminated quote.
std::optional<std::vector<std::vector<std::string>>> parse_csv(std::string_view text) {
    std::vector<std::vector<std::string>> records;
    std::vector<std::string> record;
    std::string field;
    bool quoted = false;
    bool any = false;  // the record has begun
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (quoted) {
            if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
                field += '"';
                ++i;
            } else if (c == '"') {
                quoted = false;
            } else {
                field += c;
            }
            continue;
        }
        if (c == '"') {
            quoted = true;
            any = true;
        } else if (c == ',') {
            record.push_back(std::move(field));
            field.clear();
            any = true;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
                ++i;
            }
            if (any || !field.empty()) {
                record.push_back(std::move(field));
                records.push_back(std::move(record));
            }
            field.clear();
            record.clear();
            any = false;
        } else {
            field += c;
            any = true;
        }
    }
    if (quoted) {
        return std::nullopt;
    }
    if (any || !field.empty()) {
        record.push_back(std::move(field));
        records.push_back(std::move(record));
    }
    return records;
}

// A CSV import (header row first; see credentials_api.h) → the JSON bodies a POST would take.
std::variant<std::vector<json>, std::string> csv_bodies(std::string_view text) {
    auto records = parse_csv(text);
    if (!records) {
        return std::string("csv: a quoted field is not closed");
    }
    if (records->empty()) {
        return std::string("csv: no header row");
    }
    const auto& header = records->front();
    static constexpr std::string_view known[] = {"name",
                                                 "clientType",
                                                 "credentialsType",
                                                 "clientId",
                                                 "userName",
                                                 "password",
                                                 "certCnPattern",
                                                 "certCnIsRegex",
                                                 "clientIdPattern",
                                                 "pubAuthRulePatterns",
                                                 "subAuthRulePatterns"};
    for (const auto& column : header) {
        if (std::find(std::begin(known), std::end(known), column) == std::end(known)) {
            return "csv: unknown column '" + column + "'";
        }
    }
    std::vector<json> bodies;
    for (std::size_t r = 1; r < records->size(); ++r) {
        const auto& row = (*records)[r];
        json body = json::object();
        json value = json::object();
        json rules = json::object();
        for (std::size_t c = 0; c < header.size() && c < row.size(); ++c) {
            const auto& column = header[c];
            const auto& cell = row[c];
            if (cell.empty()) {
                continue;  // an empty cell is an absent field
            }
            if (column == "name" || column == "clientType" || column == "credentialsType") {
                body[column] = cell;
            } else if (column == "pubAuthRulePatterns" || column == "subAuthRulePatterns") {
                json list = json::array();
                std::string_view rest = cell;
                while (!rest.empty()) {  // patterns separated by ';'
                    const auto semi = rest.find(';');
                    list.push_back(std::string(rest.substr(0, semi)));
                    rest =
                        semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
                }
                rules[column] = list;
            } else if (column == "certCnIsRegex") {
                value[column] = cell == "true";
            } else {
                value[column] = cell;
            }
        }
        if (!rules.empty()) {
            value["authRules"] = rules;
        }
        body["credentialsValue"] = value;
        bodies.push_back(std::move(body));
    }
    return bodies;
}

// One bulk import, saved a row at a time: each row's bcrypt runs as its own job on the auth
// worker pool, so MQTT clients authenticating meanwhile wait behind one hash, not a thousand.
struct bulk_import : std::enable_shared_from_this<bulk_import> {
    metadata_store& store;
    auth::worker_pool& pool;
    auth::authenticator* authenticator;
    std::vector<std::pair<std::size_t, auth::credentials_spec>> rows;  // (line, spec)
    std::size_t total = 0;
    json errors = json::array();
    std::size_t saved = 0;
    std::size_t next = 0;
    responder respond;

    bulk_import(metadata_store& st, auth::worker_pool& p, auth::authenticator* a)
        : store(st), pool(p), authenticator(a) {}

    void fail(std::size_t line, std::string message) {
        errors.push_back({{"line", line}, {"message", std::move(message)}});
    }

    void step() {
        if (next == rows.size()) {
            finish();
            return;
        }
        auto self = shared_from_this();
        const bool queued = pool.submit([self] {
            auto& [line, spec] = self->rows[self->next];
            std::string why;
            auto row = auth::to_credentials_row(spec, &why);
            if (!row) {
                self->fail(line, why);
                ++self->next;
                self->step();
                return;
            }
            self->store.save_credentials(std::move(*row), [self, line = line](status st) {
                if (st) {
                    ++self->saved;
                } else {
                    self->fail(line, "not saved: " + st.error().message());
                }
                ++self->next;
                self->step();
            });
        });
        if (!queued) {
            // The pool is full (an authentication flood): the rest is reported, not dropped
            // silently; the caller can send those rows again.
            for (; next < rows.size(); ++next) {
                fail(rows[next].first, "auth worker pool busy; not saved, retry");
            }
            finish();
        }
    }

    void finish() {
        if (authenticator != nullptr && saved > 0) {
            authenticator->clear_cache();
        }
        spdlog::info("credentials bulk import through the REST API: {} of {} rows saved", saved,
                     total);
        respond(json_response(
            {{"total", total}, {"saved", saved}, {"failed", total - saved}, {"errors", errors}}));
    }
};

// After a save or delete: answers 503 for a store error (false), else clears the
// authentication cache so the change applies to the next CONNECT (true).
bool applied(const status& st, auth::authenticator* authenticator, const responder& respond) {
    if (!st) {
        respond(error_response(status_code::service_unavailable, st.error().message()));
        return false;
    }
    if (authenticator != nullptr) {
        authenticator->clear_cache();
    }
    return true;
}

// The body of a finished change: the row as the store holds it now (its id and creation time).
void answer_stored(metadata_store& store, const std::string& credentials_id, responder respond) {
    store.find_credentials({credentials_id},
                           [respond, credentials_id](result<std::vector<client_credentials>> rows) {
                               if (!rows || rows->empty()) {
                                   respond(error_response(status_code::service_unavailable,
                                                          "saved, but cannot read it back"));
                                   return;
                               }
                               respond(json_response(to_json(rows->front())));
                           });
}

// Finds the row a /{credentialsId} path names; answers 400/404/503 itself when there is none.
void with_row(metadata_store& store, const request& req, responder respond,
              std::function<void(client_credentials, responder)> then) {
    auto id = path_tail(req, std::string(base_path) + "/");
    if (!id || id->empty()) {
        respond(error_response(status_code::bad_request,
                               "credentialsId: missing or malformed percent-encoding"));
        return;
    }
    store.find_credentials(
        {*id}, [respond, then = std::move(then)](result<std::vector<client_credentials>> rows) {
            if (!rows) {
                respond(error_response(status_code::service_unavailable, rows.error().message()));
                return;
            }
            if (rows->empty()) {
                respond(error_response(status_code::not_found, "no such credentials"));
                return;
            }
            then(std::move(rows->front()), respond);
        });
}

// `row` (an MQTT_BASIC row sent with password "***") with the password hash stored under its
// credentials id, then `then(row)`; 400 when no stored row has that id or it has no password.
void with_stored_password(metadata_store& store, client_credentials row, const responder& respond,
                          std::function<void(client_credentials)> then) {
    const std::string id = row.credentials_id;
    store.find_credentials({id}, [row = std::move(row), respond, then = std::move(then)](
                                     result<std::vector<client_credentials>> rows) mutable {
        if (!rows) {
            respond(error_response(status_code::service_unavailable, rows.error().message()));
            return;
        }
        const json stored =
            rows->empty() ? json() : json::parse(rows->front().credentials_value, nullptr, false);
        const auto hash = stored.is_object() ? stored.find("password") : stored.end();
        if (!stored.is_object() || hash == stored.end() || !hash->is_string()) {
            respond(error_response(status_code::bad_request,
                                   "credentialsValue.password: \"***\" keeps the stored "
                                   "password, but " +
                                       row.credentials_id + " has none"));
            return;
        }
        json value = json::parse(row.credentials_value);
        value["password"] = *hash;
        row.credentials_value = value.dump();
        then(std::move(row));
    });
}

}  // namespace

void add_credentials_routes(router& routes, metadata_store& store, auth::worker_pool& pool,
                            auth::authenticator* authenticator, api_access access) {
    admin_routes admin(routes, std::move(access));
    const std::string path(base_path);

    admin.add_async(verb::get, path, [&store](const request& req, responder respond) {
        auto params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&params)) {
            respond(std::move(*bad));
            return;
        }
        auto page = page_of(std::get<query_params>(params));
        if (auto* bad = std::get_if<response>(&page)) {
            respond(std::move(*bad));
            return;
        }
        const auto wanted = std::get<page_request>(page);
        store.count_credentials([&store, respond, wanted](result<std::size_t> total) {
            if (!total) {
                respond(error_response(status_code::service_unavailable, total.error().message()));
                return;
            }
            store.list_credentials(
                static_cast<std::size_t>(wanted.size),
                static_cast<std::size_t>(wanted.size * wanted.page),
                [respond, wanted,
                 total = total.value()](result<std::vector<client_credentials>> rows) {
                    if (!rows) {
                        respond(error_response(status_code::service_unavailable,
                                               rows.error().message()));
                        return;
                    }
                    json data = json::array();
                    for (const auto& row : *rows) {
                        data.push_back(to_json(row));
                    }
                    respond(json_response(
                        page_data(std::move(data), static_cast<std::int64_t>(total), wanted)));
                });
        });
    });

    admin.add_async(verb::get, path + "/*", [&store](const request& req, responder respond) {
        with_row(store, req, std::move(respond),
                 [](client_credentials row, responder done) { done(json_response(to_json(row))); });
    });

    admin.add_async(
        verb::post, path, [&store, &pool, authenticator](const request& req, responder respond) {
            std::string why;
            auto spec = parse_spec(json::parse(req.body(), nullptr, false), why);
            if (!spec) {
                respond(error_response(status_code::bad_request, why));
                return;
            }
            // "***" is what every answer shows for a stored password: a row read, edited and
            // sent back keeps its password instead of getting "***" as a new one.
            const bool keep_password = spec->password == masked_password;
            if (keep_password) {
                spec->password.reset();
            }
            // bcrypt hashing is slow by design: off the I/O thread.
            const bool queued = pool.submit([&store, authenticator, keep_password,
                                             spec = std::move(*spec), respond]() mutable {
                std::string error;
                auto row = auth::to_credentials_row(spec, &error);
                if (!row) {
                    respond(error_response(status_code::bad_request, error));
                    return;
                }
                auto save = [&store, authenticator, respond](client_credentials to_save) {
                    const auto credentials_id = to_save.credentials_id;
                    store.save_credentials(std::move(to_save), [&store, respond, authenticator,
                                                                credentials_id](status st) {
                        if (!applied(st, authenticator, respond)) {
                            return;
                        }
                        spdlog::info("credentials {} saved through the REST API", credentials_id);
                        answer_stored(store, credentials_id, respond);
                    });
                };
                if (keep_password) {
                    with_stored_password(store, std::move(*row), respond, std::move(save));
                } else {
                    save(std::move(*row));
                }
            });
            if (!queued) {
                respond(error_response(status_code::service_unavailable, "auth worker pool busy"));
            }
        });

    // TBMQ's change of password: {"newPassword": text} (null removes the password).
    admin.add_async(
        verb::post, path + "/*",
        [&store, &pool, authenticator](const request& req, responder respond) {
            const json body = json::parse(req.body(), nullptr, false);
            const auto it = body.is_object() ? body.find("newPassword") : body.end();
            if (!body.is_object() || it == body.end() || !(it->is_string() || it->is_null())) {
                respond(error_response(status_code::bad_request,
                                       "newPassword: required, text or null"));
                return;
            }
            std::optional<std::string> password;
            if (it->is_string()) {
                password = it->get<std::string>();
            }
            with_row(
                store, req, std::move(respond),
                [&store, &pool, authenticator, password](client_credentials row, responder done) {
                    if (row.credentials_type != auth::credentials_type_basic) {
                        done(error_response(status_code::bad_request,
                                            "newPassword: only MQTT_BASIC credentials have "
                                            "a password"));
                        return;
                    }
                    const bool queued =
                        pool.submit([&store, authenticator, password, row, done]() mutable {
                            json value = json::parse(row.credentials_value, nullptr, false);
                            if (!value.is_object()) {
                                value = json::object();
                            }
                            if (password) {
                                auto hash = auth::bcrypt_hash(*password);
                                if (!hash) {
                                    done(error_response(status_code::service_unavailable,
                                                        "cannot hash the password"));
                                    return;
                                }
                                value["password"] = *hash;
                            } else {
                                value["password"] = nullptr;
                            }
                            row.credentials_value =
                                value.dump(-1, ' ', false, json::error_handler_t::replace);
                            const auto credentials_id = row.credentials_id;
                            store.save_credentials(
                                std::move(row),
                                [&store, authenticator, credentials_id, done](status st) {
                                    if (!applied(st, authenticator, done)) {
                                        return;
                                    }
                                    spdlog::info(
                                        "credentials {}: password changed through the "
                                        "REST API",
                                        credentials_id);
                                    answer_stored(store, credentials_id, done);
                                });
                        });
                    if (!queued) {
                        done(error_response(status_code::service_unavailable,
                                            "auth worker pool busy"));
                    }
                });
        });

    // Bulk import: a JSON array of POST bodies, or CSV (Content-Type text/csv).
    admin.add_async(
        verb::post, path + "/bulk_import",
        [&store, &pool, authenticator](const request& req, responder respond) {
            const auto content_type = req[boost::beast::http::field::content_type];
            std::vector<json> bodies;
            if (content_type.starts_with("text/csv")) {
                auto parsed = csv_bodies(req.body());
                if (auto* why = std::get_if<std::string>(&parsed)) {
                    respond(error_response(status_code::bad_request, *why));
                    return;
                }
                bodies = std::move(std::get<std::vector<json>>(parsed));
            } else {
                json doc = json::parse(req.body(), nullptr, false);
                if (!doc.is_array()) {
                    respond(error_response(status_code::bad_request,
                                           "body: expected a JSON array of credentials, or CSV "
                                           "with Content-Type text/csv"));
                    return;
                }
                for (auto& element : doc) {
                    bodies.push_back(std::move(element));
                }
            }
            if (bodies.size() > max_import_rows) {
                respond(error_response(
                    status_code::bad_request,
                    "body: at most " + std::to_string(max_import_rows) + " rows per import"));
                return;
            }
            auto import = std::make_shared<bulk_import>(store, pool, authenticator);
            import->total = bodies.size();
            import->respond = std::move(respond);
            // Line numbers: of the CSV file (its header is line 1), or 1-based array positions.
            const std::size_t first_line = content_type.starts_with("text/csv") ? 2 : 1;
            for (std::size_t i = 0; i < bodies.size(); ++i) {
                std::string why;
                if (auto spec = parse_spec(bodies[i], why)) {
                    import->rows.emplace_back(first_line + i, std::move(*spec));
                } else {
                    import->fail(first_line + i, why);
                }
            }
            import->step();
        });

    admin.add_async(
        verb::delete_, path + "/*", [&store, authenticator](const request& req, responder respond) {
            with_row(store, req, std::move(respond),
                     [&store, authenticator](client_credentials row, responder done) {
                         const auto id = row.credentials_id;
                         store.delete_credentials(id, [done, authenticator, id](status st) {
                             if (!applied(st, authenticator, done)) {
                                 return;
                             }
                             spdlog::info("credentials {} deleted through the REST API", id);
                             done(json_response({{"credentialsId", id}}));
                         });
                     });
        });
}

}  // namespace starling::http
