#pragma once

// What the MQTT listeners and the HTTP server report:
//   - handshakeFailures_total{listener, reason}: PROXY header, TLS or WebSocket handshakes that
//     failed (reason proxy, tls, upgrade) or ran out of time (timeout);
//   - connectTimeouts_total{listener, phase}: connections closed by the connect deadline
//     (listener.connect-timeout, from accept): phase "handshake" while the PROXY header, TLS
//     handshake or WebSocket upgrade was still running, "connect" when the transport was ready
//     but no complete CONNECT arrived;
//   - connectionsRefused_total{listener, reason}: sockets closed at accept by admission control
//     (reason max_connections, descriptors, address_connections, address_rate);
//   - listenerConnections{listener}: sockets each listener holds now (a gauge the daemon sets
//     from a metrics refresher);
//   - httpConnectionsRefused_total{server, reason}: HTTP connections closed at accept (reason
//     max_connections, address_connections) or answered 503 in a health-probe slot (reason
//     reserved_slot);
//   - tlsCredentialReloads_total{listener, result};
//   - tlsCertificateExpiry_seconds{listener}: notAfter of the certificate a TLS listener serves
//     now (set by a refresher of the daemon, so a reloaded certificate shows at the next scrape).
//
// Lifecycle: owned by metrics::registry. Concurrency: any thread (prometheus-cpp's Family::Add
// locks one mutex and returns the existing child for known labels: fine for these events, which
// are per connection at most).

#include <cstddef>
#include <string_view>

namespace prometheus {
class Counter;
class Gauge;
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

    // A "timeout" also counts in connectTimeouts_total{phase="handshake"}.
    void handshake_failed(std::string_view listener, std::string_view reason);
    void connect_timed_out(std::string_view listener);
    void connection_refused(std::string_view listener, std::string_view reason);
    void connections(std::string_view listener, std::size_t current);
    void http_connection_refused(std::string_view server, std::string_view reason);
    void credentials_reloaded(std::string_view listener, bool ok);
    void certificate_expires(std::string_view listener, double unix_seconds);

  private:
    prometheus::Family<prometheus::Counter>& failures_;
    prometheus::Family<prometheus::Counter>& timeouts_;
    prometheus::Family<prometheus::Counter>& refused_;
    prometheus::Family<prometheus::Gauge>& connections_;
    prometheus::Family<prometheus::Counter>& http_refused_;
    prometheus::Family<prometheus::Counter>& reloads_;
    prometheus::Family<prometheus::Gauge>& certificate_expiry_;
};

}  // namespace starling::metrics
