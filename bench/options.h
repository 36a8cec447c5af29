#pragma once

// Command line of starling-bench and the named scenarios it knows.
//
//   starling-bench conn     [options]          connect N clients and hold them
//   starling-bench pub      [options]          N publishers
//   starling-bench sub      [options]          N subscribers
//   starling-bench scenario <name> [options]   publishers and subscribers together:
//                                              fan-out, fan-in, p2p, shared, connections,
//                                              retained, drain
//   starling-bench compare  <result.json>...   one side-by-side table of several runs
//
// parse_options() only reads the text; resolve_scenario() turns mode, scenario name and the
// overrides into the concrete plan (every count, pattern, QoS and rate decided). Both are pure:
// the tests call them without a broker.

#include "mqtt/protocol_version.h"
#include "mqtt/qos.h"

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace starling::bench {

enum class bench_mode : std::uint8_t { help, conn, pub, sub, scenario, compare };
enum class scenario_kind : std::uint8_t { throughput, connections, retained, drain };

struct bench_options {
    bench_mode mode = bench_mode::help;
    std::string scenario;            // scenario mode
    std::vector<std::string> files;  // compare mode

    // Where and how to connect.
    std::string host = "127.0.0.1";
    std::uint16_t port = 1883;
    mqtt::protocol_version version = mqtt::protocol_version::v3_1_1;
    std::optional<std::string> username;
    std::optional<std::string> password;
    std::uint16_t keep_alive = 300;
    std::vector<std::string> ifaddrs;  // source addresses, round-robin per client
    unsigned threads = 1;
    double connect_rate = 0;        // conn/s; 0 = as fast as max_pending allows
    std::size_t max_pending = 100;  // connects awaiting CONNACK, per thread
    double connect_timeout_s = 10;

    // Who (each unset value takes the mode's or scenario's default).
    std::optional<std::uint32_t> count;  // -c: the clients of conn/pub/sub mode
    std::optional<std::uint32_t> publishers;
    std::optional<std::uint32_t> subscribers;
    std::optional<std::string> topic;      // publishers' topic pattern
    std::optional<std::string> filter;     // subscribers' filter pattern
    std::optional<std::string> client_id;  // client id pattern of conn/pub/sub mode
    std::optional<int> qos;                // both sides
    std::optional<int> pub_qos;
    std::optional<int> sub_qos;
    std::optional<bool> persistent;       // subscribers keep their session
    std::uint32_t session_expiry = 3600;  // v5, for persistent sessions
    std::uint64_t group_size = 1;         // for %g and %m
    std::uint64_t start_index = 0;        // added to %i
    bool retain = false;
    std::optional<std::size_t> payload_size;
    std::uint16_t inflight = 100;

    // How much and how long.
    std::optional<double> rate;             // total messages/s published; 0 = flat out
    std::optional<double> rate_per_client;  // alternatively, per publisher
    double warmup_s = 1;
    std::optional<double> duration_s;
    double drain_s = 5;       // longest wait for stragglers after a step; in the drain
                              // scenario, the longest time without progress (a stall)
    double drain_idle_s = 1;  // stop waiting once nothing arrived for this long
    bool search = false;
    std::optional<double> rate_start;
    std::optional<double> rate_max;
    double rate_factor = 2;
    unsigned search_steps = 8;
    double search_precision = 0.15;  // stop when the bracket is narrower than this fraction
    double search_budget_s = 120;    // and never search for longer than this
    std::optional<double> moderate_rate;
    double max_p99_ms = 1000;  // a step whose e2e p99 exceeds this is not sustained
    std::optional<std::uint64_t> retained_count;
    std::optional<std::uint64_t> queued;  // drain: messages each publisher queues
    double settle_s = 1;
    std::optional<std::uint32_t> connections;

    // Output.
    std::string json_path;
    std::string label;     // the broker's name in results ("starling", "mosquitto")
    pid_t broker_pid = 0;  // read its CPU and memory from /proc
    bool quiet = false;
    bool per_client = false;  // per-subscriber results in the JSON
};

struct parse_outcome {
    bench_options options;
    std::string error;  // empty on success
    bool ok() const { return error.empty(); }
};

parse_outcome parse_options(int argc, const char* const* argv);
std::string usage_text();

// The concrete plan of a run.
struct scenario_spec {
    std::string name;  // "fan-out", ... or "pub", "sub", "conn"
    scenario_kind kind = scenario_kind::throughput;
    std::uint32_t publishers = 0;
    std::uint32_t subscribers = 0;
    std::uint32_t connections = 0;
    std::string pub_topic;
    std::string sub_filter;
    std::string pub_client_id;
    std::string sub_client_id;
    std::string conn_client_id;
    mqtt::qos pub_qos = mqtt::qos::at_most_once;
    mqtt::qos sub_qos = mqtt::qos::at_most_once;
    bool sub_persistent = false;
    bool retain = false;
    bool topic_per_message = false;
    std::size_t payload_size = 64;
    double rate = 0;        // total msg/s of a single step (0 = flat out)
    double rate_start = 0;  // search
    double rate_max = 0;
    double moderate_rate = 0;  // 0 = no fixed-rate step
    double duration_s = 5;
    bool strict = true;  // publishers and subscribers of this run only
    std::uint64_t retained_count = 0;
    // drain: messages each publisher sends while the subscribers are offline (with the default
    // one publisher per subscriber topic: the backlog of each subscriber).
    std::uint64_t queued = 0;
    std::string description;
};

// std::nullopt and `error` set for an unknown scenario or an invalid combination.
std::optional<scenario_spec> resolve_scenario(const bench_options& options, std::string& error);
std::vector<std::string> scenario_names();
// One line saying what the run does, with its actual sizes.
std::string describe(const scenario_spec& spec);

}  // namespace starling::bench
