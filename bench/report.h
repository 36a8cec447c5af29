#pragma once

// Results of a run, as a human table on stdout and as JSON, and the side-by-side comparison
// of several JSON results (`starling-bench compare`).
//
// JSON layout (one file per scenario and broker):
//   { "tool", "scenario", "kind", "broker", "machine": {cores, cpu_model, kernel},
//     "config": {...}, "steps": [step...], "summary": {...}, "errors": [...] }
// A step: offered/sent/delivered rates, counts (sent, expected, unique, lost, duplicates,
// out_of_order, stale), "latency_ms" and "puback_ms" ({p50, p99, p999, max, mean, count}),
// broker/bench CPU seconds, "cpu_s_per_million", "verdict". The summary holds the numbers the
// comparison table reads: max_delivered_rate, latency_at_max, latency_at_moderate,
// cpu_s_per_million, broker_peak_rss_mb, and per kind connect_rate / bytes_per_connection,
// retained_store_rate / time_to_deliver_s, or drain_time_s / drain_rate.
//
// Concurrency: free functions, called from the main thread.

#include "bench/drain.h"
#include "bench/histogram.h"
#include "bench/proc_stats.h"
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace starling::bench {

struct latency_summary {
    std::uint64_t count = 0;
    double p50_ms = 0;
    double p99_ms = 0;
    double p999_ms = 0;
    double max_ms = 0;
    double mean_ms = 0;
};

latency_summary summarize(const latency_histogram& h);
nlohmann::json to_json(const latency_summary& l);

struct step_result {
    std::uint32_t step = 0;
    std::string purpose;      // "search", "moderate", "fixed"
    double offered_rate = 0;  // msg/s published, total (0 = flat out)
    double expected_fanout = 0;
    double duration_s = 0;
    double sent_rate = 0;
    double delivered_rate = 0;
    std::uint64_t sent = 0;
    std::uint64_t expected = 0;
    std::uint64_t received = 0;
    std::uint64_t unique = 0;
    std::uint64_t lost = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t out_of_order = 0;
    std::uint64_t unexpected = 0;
    std::uint64_t stale = 0;
    std::uint64_t domains_with_loss = 0;
    std::string worst_domain;
    std::uint64_t worst_domain_lost = 0;
    std::uint64_t publish_failed = 0;
    std::uint64_t window_waits = 0;
    std::uint64_t closed_unexpectedly = 0;
    latency_summary e2e;
    latency_summary puback;
    std::optional<double> broker_cpu_s;
    double bench_cpu_s = 0;
    double wall_s = 0;  // start to end of drain
    std::optional<double> cpu_s_per_million;
    std::optional<std::uint64_t> broker_rss_kb;
    std::optional<double> load_average;                       // 1-minute, at the end of the step
    nlohmann::json per_subscriber = nlohmann::json::array();  // with --per-client
    std::string verdict;  // ok, loss, duplicates, errors, publishers-limited, lagging, latency
    bool sustained() const { return verdict == "ok"; }
};

nlohmann::json to_json(const step_result& s);

void print_step_header(std::FILE* out);
void print_step(std::FILE* out, const step_result& s);

struct run_header {
    std::string scenario;
    std::string kind;
    std::string description;
    std::string broker;
    machine_info machine;
    nlohmann::json config;
};

nlohmann::json make_result(const run_header& header, const std::vector<step_result>& steps,
                           const nlohmann::json& summary, const std::vector<std::string>& errors);

// Summary of a throughput run: the best sustained step, the moderate step.
nlohmann::json throughput_summary(const std::vector<step_result>& steps,
                                  std::optional<std::uint64_t> broker_peak_kb);
void print_throughput_summary(std::FILE* out, const nlohmann::json& summary);

// What the drain scenario measured besides the subscribers' counts (drain.h).
struct drain_measurement {
    std::uint32_t publishers = 0;
    std::uint64_t queued_per_publisher = 0;
    std::uint64_t published = 0;  // messages sent while the subscribers were offline
    std::uint64_t acked = 0;      // of those, acknowledged (PUBACK/PUBCOMP) by the broker
    std::uint64_t publish_failed = 0;
    double publish_s = 0;  // first publish to the last acknowledgement
    bool publish_stalled = false;
    std::uint32_t reconnected = 0;                // subscribers whose reconnect got a CONNACK
    std::uint32_t sessions_resumed = 0;           // of those, with "session present"
    latency_summary reconnect;                    // reconnect to CONNACK, per subscriber
    bool stalled = false;                         // the drain ended for lack of progress
    double stall_limit_s = 0;                     // --drain
    double waited_s = 0;                          // first reconnect to the end of waiting
    std::optional<double> broker_cpu_s;           // first reconnect to the end of waiting
    std::optional<process_memory> memory_queued;  // broker memory holding the backlog
    std::optional<process_memory> memory_end;
};

// The summary of a drain run (the numbers `compare` reads) and its human form. The subscribers
// missing messages are listed (the 20 missing most) with their counts.
nlohmann::json drain_summary(const std::vector<drain_subscriber>& subscribers,
                             const drain_tally& tally, const drain_measurement& m);
void print_drain_summary(std::FILE* out, const nlohmann::json& summary);

// `starling-bench compare`: reads result files, prints one markdown table per scenario with a
// column per broker and the ratio of the first two brokers named (starling / mosquitto when
// present). Returns the exit status.
int compare_results(const std::vector<std::string>& files, std::FILE* out);

}  // namespace starling::bench
