#pragma once

// app::ie_process: one starling-ie, the integration executor run apart from the brokers
// (cluster mode). It reads the definitions from PostgreSQL, consumes each enabled integration's
// msg.ie.<id> in the integration's consumer group — which it shares with every other
// starling-ie and every broker node that runs executors, so each integration has one owner —
// sends to the targets, and reports status on ie.uplink for the brokers' API. It serves
// /actuator/health and /actuator/prometheus on server.port; it opens no MQTT listener and
// needs neither Redis nor the broker's state.
//
// Lifecycle: construct → start() → stop(); used from main's thread only.

#include "config/broker_config.h"

#include <memory>

namespace starling::app {

class ie_process {
  public:
    explicit ie_process(config::broker_config cfg);
    ~ie_process();

    // Throws std::runtime_error naming what could not start; waits (OUT_OF_SERVICE with the
    // reason) for Kafka and PostgreSQL, and throws start_interrupted on SIGTERM/SIGINT then.
    void start();
    // The executors finish their windows, commit and leave their groups, then the stores close.
    void stop();

  private:
    struct parts;
    config::broker_config cfg_;
    std::unique_ptr<parts> parts_;
};

}  // namespace starling::app
