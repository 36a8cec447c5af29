#pragma once

// app::daemon: one running Starling node. Builds the adapters chosen by `starling.mode`, the
// broker node over them, the MQTT listeners and the HTTP server, starts them in dependency
// order and stops them in reverse (SIGTERM drains: listeners stop accepting, v5 clients get
// DISCONNECT 0x8B, the log is flushed, stores are closed).
//
// Lifecycle: construct → start() → stop(); used from main's thread only.

#include "app/startup.h"  // start_interrupted
#include "config/broker_config.h"

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace starling::http {
class router;
}  // namespace starling::http

namespace starling::app {

class daemon {
  public:
    explicit daemon(config::broker_config cfg);
    ~daemon();

    // Throws std::runtime_error naming what could not start. In cluster mode a store that does
    // not answer is waited for (retried with backoff, reported by /actuator/health as
    // OUT_OF_SERVICE with the reason) rather than fatal; a signal then throws start_interrupted.
    void start();
    void stop();

  private:
    // POST/GET /api/app/drain and the node_drain behind them (after the node exists).
    void add_drain(http::router& api);
    void open_embedded_stores();  // SQLite device inbox and metadata under data_dir
    void open_cluster_stores();   // Redis device inbox, PostgreSQL metadata
    // app::wait_for_store with this node's health (startup.h).
    void wait_for_store(std::string_view what,
                        const std::function<std::optional<std::string>()>& attempt);
    struct parts;
    config::broker_config cfg_;
    std::unique_ptr<parts> parts_;
};

}  // namespace starling::app
