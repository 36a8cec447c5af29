#include "metrics/listener_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <string>

namespace starling::metrics {

listener_probe::listener_probe(prometheus::Registry& registry)
    : failures_(prometheus::BuildCounter()
                    .Name("handshakeFailures_total")
                    .Help("PROXY header, TLS or WebSocket handshakes that failed or timed out")
                    .Register(registry)),
      timeouts_(prometheus::BuildCounter()
                    .Name("connectTimeouts_total")
                    .Help("Connections closed for not delivering a complete CONNECT within the "
                          "connect timeout (from accept), by listener and phase")
                    .Register(registry)),
      refused_(prometheus::BuildCounter()
                   .Name("connectionsRefused_total")
                   .Help("MQTT connections closed at accept by admission control, by listener "
                         "and reason")
                   .Register(registry)),
      connections_(prometheus::BuildGauge()
                       .Name("listenerConnections")
                       .Help("Sockets each MQTT listener holds (handshaking or connected)")
                       .Register(registry)),
      http_refused_(prometheus::BuildCounter()
                        .Name("httpConnectionsRefused_total")
                        .Help("HTTP connections refused, by server and reason")
                        .Register(registry)),
      reloads_(prometheus::BuildCounter()
                   .Name("tlsCredentialReloads_total")
                   .Help("TLS credential reloads after the files changed, by listener and outcome")
                   .Register(registry)),
      certificate_expiry_(prometheus::BuildGauge()
                              .Name("tlsCertificateExpiry_seconds")
                              .Help("When the certificate each TLS listener serves expires "
                                    "(notAfter, seconds since the epoch)")
                              .Register(registry)) {}

// Family::Add is thread-safe and returns the existing child for known labels.
void listener_probe::handshake_failed(std::string_view listener, std::string_view reason) {
    failures_.Add({{"listener", std::string(listener)}, {"reason", std::string(reason)}})
        .Increment();
    if (reason == "timeout") {
        timeouts_.Add({{"listener", std::string(listener)}, {"phase", "handshake"}}).Increment();
    }
}

void listener_probe::connect_timed_out(std::string_view listener) {
    timeouts_.Add({{"listener", std::string(listener)}, {"phase", "connect"}}).Increment();
}

void listener_probe::connection_refused(std::string_view listener, std::string_view reason) {
    refused_.Add({{"listener", std::string(listener)}, {"reason", std::string(reason)}})
        .Increment();
}

void listener_probe::connections(std::string_view listener, std::size_t current) {
    connections_.Add({{"listener", std::string(listener)}}).Set(static_cast<double>(current));
}

void listener_probe::http_connection_refused(std::string_view server, std::string_view reason) {
    http_refused_.Add({{"server", std::string(server)}, {"reason", std::string(reason)}})
        .Increment();
}

void listener_probe::credentials_reloaded(std::string_view listener, bool ok) {
    reloads_.Add({{"listener", std::string(listener)}, {"result", ok ? "ok" : "failed"}})
        .Increment();
}

void listener_probe::certificate_expires(std::string_view listener, double unix_seconds) {
    certificate_expiry_.Add({{"listener", std::string(listener)}}).Set(unix_seconds);
}

}  // namespace starling::metrics
