#pragma once

// worker: one load-generator thread with its own io_context and its share of the clients.
//
// Each worker owns its clients outright (no state is shared between workers), paces its
// publishers, tracks what its subscribers receive, and keeps counters and latency histograms.
// The runner (main thread) drives workers only through call(): it posts a function to the
// worker's io_context and waits for its result, so every member below runs on the worker's
// thread and needs no lock. Subscribers whose messages must be checked together (the members of
// one shared-subscription group: a "tracking domain") are placed on the same worker for that
// reason.
//
// Publishing: each publisher has its own timer. With a rate r it sends message k at
// start + phase + k / r (phases spread publishers evenly over one interval), catching up in a
// burst when it wakes late and never waking more often than every 200 us; with rate 0 it sends
// as fast as its window allows (QoS 1/2) or its write buffer drains (QoS 0). A publisher whose
// window is full waits for an acknowledgement; that shortfall shows as a sent rate below the
// offered one.
//
// Lifecycle: construct → start() (thread runs) → calls → stop() (closes every client, stops
// the io_context, joins). Clients are destroyed before the io_context, as Asio requires.

#include "bench/client.h"
#include "bench/histogram.h"
#include "bench/sequence_tracker.h"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace starling::bench {

// What one step (a period of publishing at one rate) tells the workers.
struct step_plan {
    std::uint32_t run_id = 0;
    std::uint32_t step = 0;
    std::uint64_t start_ns = 0;     // publishers begin (each after its phase offset)
    std::uint64_t measure_ns = 0;   // end of warm-up: rates and latencies count from here
    std::uint64_t end_ns = 0;       // publishers stop
    double rate_per_publisher = 0;  // msg/s; 0 = as fast as possible
    std::uint64_t messages_per_publisher = 0;  // 0 = until end_ns
    std::size_t payload_size = 64;             // at least header_size
    bool retain = false;
    bool topic_per_message = false;  // publish message k to "<topic>/<k>"
    // false for a standalone subscriber: accept any run and step, and start each stream at
    // the first sequence number seen.
    bool strict = true;
};

struct publisher_spec {
    std::uint32_t id = 0;  // global publisher index (in payloads)
    client_settings settings;
    std::string topic;
    mqtt::qos qos = mqtt::qos::at_most_once;
    double phase = 0;  // in [0, 1): fraction of one interval to wait before the first message
};

struct subscriber_spec {
    client_settings settings;
    std::vector<mqtt::subscription> subscriptions;
    std::uint32_t domain = 0;  // index into the worker's domains (add_domain's return value)
};

struct domain_spec {
    std::string name;  // client id, or the share group
    // Sorted global ids of the publishers whose messages this domain must receive; null for a
    // standalone subscriber that does not know its publishers.
    std::shared_ptr<const std::vector<std::uint32_t>> expected;
};

struct worker_counters {
    // Connections (cumulative).
    std::uint64_t launched = 0;
    std::uint64_t connected = 0;
    std::uint64_t connect_failed = 0;
    std::uint64_t connecting = 0;
    std::uint64_t subscribed = 0;
    std::uint64_t subscribe_failed = 0;
    std::uint64_t closed_unexpectedly = 0;
    std::uint64_t closed = 0;
    std::uint64_t last_connected_ns = 0;
    std::uint64_t sessions_present = 0;  // CONNACKs with "session present" set
    // The current step.
    std::uint64_t sent = 0;
    std::uint64_t sent_in_window = 0;
    std::uint64_t acked = 0;
    std::uint64_t publish_failed = 0;
    std::uint64_t inflight = 0;
    std::uint64_t window_waits = 0;
    std::uint64_t received = 0;  // every arrival of this step, duplicates included
    std::uint64_t unique = 0;
    std::uint64_t received_in_window = 0;
    std::uint64_t stale = 0;    // of another run or step
    std::uint64_t foreign = 0;  // not a benchmark payload
    std::uint64_t publishers_active = 0;
    std::uint64_t domains_complete = 0;

    void add(const worker_counters& other);
};

struct domain_summary {
    std::string name;
    std::uint64_t expected = 0;
    std::uint64_t received = 0;
    std::uint64_t unique = 0;
    std::uint64_t lost = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t out_of_order = 0;
    std::uint64_t unexpected = 0;  // from publishers it should not hear from
    std::uint64_t subscribe_ns = 0;
    std::uint64_t first_ns = 0;
    std::uint64_t last_ns = 0;      // the last new (non-duplicate) arrival
    std::uint64_t complete_ns = 0;  // when unique reached the expectation (0 = never)
};

struct worker_report {
    worker_counters counters;
    latency_histogram e2e;
    latency_histogram puback;
    latency_histogram connect;
    latency_histogram suback;
    std::vector<domain_summary> domains;
    std::vector<std::string> errors;  // the first few failure reasons
};

class worker final : public client_events {
  public:
    explicit worker(unsigned index);
    ~worker() override;
    worker(const worker&) = delete;
    worker& operator=(const worker&) = delete;

    void start();
    void stop();

    // Runs f on the worker thread and returns its result (blocking the caller).
    template <class F>
    auto call(F&& f) -> std::invoke_result_t<F> {
        using R = std::invoke_result_t<F>;
        std::promise<R> done;
        auto result = done.get_future();
        boost::asio::post(io_, [&] {
            if constexpr (std::is_void_v<R>) {
                f();
                done.set_value();
            } else {
                done.set_value(f());
            }
        });
        return result.get();
    }

    // --- everything below runs on the worker thread (through call) ---

    std::uint32_t add_domain(domain_spec spec);
    void add_publisher(publisher_spec spec);
    void add_subscriber(subscriber_spec spec);
    void add_plain(client_settings settings);  // connects and idles (conn mode)

    // Connects every client not yet launched, at `rate` per second (0 = unpaced) with at most
    // `max_pending` connections awaiting CONNACK.
    void start_connecting(boost::asio::ip::tcp::endpoint server,
                          std::vector<boost::asio::ip::address> local_addresses, double rate,
                          std::size_t max_pending, std::uint64_t timeout_ns);
    void start_subscribing();
    void begin_step(const step_plan& plan);
    // The per-domain number of unique messages that completes it, from messages sent per
    // publisher (global ids); used to time retained delivery.
    void set_expectations(const std::vector<std::uint64_t>& sent);
    // Messages sent per publisher this step: (global id, count).
    std::vector<std::pair<std::uint32_t, std::uint64_t>> sent_counts() const;
    worker_counters progress() const;
    // Counters, histograms and per-domain results of the step, judged against `sent` (messages
    // sent per global publisher id).
    worker_report report(const std::vector<std::uint64_t>& sent) const;
    void reset_connection_histograms();
    void disconnect_all();
    std::size_t open_clients() const;
    // Drain scenario: DISCONNECT every subscriber (its session stays on the broker), then, once
    // they are closed, give each a fresh client with the same settings (client id, clean start
    // 0) so that the next start_connecting() reconnects them; publishers stay connected.
    void disconnect_subscribers();
    std::size_t open_subscribers() const;
    void abort_subscribers(std::string_view why);
    void renew_subscribers();

    // client_events
    void on_connected(client& c, const mqtt::connack& ack) override;
    void on_subscribed(client& c, const mqtt::suback& ack) override;
    void on_message(client& c, const mqtt::publish& message) override;
    void on_publish_done(client& c, std::uint64_t send_ns, bool ok) override;
    void on_writable(client& c) override;
    void on_closed(client& c, std::error_code ec, std::string_view why) override;

  private:
    struct publisher_state {
        publisher_spec spec;
        client* conn = nullptr;
        std::unique_ptr<boost::asio::steady_timer> timer;
        std::uint64_t seq = 0;
        std::uint64_t first_ns = 0;  // this publisher's start (plan start + phase)
        bool active = false;
        bool timer_armed = false;
        bool blocked = false;  // window full or write buffer high: waits for an event
        bool pump_posted = false;
    };
    struct domain_state {
        domain_spec spec;
        std::unordered_map<std::uint64_t, sequence_tracker> streams;
        std::uint64_t received = 0;
        std::uint64_t unique = 0;
        std::uint64_t expect_total = 0;
        std::uint64_t subscribe_ns = 0;
        std::uint64_t first_ns = 0;
        std::uint64_t last_ns = 0;
        std::uint64_t complete_ns = 0;
    };
    enum class role : std::uint8_t { plain, publisher, subscriber };
    struct slot {
        std::unique_ptr<client> conn;
        role kind = role::plain;
        std::uint32_t ref = 0;  // index into publishers_ or subscribers_
        bool launched = false;
        bool got_connack = false;
        bool closing = false;  // we asked it to disconnect
    };

    void pump_connects();
    void launch(slot& s);
    void pump_publisher(publisher_state& p);
    void arm(publisher_state& p, std::uint64_t at_ns);
    bool send_one(publisher_state& p, std::uint64_t now);
    void tick();
    void note_error(std::string why);

    unsigned index_;
    boost::asio::io_context io_;
    std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
    std::thread thread_;

    std::vector<slot> slots_;
    // Subscribers' clients replaced by renew_subscribers(): closed, but kept until stop() since
    // handlers of theirs may still be queued on io_.
    std::vector<std::unique_ptr<client>> retired_;
    std::deque<publisher_state> publishers_;  // deque: timers hold references
    std::vector<subscriber_spec> subscribers_;
    std::vector<domain_state> domains_;

    // Connecting.
    boost::asio::ip::tcp::endpoint server_;
    std::vector<boost::asio::ip::address> local_addresses_;
    double connect_rate_ = 0;
    std::size_t max_pending_ = 100;
    std::uint64_t connect_timeout_ns_ = 10'000'000'000ULL;
    std::uint64_t connect_start_ns_ = 0;
    std::uint64_t launched_since_start_ = 0;
    std::size_t next_launch_ = 0;
    boost::asio::steady_timer connect_timer_;
    bool connect_timer_armed_ = false;

    boost::asio::steady_timer tick_timer_;

    step_plan plan_;
    std::string payload_;
    std::string topic_scratch_;
    worker_counters counters_;
    latency_histogram e2e_;
    latency_histogram puback_;
    latency_histogram connect_;
    latency_histogram suback_;
    std::vector<std::string> errors_;
};

}  // namespace starling::bench
