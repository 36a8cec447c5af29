#include "integration/http_target_sender.h"

#include "integration/http_payload.h"

namespace starling::integration {
namespace {

auth::http_client_options client_options(const definition& d) {
    auth::http_client_options o;
    o.max_connections = d.delivery.max_in_flight;
    o.verify_tls_peer = d.http.verify_tls;
    o.ca_file = d.http.ca_file;
    return o;
}

}  // namespace

http_target_sender::http_target_sender(const definition& d, boost::asio::any_io_executor io)
    : target_(d.http), payload_(d.payload), client_(d.http.url, std::move(io), client_options(d)) {}

void http_target_sender::send(const broker::app_message& msg,
                              std::function<void(send_outcome)> done) {
    http_body body = make_http_body(msg, payload_);
    auto headers = target_.headers;
    headers.emplace_back("Content-Type", body.content_type);
    request(std::move(headers), std::move(body.body), std::move(done));
}

void http_target_sender::send_event(std::string_view event, const std::string& /*client_id*/,
                                    const std::string& json,
                                    std::function<void(send_outcome)> done) {
    auto headers = target_.headers;
    headers.emplace_back("Content-Type", "application/json");
    headers.emplace_back("X-Starling-Event", std::string(event));
    request(std::move(headers), json, std::move(done));
}

void http_target_sender::request(auth::http_headers headers, std::string body,
                                 std::function<void(send_outcome)> done) {
    client_.request(target_.method, std::move(headers), std::move(body), target_.request_timeout,
                    [done = std::move(done)](result<auth::http_response> r) {
                        if (!r) {
                            done({false, r.error().message()});
                        } else if (r->status < 200 || r->status >= 300) {
                            done({false, "HTTP status " + std::to_string(r->status)});
                        } else {
                            done({true, {}});
                        }
                    });
}

}  // namespace starling::integration
