#include "http/unauthorized_client_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string_view>
#include <variant>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/unauthorized/client";
constexpr std::string_view item_prefix = "/api/unauthorized/client/";

json to_json(const unauthorized_client& c) {
    return {{"clientId", c.client_id},
            {"ipAddress", c.ip_address},
            {"ts", c.ts_ms},
            {"username", c.username},
            {"passwordProvided", c.password_provided},
            {"tlsUsed", c.tls_used},
            {"reason", c.reason}};
}

response store_failed(std::string_view what, const std::error_code& ec) {
    spdlog::warn("{} {}: metadata store failed: {}", what, path, ec.message());
    return error_response(status_code::service_unavailable,
                          std::string(what) + ": metadata store unavailable: " + ec.message());
}

// The client id of a /api/unauthorized/client/{clientId} request, or the 400 to answer.
std::variant<std::string, response> client_id_of(const request& req) {
    auto id = path_tail(req, item_prefix);
    if (!id) {
        return error_response(status_code::bad_request, "clientId: malformed percent-encoding");
    }
    if (id->empty()) {
        return error_response(status_code::bad_request, "clientId: required in the path");
    }
    return std::move(*id);
}

// Runs `then(client_id, done)` for a /api/unauthorized/client/{clientId} request, or answers
// the 400.
template <class Then>
void with_client_id(const request& req, responder done, Then then) {
    auto id = client_id_of(req);
    if (auto* bad = std::get_if<response>(&id)) {
        done(std::move(*bad));
        return;
    }
    then(std::get<std::string>(std::move(id)), std::move(done));
}

}  // namespace

void add_unauthorized_client_routes(router& routes, metadata_store& store, api_access access) {
    admin_routes api(routes, std::move(access));
    if (!api.enabled()) {
        spdlog::info("unauthorized-client REST API disabled (no admin token and admin login off)");
        return;
    }
    metadata_store* db = &store;

    api.add_async(verb::get, std::string(path), [db](const request& req, responder done) {
        auto params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&params)) {
            done(std::move(*bad));
            return;
        }
        const auto& q = std::get<query_params>(params);
        auto page = page_of(q);
        if (auto* bad = std::get_if<response>(&page)) {
            done(std::move(*bad));
            return;
        }
        const auto wanted = std::get<page_request>(page);
        unauthorized_query query{.limit = static_cast<std::size_t>(wanted.size),
                                 .offset = static_cast<std::size_t>(wanted.page * wanted.size)};
        if (auto it = q.find("textSearch"); it != q.end()) {
            query.client_id_contains = it->second;
        }
        db->list_unauthorized(
            std::move(query), [done = std::move(done), wanted](result<unauthorized_page> rows) {
                if (!rows) {
                    done(store_failed("GET", rows.error()));
                    return;
                }
                json data = json::array();
                for (const auto& row : rows.value().rows) {
                    data.push_back(to_json(row));
                }
                done(json_response(page_data(
                    std::move(data), static_cast<std::int64_t>(rows.value().total), wanted)));
            });
    });

    api.add_async(
        verb::get, std::string(item_prefix) + "*", [db](const request& req, responder done) {
            with_client_id(req, std::move(done), [db](std::string id, responder reply) {
                db->find_unauthorized(
                    std::move(id),
                    [reply = std::move(reply)](result<std::optional<unauthorized_client>> row) {
                        if (!row) {
                            reply(store_failed("GET", row.error()));
                        } else if (!row.value()) {
                            reply(error_response(status_code::not_found,
                                                 "no unauthorized client with this id"));
                        } else {
                            reply(json_response(to_json(*row.value())));
                        }
                    });
            });
        });

    api.add_async(verb::delete_, std::string(item_prefix) + "*",
                  [db](const request& req, responder done) {
                      with_client_id(req, std::move(done), [db](std::string id, responder reply) {
                          db->delete_unauthorized(
                              std::move(id), [reply = std::move(reply)](result<bool> removed) {
                                  if (!removed) {
                                      reply(store_failed("DELETE", removed.error()));
                                  } else if (!removed.value()) {
                                      reply(error_response(status_code::not_found,
                                                           "no unauthorized client with this id"));
                                  } else {
                                      reply(json_response(json::object()));
                                  }
                              });
                      });
                  });

    api.add_async(verb::delete_, std::string(path), [db](const request&, responder done) {
        db->clear_unauthorized([done = std::move(done)](result<std::size_t> deleted) {
            if (!deleted) {
                done(store_failed("DELETE", deleted.error()));
                return;
            }
            spdlog::info("unauthorized-client log cleared through {} ({} rows)", path,
                         deleted.value());
            done(json_response({{"deleted", deleted.value()}}));
        });
    });
}

}  // namespace starling::http
