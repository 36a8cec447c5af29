#pragma once

// app::daemon: one running Starling node. Builds the adapters chosen by `starling.mode`, the
// broker node over them, the MQTT listeners and the HTTP server, starts them in dependency
// order and stops them in reverse (SIGTERM drains: listeners stop accepting, v5 clients get
// DISCONNECT 0x8B, the log is flushed, stores are closed).
//
// Lifecycle: construct → start() → stop(); used from main's thread only.

#include "config/broker_config.h"

#include <memory>

namespace starling::app {

class daemon {
  public:
    explicit daemon(config::broker_config cfg);
    ~daemon();

    // Throws std::runtime_error naming what could not start.
    void start();
    void stop();

  private:
    void open_embedded_stores();  // SQLite device inbox and metadata under data_dir
    void open_cluster_stores();   // Redis device inbox, PostgreSQL metadata
    struct parts;
    config::broker_config cfg_;
    std::unique_ptr<parts> parts_;
};

}  // namespace starling::app
