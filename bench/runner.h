#pragma once

// runner: the main thread of a benchmark run. It builds the clients of a scenario (expanding
// topic and client-id patterns, working out which publishers each subscriber must hear from),
// spreads them over the worker threads, connects and subscribes them, then runs steps — one
// fixed rate, or the search for the highest rate delivered without loss — and reports.
//
// A step: every worker gets the same plan (start, end of warm-up, end, rate per publisher);
// publishers send with a payload header (run, step, publisher, sequence, send time); after the
// end the runner waits for stragglers (until every expected message arrived and every
// acknowledgement came back, or nothing moved for --drain-idle, or --drain passed), then
// collects counters, histograms and per-subscriber sequence results, and reads the broker's
// CPU and memory from /proc.
//
// The search: start at --rate-start, multiply by --rate-factor while steps are sustained
// (no loss, no duplicates, no errors, publishers kept the offered rate, delivery kept up within
// 10 %, p99 under --max-p99-ms); after the first failure, bisect (geometrically) between the
// best sustained rate and the failed one until the bracket is narrower than
// --search-precision, at most --search-steps steps and --search-budget seconds in all.
//
// The drain scenario (run_drain): subscribers subscribe and disconnect (their persistent
// sessions stay), publishers queue their messages and wait for every acknowledgement, then the
// subscribers reconnect at once with the same client ids; timed from the first reconnect to
// the last message, with the broker's CPU over that interval only. No progress for --drain
// seconds ends it as a stall (drain.h).
//
// Lifecycle: construct, run() once. Owns its workers; everything here runs on the thread that
// called run().

#include "bench/options.h"
#include "bench/proc_stats.h"
#include "bench/report.h"
#include "bench/worker.h"
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace starling::bench {

// Exit statuses of starling-bench.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // could not connect, errors, broker gone
inline constexpr int exit_usage = 2;
inline constexpr int exit_loss = 3;  // a fixed-rate run lost messages at QoS >= 1

class runner {
  public:
    runner(bench_options options, scenario_spec spec);
    ~runner();
    runner(const runner&) = delete;
    runner& operator=(const runner&) = delete;

    int run();

  private:
    bool prepare();
    void build_clients();
    bool connect_all();
    bool subscribe_all();
    void disconnect_all();

    step_result run_step(double total_rate, std::string purpose);
    int run_throughput();
    int run_connections();
    int run_retained();
    int run_drain();
    bool disconnect_subscribers();

    worker_counters progress_all();
    std::vector<std::uint64_t> collect_sent();
    std::optional<double> broker_cpu();
    std::optional<process_memory> broker_memory();
    bool broker_alive();
    nlohmann::json config_json() const;
    void finish(const std::vector<step_result>& steps, const nlohmann::json& summary);
    void note(const char* format, ...) __attribute__((format(printf, 2, 3)));

    bench_options o_;
    scenario_spec s_;
    std::vector<std::unique_ptr<worker>> workers_;
    std::uint32_t run_id_ = 0;
    std::string run_id_text_;
    std::uint32_t step_ = 0;
    boost::asio::ip::tcp::endpoint server_;
    std::vector<boost::asio::ip::address> ifaddrs_;
    machine_info machine_;
    std::uint32_t total_clients_ = 0;
    std::vector<std::uint32_t> fanout_;  // per publisher: domains expecting its messages
    std::uint32_t domains_ = 0;
    bool shared_domains_ = false;
    std::vector<std::string> errors_;
};

}  // namespace starling::bench
