#include "integration/integration_api.h"

#include "auth/random_uuid.h"
#include "starling/clock.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <memory>

namespace starling::integration {
namespace {

using json = nlohmann::json;
using http::error_response;
using http::json_response;
using http::responder;
using http::response;
using http::status_code;
using http::verb;

constexpr std::chrono::milliseconds check_timeout{5000};

response bad(std::string_view message) { return error_response(status_code::bad_request, message); }

response unavailable(const std::error_code& ec) {
    return error_response(status_code::service_unavailable,
                          "the metadata store cannot answer: " + ec.message());
}

json status_json(const definition& d, const integration_service& service) {
    json s = {{"state", "PENDING"},
              {"sent", 0},
              {"failed", 0},
              {"retried", 0},
              {"lag", 0},
              {"lastError", nullptr},
              {"lastErrorTime", nullptr},
              {"reportedBy", nullptr},
              {"reportedAt", nullptr}};
    if (!d.enabled) {
        s["state"] = "DISABLED";
        return s;
    }
    auto reported = service.status_of(d.id);
    if (!reported || !reported->status.polled) {
        return s;
    }
    const auto& st = reported->status;
    s["state"] = !st.owner ? "STANDBY" : st.failing ? "FAILING" : "ACTIVE";
    s["sent"] = st.sent;
    s["failed"] = st.failed;
    s["retried"] = st.retried;
    s["lag"] = st.lag;
    if (st.owner) {
        s["reportedBy"] = reported->reporter;
        s["reportedAt"] = reported->reported_at_ms;
    }
    if (!st.last_error.empty()) {
        s["lastError"] = st.last_error;
        s["lastErrorTime"] = st.last_error_ms;
    }
    return s;
}

json full_json(const definition& d, const integration_service& service) {
    json j = to_json(d);
    j["status"] = status_json(d, service);
    return j;
}

// Every stored integration that parses (a row that does not is logged and left out).
std::vector<definition> definitions_of(const std::vector<integration_row>& rows) {
    std::vector<definition> out;
    for (const auto& row : rows) {
        auto d = from_row(row);
        if (auto* ok = std::get_if<definition>(&d)) {
            out.push_back(std::move(*ok));
        } else {
            spdlog::warn("integration {}: stored definition unreadable: {}", row.id,
                         std::get<std::string>(d));
        }
    }
    return out;
}

}  // namespace

void add_integration_routes(http::router& routes, metadata_store& store,
                            integration_service& service, http::api_access access) {
    http::admin_routes admin(routes, std::move(access));
    if (!admin.enabled()) {
        spdlog::info("integration REST API disabled (no admin token and admin login off)");
        return;
    }

    admin.add_async(verb::get, "/api/integrations",
                    [&store, &service](const http::request& req, responder done) {
                        auto asked = http::page_search_of(req);
                        if (auto* err = std::get_if<response>(&asked)) {
                            done(std::move(*err));
                            return;
                        }
                        auto& search = std::get<http::page_search>(asked);
                        store.list_integrations([&service, done = std::move(done),
                                                 want = search.page, text = std::move(search.text)](
                                                    result<std::vector<integration_row>> rows) {
                            if (!rows) {
                                done(unavailable(rows.error()));
                                return;
                            }
                            auto all = definitions_of(rows.value());
                            std::erase_if(all, [&](const definition& d) {
                                return !text.empty() && !http::contains_ignoring_case(d.name, text);
                            });
                            const auto [first, last] = http::page_slice(all.size(), want);
                            json data = json::array();
                            for (std::size_t i = first; i < last; ++i) {
                                data.push_back(full_json(all[i], service));
                            }
                            done(json_response(http::page_data(
                                std::move(data), static_cast<std::int64_t>(all.size()), want)));
                        });
                    });

    const std::string prefix = "/api/integration/";
    admin.add_async(verb::get, prefix + "*",
                    [&store, &service, prefix](const http::request& req, responder done) {
                        auto id = http::path_tail(req, prefix);
                        if (!id || id->empty()) {
                            done(bad("id: malformed"));
                            return;
                        }
                        store.list_integrations([&service, done = std::move(done), id = *id](
                                                    result<std::vector<integration_row>> rows) {
                            if (!rows) {
                                done(unavailable(rows.error()));
                                return;
                            }
                            for (const auto& d : definitions_of(rows.value())) {
                                if (d.id == id) {
                                    done(json_response(full_json(d, service)));
                                    return;
                                }
                            }
                            done(error_response(status_code::not_found, "no such integration"));
                        });
                    });

    admin.add_async(verb::delete_, prefix + "*",
                    [&store, &service, prefix](const http::request& req, responder done) {
                        auto id = http::path_tail(req, prefix);
                        if (!id || id->empty()) {
                            done(bad("id: malformed"));
                            return;
                        }
                        store.delete_integration(*id, [&service, done = std::move(done),
                                                       id = *id](result<bool> deleted) mutable {
                            if (!deleted) {
                                done(unavailable(deleted.error()));
                            } else if (!*deleted) {
                                done(error_response(status_code::not_found, "no such integration"));
                            } else {
                                spdlog::info("integration {} deleted", id);
                                service.announce_deleted(id);
                                service.refresh_now(id, [done = std::move(done)] {
                                    done(json_response(json::object()));
                                });
                            }
                        });
                    });

    admin.add_async(
        verb::post, "/api/integration/check", [&service](const http::request& req, responder done) {
            const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
            auto parsed = from_json(body);
            if (auto* err = std::get_if<std::string>(&parsed)) {
                done(bad(*err));
                return;
            }
            service.check_target(std::get<definition>(parsed), check_timeout,
                                 [done = std::move(done)](std::string error) {
                                     if (error.empty()) {
                                         done(json_response(json::object()));
                                     } else {
                                         done(bad("target: " + error));
                                     }
                                 });
        });

    admin.add_async(
        verb::post, "/api/integration",
        [&store, &service](const http::request& req, responder done) {
            const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
            auto parsed = from_json(body);
            if (auto* err = std::get_if<std::string>(&parsed)) {
                done(bad(*err));
                return;
            }
            auto d = std::get<definition>(std::move(parsed));
            // Saves `d` and answers it once this node's router and executors follow it.
            auto save = [&store, &service](definition saved, responder answer) {
                auto row = to_row(saved);
                store.save_integration(row, [&service, row, d = std::move(saved),
                                             done = std::move(answer)](status st) mutable {
                    if (!st) {
                        done(unavailable(st.error()));
                        return;
                    }
                    spdlog::info("integration {} ('{}', {}) saved", d.id, d.name, d.type);
                    service.announce(row);
                    service.refresh_now(std::nullopt,
                                        [&service, d = std::move(d), done = std::move(done)] {
                                            done(json_response(full_json(d, service)));
                                        });
                });
            };
            if (d.id.empty()) {
                d.id = auth::random_uuid();
                if (d.id.empty()) {
                    done(error_response(status_code::internal_server_error,
                                        "no random id available"));
                    return;
                }
                d.created_time_ms = system_clock::instance().epoch_ms();
                save(std::move(d), std::move(done));
                return;
            }
            store.list_integrations([save, d = std::move(d), done = std::move(done)](
                                        result<std::vector<integration_row>> rows) mutable {
                if (!rows) {
                    done(unavailable(rows.error()));
                    return;
                }
                const auto it =
                    std::find_if(rows->begin(), rows->end(),
                                 [&d](const integration_row& r) { return r.id == d.id; });
                if (it == rows->end()) {
                    done(error_response(status_code::not_found, "id: no integration has this id"));
                    return;
                }
                if (it->type != d.type) {
                    done(error_response(status_code::conflict,
                                        "type: integration " + d.id + " is " + it->type +
                                            "; the type cannot change: create a new integration"));
                    return;
                }
                d.created_time_ms = it->created_time_ms;
                save(std::move(d), std::move(done));
            });
        });
}

}  // namespace starling::integration
