#pragma once

// The HTTP authentication provider (TBMQ's HTTP provider): each CONNECT becomes one request
// to an external service, which answers allow (2xx), deny (401/403), or fails.
//
// Request: `request_method` (POST by default) to `rest_endpoint_url`, the configured headers,
// and `request_body` with ${clientId}, ${username} and ${password} replaced by the client's
// values, JSON-escaped (absent username/password → empty string).
//
// Answer:
//   2xx      → allow. An optional JSON body {"clientType": "APPLICATION",
//              "pubAuthRulePatterns": [...], "subAuthRulePatterns": [...]} overrides the
//              default client type and, per side, the configured authRules. A body that is
//              not JSON is ignored (a plain "OK" is common); an unknown clientType falls back
//              to the default (logged).
//   401/403  → deny, bad credentials.
//   other status, transport error, timeout, invalid rule pattern in the answer → deny (fail
//   closed) with a reason starting with `unavailable_prefix` (provider_support.h), counted by
//   the authenticator's circuit breaker.
//   more than max_parallel_requests in flight → the same deny marked `shed` (load shedding:
//   Server busy for the client, never counted by the breaker); one log line a second at most.
//
// Lifecycle: construct with valid options (the constructor throws std::invalid_argument naming
// the offending key: start-up only), authenticate() any number of times, stop() (also run by
// the destructor). Requests in flight when the provider is destroyed still complete (by their
// deadline at the latest) and call their callbacks.
//
// Concurrency: authenticate() is thread-safe and returns at once; the request runs on the
// executor passed in (on one strand), where `done` is called.

#include "auth/http_client.h"
#include "auth/provider.h"
#include "auth/provider_support.h"

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace starling::auth {

// Field by field with the TBMQ name of the HTTP provider configuration.
struct http_provider_options {
    std::string rest_endpoint_url = "http://localhost:8080";     // restEndpointUrl (http/https)
    std::string request_method = "POST";                         // requestMethod
    http_headers headers{{"Content-Type", "application/json"}};  // headers
    // credentials: type BASIC → "Authorization: Basic base64(user:password)"; unset =
    // ANONYMOUS. (TBMQ's certificate credentials are not supported.)
    std::optional<std::string> basic_username;  // credentials.username
    std::optional<std::string> basic_password;  // credentials.password
    std::string request_body =                  // requestBody
        R"({"clientId": "${clientId}", "username": "${username}", "password": "${password}"})";
    std::chrono::milliseconds read_timeout{5000};  // readTimeoutMs: bounds the whole request
    std::size_t max_parallel_requests = 100;       // maxParallelRequestsCount
    std::size_t max_in_memory_buffer_kb = 256;     // maxInMemoryBufferSizeInKb (response size)
    std::size_t max_connections = 16;              // env TB_HTTP_AUTH_CLIENT_POOL_MAX_CONNECTIONS
    client_type default_client_type = client_type::device;  // defaultClientType
    auth_rules_options auth_rules;                          // authRules
    // Starling additions (https): verify the server certificate, trust store file.
    bool verify_tls_peer = true;
    std::string ca_file;

    // The first invalid field as "<tbmqKey>: <reason>", or nullopt when valid.
    std::optional<std::string> validation_error() const;
};

class http_provider final : public auth_provider {
  public:
    http_provider(http_provider_options options, boost::asio::any_io_executor executor);
    ~http_provider() override;

    http_provider(const http_provider&) = delete;
    http_provider& operator=(const http_provider&) = delete;

    std::string_view name() const override { return "HTTP"; }
    void authenticate(const auth_request& request, std::function<void(auth_result)> done) override;

    void stop();

    // Requests refused because max_parallel_requests were in flight.
    std::size_t rejected_overload() const;
    std::size_t in_flight() const;
    // Connections opened to the endpoint (keep-alive reuse keeps this low).
    std::size_t connections_opened() const;

    // The body sent for `request` (exposed for tests of the template).
    std::string render_body(const auth_request& request) const;

    struct shared;

  private:
    http_provider_options options_;
    std::shared_ptr<shared> shared_;
    http_client client_;
};

}  // namespace starling::auth
