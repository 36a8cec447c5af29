#include "http/auth_api.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>

namespace starling::http {
namespace {

using json = nlohmann::json;

// A text field of a JSON object body, or nullopt.
std::optional<std::string> text_field(const json& body, const char* name) {
    auto it = body.find(name);
    if (it == body.end() || !it->is_string()) {
        return std::nullopt;
    }
    return it->get<std::string>();
}

json token_pair(const auth::admin_tokens& tokens, const std::string& subject, std::int64_t now) {
    return {{"token", tokens.issue(subject, auth::admin_token_kind::access, now)},
            {"refreshToken", tokens.issue(subject, auth::admin_token_kind::refresh, now)}};
}

response too_many_attempts() {
    auto res = error_response(status_code::too_many_requests,
                              "too many failed logins from this address; try again later");
    res.set(boost::beast::http::field::retry_after, "60");
    return res;
}

std::string_view refusal_reason(auth::login_outcome outcome) {
    switch (outcome) {
        case auth::login_outcome::wrong_credentials:
            return "wrong user name or password";
        case auth::login_outcome::throttled:
            return "too many failed logins";
        default:
            return "not checked (busy, or the store is down)";
    }
}

// The bearer token of `req` (Authorization or X-Authorization), or "".
std::string_view bearer_of(const request& req) {
    for (const auto* header : {"X-Authorization", "Authorization"}) {
        auto it = req.find(header);
        if (it != req.end() && it->value().starts_with("Bearer ")) {
            return std::string_view(it->value()).substr(7);
        }
    }
    return {};
}

}  // namespace

void add_auth_routes(router& routes, auth_api api) {
    auto shared = std::make_shared<const auth_api>(std::move(api));

    routes.add_async(
        verb::post, "/api/auth/login", [shared](const request& req, responder respond) {
            const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
            auto username = body.is_object() ? text_field(body, "username") : std::nullopt;
            auto password = body.is_object() ? text_field(body, "password") : std::nullopt;
            if (!username || !password) {
                respond(error_response(status_code::bad_request,
                                       "body: expected {\"username\": text, \"password\": text}"));
                return;
            }
            // The request is gone once this handler returns: keep what the log needs.
            auto peer = peer_address(req);
            shared->users.check_login(
                peer, *username, std::move(*password),
                [shared, peer, username = *username, respond](auth::login_outcome outcome) {
                    if (outcome == auth::login_outcome::ok) {
                        spdlog::info("api: admin {} logged in from {}",
                                     base::clipped_for_log(username), peer);
                        respond(
                            json_response(token_pair(shared->tokens, username, shared->now_s())));
                        return;
                    }
                    // Refusals share the throttle of the other /api refusals: a guessing flood
                    // from many addresses cannot flood the log.
                    std::size_t held_back = 0;
                    if (refusal_log_throttle().admit(std::chrono::steady_clock::now(), held_back)) {
                        spdlog::warn("api: login refused for {} from {}: {}{}",
                                     base::clipped_for_log(username), peer, refusal_reason(outcome),
                                     held_back > 0
                                         ? fmt::format(" [{} more refusals not logged]", held_back)
                                         : "");
                    }
                    if (outcome == auth::login_outcome::wrong_credentials) {
                        respond(error_response(status_code::unauthorized,
                                               "wrong user name or password"));
                    } else if (outcome == auth::login_outcome::throttled) {
                        respond(too_many_attempts());
                    } else {
                        respond(error_response(status_code::service_unavailable,
                                               "cannot check the password now; retry"));
                    }
                });
        });

    routes.add_async(
        verb::post, "/api/auth/token", [shared](const request& req, responder respond) {
            const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
            auto refresh = body.is_object() ? text_field(body, "refreshToken") : std::nullopt;
            if (!refresh) {
                respond(error_response(status_code::bad_request,
                                       "body: expected {\"refreshToken\": text}"));
                return;
            }
            auto claims =
                shared->tokens.verify(*refresh, auth::admin_token_kind::refresh, shared->now_s());
            if (!claims) {
                log_refusal(req, "bad or expired refresh token");
                respond(error_response(status_code::unauthorized, "bad or expired refresh token"));
                return;
            }
            auto peer = peer_address(req);
            shared->users.exists(claims->subject, [shared, peer, subject = claims->subject,
                                                   respond](result<bool> known) {
                if (!known) {
                    respond(error_response(status_code::service_unavailable,
                                           "cannot check the user now; retry"));
                    return;
                }
                if (!known.value()) {
                    spdlog::warn("api: refresh refused for {} from {}: no such admin user any more",
                                 base::clipped_for_log(subject), peer);
                    respond(
                        error_response(status_code::unauthorized, "bad or expired refresh token"));
                    return;
                }
                respond(json_response(token_pair(shared->tokens, subject, shared->now_s())));
            });
        });

    admin_routes admin(routes, shared->access);
    admin.add(verb::get, "/api/auth/user", [shared](const request& req) {
        auto claims =
            shared->tokens.verify(bearer_of(req), auth::admin_token_kind::access, shared->now_s());
        if (!claims) {
            // Authorized, but not by a user's token: the static service-account token.
            return json_response({{"username", nullptr},
                                  {"authority", "SYS_ADMIN"},
                                  {"serviceAccount", true},
                                  {"expiresAt", nullptr}});
        }
        return json_response({{"username", claims->subject},
                              {"authority", "SYS_ADMIN"},
                              {"serviceAccount", false},
                              {"expiresAt", claims->expires_at_s * 1000}});
    });
}

}  // namespace starling::http
