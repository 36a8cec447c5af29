#include "auth/http_provider.h"

#include "base/log_throttle.h"

#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <stdexcept>

namespace starling::auth {

namespace {

std::string base64(std::string_view in) {
    std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(in.data()),
                                  static_cast<int>(in.size()));
    out.resize(static_cast<std::size_t>(n));
    return out;
}

// Reads a list of strings from `doc[key]`; nullopt when absent, error text when malformed.
std::optional<std::vector<std::string>> string_list(const nlohmann::json& doc, const char* key,
                                                    std::string& error) {
    const auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) {
        return std::nullopt;
    }
    std::vector<std::string> out;
    if (!it->is_array()) {
        error = std::string(key) + " is not a list";
        return std::nullopt;
    }
    for (const auto& item : *it) {
        if (!item.is_string()) {
            error = std::string(key) + " holds a non-string";
            return std::nullopt;
        }
        out.push_back(item.get<std::string>());
    }
    return out;
}

http_client_options client_options(const http_provider_options& o) {
    http_client_options c;
    c.max_connections = o.max_connections;
    c.max_response_bytes = o.max_in_memory_buffer_kb * 1024;
    c.verify_tls_peer = o.verify_tls_peer;
    c.ca_file = o.ca_file;
    return c;
}

url checked_url(const http_provider_options& o) {
    if (auto error = o.validation_error()) {
        throw std::invalid_argument("HTTP auth provider: " + *error);
    }
    return url::parse(o.rest_endpoint_url).value();
}

}  // namespace

// State the in-flight callbacks share with the provider (they may outlive it).
struct http_provider::shared {
    client_type default_type = client_type::device;
    std::vector<std::string> default_publish;
    std::vector<std::string> default_subscribe;
    std::shared_ptr<const topic_rules> default_rules;
    std::atomic<std::size_t> in_flight{0};
    std::atomic<std::size_t> rejected{0};
    base::log_throttle overload_lines{1};
};

std::optional<std::string> http_provider_options::validation_error() const {
    if (!url::parse(rest_endpoint_url)) {
        return "restEndpointUrl: '" + rest_endpoint_url +
               "' is not an http:// or https:// URL with a host";
    }
    if (request_method.empty() || request_method.find_first_of(" \t\r\n") != std::string::npos) {
        return "requestMethod: '" + request_method + "' is not an HTTP method";
    }
    if (read_timeout.count() <= 0) {
        return "readTimeoutMs: must be positive";
    }
    if (max_parallel_requests == 0) {
        return "maxParallelRequestsCount: must be at least 1";
    }
    if (max_in_memory_buffer_kb == 0) {
        return "maxInMemoryBufferSizeInKb: must be at least 1";
    }
    if (max_connections == 0) {
        return "TB_HTTP_AUTH_CLIENT_POOL_MAX_CONNECTIONS: must be at least 1";
    }
    if (basic_username.has_value() != basic_password.has_value()) {
        return "credentials: basic credentials need both username and password";
    }
    std::string bad;
    if (!compile_topic_rules(auth_rules.publish, auth_rules.subscribe, &bad)) {
        return "authRules: invalid regular expression '" + bad + "'";
    }
    return std::nullopt;
}

http_provider::http_provider(http_provider_options options, boost::asio::any_io_executor executor)
    : options_(std::move(options)),
      shared_(std::make_shared<shared>()),
      client_(checked_url(options_), std::move(executor), client_options(options_)) {
    if (options_.basic_username) {
        options_.headers.emplace_back(
            "Authorization",
            "Basic " + base64(*options_.basic_username + ":" + *options_.basic_password));
    }
    shared_->default_type = options_.default_client_type;
    shared_->default_publish = options_.auth_rules.publish;
    shared_->default_subscribe = options_.auth_rules.subscribe;
    shared_->default_rules =
        compile_topic_rules(options_.auth_rules.publish, options_.auth_rules.subscribe).value();
}

http_provider::~http_provider() { stop(); }

void http_provider::stop() { client_.stop(); }

std::size_t http_provider::rejected_overload() const {
    return shared_->rejected.load(std::memory_order_relaxed);
}

std::size_t http_provider::in_flight() const {
    return shared_->in_flight.load(std::memory_order_relaxed);
}

std::size_t http_provider::connections_opened() const { return client_.connections_opened(); }

std::string http_provider::render_body(const auth_request& request) const {
    static constexpr std::string_view tokens[] = {"${clientId}", "${username}", "${password}"};
    const std::string values[] = {json_escape(request.client_id),
                                  json_escape(request.username.value_or("")),
                                  json_escape(request.password.value_or(""))};
    const std::string_view tpl = options_.request_body;
    std::string out;
    out.reserve(tpl.size() + 64);
    for (std::size_t i = 0; i < tpl.size();) {
        bool replaced = false;
        for (std::size_t t = 0; t < std::size(tokens); ++t) {
            if (tpl.substr(i).starts_with(tokens[t])) {
                out += values[t];
                i += tokens[t].size();
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            out += tpl[i++];
        }
    }
    return out;
}

namespace {

auth_result interpret(const http_provider::shared& s, const result<http_response>& response,
                      const std::string& client_id) {
    if (!response) {
        return make_unavailable(response.error().message());
    }
    const unsigned status = response->status;
    if (status == 401 || status == 403) {
        return make_deny("HTTP auth: status " + std::to_string(status), true);
    }
    if (status < 200 || status > 299) {
        return make_unavailable("HTTP status " + std::to_string(status));
    }
    auto doc = nlohmann::json::parse(response->body, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        return make_allow(s.default_type, s.default_rules);
    }
    client_type type = s.default_type;
    if (const auto it = doc.find("clientType"); it != doc.end() && it->is_string()) {
        if (auto parsed = parse_client_type(it->get<std::string>())) {
            type = *parsed;
        } else {
            spdlog::warn(
                "HTTP auth: client '{}': unknown clientType '{}' in the answer, using "
                "the default",
                client_id, it->get<std::string>());
        }
    }
    std::string error;
    auto publish = string_list(doc, "pubAuthRulePatterns", error);
    auto subscribe = string_list(doc, "subAuthRulePatterns", error);
    if (!error.empty()) {
        return make_unavailable("bad answer: " + error);
    }
    if (!publish && !subscribe) {
        return make_allow(type, s.default_rules);
    }
    std::string bad;
    auto rules = compile_topic_rules(publish.value_or(s.default_publish),
                                     subscribe.value_or(s.default_subscribe), &bad);
    if (!rules) {
        return make_unavailable("bad answer: invalid regular expression '" + bad + "'");
    }
    return make_allow(type, std::move(*rules));
}

}  // namespace

void http_provider::authenticate(const auth_request& request,
                                 std::function<void(auth_result)> done) {
    const auto previous = shared_->in_flight.fetch_add(1, std::memory_order_relaxed);
    if (previous >= options_.max_parallel_requests) {
        shared_->in_flight.fetch_sub(1, std::memory_order_relaxed);
        shared_->rejected.fetch_add(1, std::memory_order_relaxed);
        // One line a second at most: a flood must not turn into a flood of log lines.
        std::size_t held_back = 0;
        if (shared_->overload_lines.admit(std::chrono::steady_clock::now(), held_back)) {
            spdlog::warn(
                "HTTP auth: client '{}' refused as busy: {} requests in flight "
                "(maxParallelRequestsCount); {} more refused since the last report",
                base::clipped_for_log(request.client_id), previous, held_back);
        }
        // Load shedding, not a failure of the endpoint: it never counts toward the circuit
        // breaker, which would lock every client out because of a flood (auth_result::shed);
        // the CONNECT is refused with Server busy.
        auto busy =
            make_deny(std::string(unavailable_prefix) + "too many pending auth requests", false);
        busy.shed = true;
        done(std::move(busy));
        return;
    }
    client_.request(
        options_.request_method, options_.headers, render_body(request), options_.read_timeout,
        [s = shared_, client_id = request.client_id,
         done = std::move(done)](result<http_response> response) {
            s->in_flight.fetch_sub(1, std::memory_order_relaxed);
            auto outcome = interpret(*s, response, client_id);
            if (outcome.outcome == verdict::deny) {
                spdlog::info("HTTP auth: client '{}' denied: {}", client_id, outcome.reason);
            }
            done(std::move(outcome));
        });
}

}  // namespace starling::auth
