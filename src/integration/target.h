#pragma once

// target: where one integration sends its messages (an HTTP endpoint, a Kafka topic). The
// executor owns the pacing — windows, retries, commits — and asks the target for single
// attempts; the target only knows its protocol.
//
// Lifecycle: start() once, send() any number of times from the executor's thread, stop() once
// (attempts in progress end with a failure, at the latest by their own timeout), then the
// destructor. `done` runs exactly once per send(), on a thread the target owns, or inline when
// the attempt could not start.

#include "base/result.h"
#include "broker/message.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace starling::integration {

struct definition;

struct send_outcome {
    bool ok = false;
    std::string error;  // why not, for the API's lastError and the log
};

class target {
  public:
    virtual ~target() = default;
    virtual status start() { return {}; }
    virtual void send(const broker::app_message& msg, std::function<void(send_outcome)> done) = 0;
    // A client lifecycle event (broker/lifecycle_events.h): `event` its name, `json` the event
    // document as produced.
    virtual void send_event(std::string_view event, const std::string& client_id,
                            const std::string& json, std::function<void(send_outcome)> done) = 0;
    virtual void stop() = 0;
    // Whether this node holds the integration's partition (the executor says so after each poll
    // that changes it). A target with a session of its own on the far side — MQTT, whose client
    // id is the integration's — connects only while this is true, so the nodes do not take the
    // session from each other.
    virtual void owner_changed(bool /*owner*/) {}
    // For logs: the URL, or the brokers and topic.
    virtual std::string describe() const = 0;
};

}  // namespace starling::integration
