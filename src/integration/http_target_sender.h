#pragma once

// http_target_sender: an integration's HTTP endpoint (definition.h, http_target). One attempt
// = one request over the keep-alive pool of auth::http_client (as many connections as the
// executor keeps in flight); a 2xx answer is success, anything else — another status, a timeout,
// a refused connection, a TLS failure — is a failure the executor retries.

#include "auth/http_client.h"

#include "integration/definition.h"
#include "integration/target.h"
#include <boost/asio/any_io_executor.hpp>

namespace starling::integration {

class http_target_sender final : public target {
  public:
    http_target_sender(const definition& d, boost::asio::any_io_executor io);

    void send(const broker::app_message& msg, std::function<void(send_outcome)> done) override;
    // POSTs (or the configured method) the event document as JSON, with X-Starling-Event.
    void send_event(std::string_view event, const std::string& client_id, const std::string& json,
                    std::function<void(send_outcome)> done) override;
    void stop() override { client_.stop(); }
    std::string describe() const override { return target_.url_text; }

  private:
    void request(auth::http_headers headers, std::string body,
                 std::function<void(send_outcome)> done);
    http_target target_;
    payload_format payload_;
    auth::http_client client_;
};

}  // namespace starling::integration
