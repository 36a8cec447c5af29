#pragma once

// node_drain: takes a node out of service without a stampede (POST /api/app/drain, the pod's
// preStop hook), before SIGTERM stops it.
//
//   1. stop_accepting(): the listeners close and readiness turns DOWN, so load balancers and
//      Services send new connections to the other nodes;
//   2. the node's connected clients are disconnected at `rate` per second (the k-th at
//      start + k / rate), each once — MQTT 5 clients with DISCONNECT 0x9C and a Server
//      Reference when one is configured (client_actor::drain_disconnect) — so that they
//      reconnect elsewhere in a stream the other nodes absorb;
//   3. a client that completes a CONNECT accepted just before step 1 is found by the next
//      check (every `recheck` while some stay connected) and disconnected too; the drain is
//      done when no client is connected.
//
// The node keeps running drained (persistent sessions stay, deliveries go to their inboxes)
// until it is stopped; there is no "undrain": restart the node to serve again.
//
// Lifecycle: start() once (a second call reports false and changes nothing); stop() — or the
// destructor — ends the pacing thread at once, whatever is left (SIGTERM's shutdown closes the
// rest), and refuses a later start(). Concurrency: start, stop and current are thread-safe.
// stop_accepting and disconnect run on the drain's own thread; connected there and in current(), so
// it must be thread-safe; `closed` runs wherever the disconnect completes, possibly after the drain
// was destroyed.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace starling::broker {

class node_drain {
  public:
    enum class state : std::uint8_t { serving, draining, drained };

    struct hooks {
        std::function<void()> stop_accepting;
        // Client ids of the connections that have their CONNACK now.
        std::function<std::vector<std::string>()> connected;
        // Disconnects the client, pointing it to `server_reference` (MQTT 5; "": none);
        // `closed(true)` once a connection was closed (false: it had none by then). May
        // complete on any thread, or never when the client's actor stopped.
        std::function<void(const std::string& client_id, const std::string& server_reference,
                           std::function<void(bool)> closed)>
            disconnect;
        std::function<std::int64_t()> now_ms;  // wall clock, for progress::started_at_ms
    };

    struct options {
        double rate = 500;  // connections per second, > 0
        std::string server_reference;
        std::chrono::milliseconds recheck{100};
    };

    struct progress {
        state current = state::serving;
        std::int64_t started_at_ms = 0;  // 0 while serving
        std::int64_t drained_at_ms = 0;  // 0 until drained
        std::uint64_t disconnected = 0;  // connections this drain closed
        std::uint64_t remaining = 0;     // connected now (0 while serving: not counted)
        double rate = 0;
        std::string server_reference;
    };

    explicit node_drain(hooks h);
    ~node_drain();
    node_drain(const node_drain&) = delete;
    node_drain& operator=(const node_drain&) = delete;

    // Starts draining; false when a drain already started (its options stay) or stop() ran.
    bool start(options opts);
    // Ends the pacing thread, and refuses any later start().
    void stop();
    [[nodiscard]] progress current() const;

  private:
    void run(const std::stop_token& stop, options opts);

    hooks hooks_;
    mutable std::mutex mutex_;
    std::condition_variable_any wake_;
    state state_ = state::serving;
    bool closed_ = false;  // stop() ran
    std::int64_t started_at_ms_ = 0;
    std::int64_t drained_at_ms_ = 0;
    double rate_ = 0;
    std::string server_reference_;
    std::shared_ptr<std::atomic<std::uint64_t>> disconnected_ =
        std::make_shared<std::atomic<std::uint64_t>>(0);
    std::jthread thread_;
};

std::string_view to_string(node_drain::state s);

}  // namespace starling::broker
