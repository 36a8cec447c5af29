#include "metrics/listener_probe.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/registry.h>

namespace starling::metrics {

listener_probe::listener_probe(prometheus::Registry& registry)
    : failures_(prometheus::BuildCounter()
                    .Name("handshakeFailures_total")
                    .Help("PROXY header, TLS or WebSocket handshakes that failed or timed out")
                    .Register(registry)),
      reloads_(prometheus::BuildCounter()
                   .Name("tlsCredentialReloads_total")
                   .Help("TLS credential reloads after the files changed, by listener and outcome")
                   .Register(registry)) {}

// Family::Add is thread-safe and returns the existing child for known labels.
void listener_probe::handshake_failed(std::string_view listener, std::string_view reason) {
    failures_.Add({{"listener", std::string(listener)}, {"reason", std::string(reason)}})
        .Increment();
}

void listener_probe::credentials_reloaded(std::string_view listener, bool ok) {
    reloads_.Add({{"listener", std::string(listener)}, {"result", ok ? "ok" : "failed"}})
        .Increment();
}

}  // namespace starling::metrics
