#pragma once

// What the MQTT listeners report: failed TLS / WebSocket handshakes, by listener and reason
// (handshakeFailures_total{listener="ssl|ws|wss", reason="tls|upgrade|timeout"}), and TLS
// credential reloads.
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread (prometheus-cpp's Family::Add
// locks; handshake failures are rare enough for that).

#include <string_view>

namespace prometheus {
class Counter;
template <class T>
class Family;
class Registry;
}  // namespace prometheus

namespace starling::metrics {

class listener_probe {
  public:
    explicit listener_probe(prometheus::Registry& registry);

    listener_probe(const listener_probe&) = delete;
    listener_probe& operator=(const listener_probe&) = delete;

    void handshake_failed(std::string_view listener, std::string_view reason);
    void credentials_reloaded(std::string_view listener, bool ok);

  private:
    prometheus::Family<prometheus::Counter>& failures_;
    prometheus::Family<prometheus::Counter>& reloads_;
};

}  // namespace starling::metrics
