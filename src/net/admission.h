#pragma once

// admission_control: whether the node takes one more connection. One object per node, shared
// by every MQTT listener, asked for each accepted socket before a byte is read (so before any
// TLS handshake, WebSocket upgrade or PROXY header):
//
//   1. the listener's own cap (`gate`, listener.<name>.max_connections; 0 = unlimited);
//   2. the descriptor reserve: an accept that would leave fewer than `descriptor_reserve` free
//      descriptors under RLIMIT_NOFILE is refused, so the message log, the device inbox and
//      the metadata store can always open their files (a log that cannot roll a segment
//      refuses every write until a restart);
//   3. per source address, across listeners: concurrent connections and a connect-rate token
//      bucket ("limit:seconds,..." windows, TBMQ's rate-limit format).
//
// Step 3 needs the client's address. On a listener with the PROXY protocol the socket's peer is
// the load balancer, so the listener admits the socket (steps 1-2) at accept and the address
// once the header named the client (ticket::admit_address, from the PROXY step).
//
// An admitted socket gets a `ticket`; its slots (listener, address, descriptor) are held until
// the ticket is destroyed: the handshake that failed drops it with the socket, a connection
// releases it when its socket closes.
//
// Addresses are keyed by host: an IPv4 address (IPv4-mapped IPv6 included) as itself, a native
// IPv6 address by its /64 prefix — one host can use any number of addresses in its /64
// (privacy extensions), so per-address limits on full IPv6 addresses would not hold it.
//
// Bounded memory: an address with live connections has an entry (bounded by the connections
// themselves); an address without any keeps only its rate bucket, in a least-recently-used list
// of at most `max_tracked_addresses` entries. Evicting one forgets its bucket, which then starts
// full again: lenient, and it takes that many distinct hosts (/64 for IPv6) to cause it.
//
// Lifecycle: created by the composition root before the listeners (shared_ptr; tickets keep it
// alive). Concurrency: every member is thread-safe (one mutex; each accept costs a few hash
// lookups under it). Time comes from the clock passed in (tests inject a manual one).

#include "starling/clock.h"
#include "starling/shared_counters.h"

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace starling::net {

// Why a connection was refused before MQTT started (the `reason` label of
// connectionsRefused_total).
enum class refusal : std::uint8_t {
    max_connections,      // the listener holds max_connections already
    descriptors,          // the descriptor reserve would be touched
    address_connections,  // the source address holds max_connections_per_address already
    address_rate,         // the source address's connect-rate bucket is empty
};

std::string_view to_string(refusal r);

struct admission_options {
    // Concurrent connections from one address (host, /64 for IPv6) over every listener; 0 =
    // unlimited.
    std::size_t max_connections_per_address = 0;
    // Connect-rate windows per address ({capacity, period_seconds}); empty = unlimited.
    std::vector<bandwidth> connect_rate_per_address;
    // Addresses without a live connection whose rate bucket is remembered (LRU beyond).
    std::size_t max_tracked_addresses = 65536;
    // Descriptors kept free under RLIMIT_NOFILE; 0 = no reserve.
    std::size_t descriptor_reserve = 0;
};

// How many descriptors the process has open, and may have open. The default reads
// /proc/self/fd and getrlimit(RLIMIT_NOFILE); tests inject their own numbers.
struct descriptor_source {
    std::function<std::size_t()> open_count;
    std::function<std::size_t()> limit;
    static descriptor_source system();
};

// Raises the soft RLIMIT_NOFILE to the hard limit (as Go's runtime and many servers do at
// start-up): the default soft limit (1024 on most distributions) is far below what a broker
// needs, and the hard limit is what the operator allowed. Returns the soft limit in effect.
std::size_t raise_descriptor_limit();

// The key per-address limits use for a peer address as transports report it ("ip:port",
// "[ipv6]:port") or a bare host: "a.b.c.d", or "xxxx:xxxx:xxxx:xxxx::/64"; the input itself
// when it does not parse (such peers share one key with their kind).
std::string address_key(std::string_view remote_address);

class admission_control : public std::enable_shared_from_this<admission_control> {
    struct private_tag {};

  public:
    // One listener's share: its cap and how many sockets it holds (accepted, handshaking or
    // connected). Thread-safe.
    class gate {
      public:
        explicit gate(std::size_t max_connections) : max_(max_connections) {}
        std::size_t current() const { return current_.load(std::memory_order_relaxed); }
        std::size_t max_connections() const { return max_; }

      private:
        friend class admission_control;
        const std::size_t max_;  // 0 = unlimited
        std::atomic<std::size_t> current_{0};
    };

    // The slots one socket holds; released by the destructor. Move-only; not thread-safe (one
    // owner at a time: the accept path, then the handshake, then the connection).
    class ticket {
      public:
        ticket(const ticket&) = delete;
        ticket& operator=(const ticket&) = delete;
        ~ticket();

        // Per-address limits for `remote_address` (listeners with the PROXY protocol call it
        // once the header named the client). Takes the address slot and a rate token, or
        // returns why not (the caller closes the socket; the ticket still holds the listener
        // slot until destroyed). Only the first call on a ticket checks anything.
        std::optional<refusal> admit_address(std::string_view remote_address);

      private:
        friend class admission_control;
        ticket(std::shared_ptr<admission_control> owner, std::shared_ptr<gate> gate)
            : owner_(std::move(owner)), gate_(std::move(gate)) {}

        std::shared_ptr<admission_control> owner_;
        std::shared_ptr<gate> gate_;
        std::string address_;  // key holding an address slot; empty = none
        bool address_checked_ = false;
    };

    struct admit_result {
        std::unique_ptr<ticket> admitted;  // null when refused
        std::optional<refusal> refused;
    };

    static std::shared_ptr<admission_control> create(
        admission_options options, const clock& clk = system_clock::instance(),
        descriptor_source descriptors = descriptor_source::system());

    admission_control(private_tag, admission_options options, const clock& clk,
                      descriptor_source descriptors);

    admission_control(const admission_control&) = delete;
    admission_control& operator=(const admission_control&) = delete;

    std::shared_ptr<gate> add_gate(std::size_t max_connections);

    // Steps 1 and 2, and step 3 when `remote_address` is given (empty: the caller will call
    // ticket::admit_address later).
    admit_result admit(const std::shared_ptr<gate>& g, std::string_view remote_address);

    const admission_options& options() const { return options_; }
    // Addresses with an entry (live connections or a remembered bucket). For tests and metrics.
    std::size_t tracked_addresses() const;
    // Sockets holding a ticket, over every gate.
    std::size_t admitted() const { return admitted_.load(std::memory_order_relaxed); }

  private:
    struct address_table;

    std::optional<refusal> take_address(const std::string& key);
    void release_address(const std::string& key);
    void release(gate& g);
    bool descriptors_left();

    const admission_options options_;
    const clock& clock_;
    const descriptor_source descriptors_;
    std::atomic<std::size_t> admitted_{0};

    mutable std::mutex mutex_;  // guards everything below
    std::unique_ptr<address_table> addresses_;
    // Descriptor estimate: `others_` = descriptors that are not tickets, sampled from
    // descriptors_.open_count() at most once per sample interval (tickets are counted exactly).
    std::size_t others_ = 0;
    std::size_t limit_ = 0;
    clock::steady_point next_sample_{};
};

// At most one log line per `interval` for a recurring event (connections refused, timed out):
// an attack must not flood the log. `should_log` returns true when a line may be written now and
// then reports in `suppressed` how many were swallowed since the last one. Thread-safe.
class log_throttle {
  public:
    explicit log_throttle(std::chrono::milliseconds interval = std::chrono::seconds(10))
        : interval_(interval) {}
    bool should_log(clock::steady_point now, std::uint64_t& suppressed);

  private:
    const std::chrono::milliseconds interval_;
    std::mutex mutex_;
    clock::steady_point next_{};
    std::uint64_t suppressed_ = 0;
};

}  // namespace starling::net
