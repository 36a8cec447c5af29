#include "bench/runner.h"

#include "mqtt/topic.h"

#include "bench/drain.h"
#include "bench/payload.h"
#include "bench/topic_pattern.h"
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>
#include <unordered_map>
#include <utility>

namespace starling::bench {

namespace asio = boost::asio;
using nlohmann::json;

namespace {

constexpr std::uint64_t ns_per_s = 1'000'000'000ULL;
constexpr auto poll_interval = std::chrono::milliseconds(20);

std::uint64_t seconds_to_ns(double s) { return static_cast<std::uint64_t>(s * 1e9); }

double ns_to_s(std::uint64_t ns) { return static_cast<double>(ns) / 1e9; }

std::string seconds_text(double s) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", s);
    return text;
}

void sleep_until_ns(std::uint64_t deadline) {
    const std::uint64_t now = monotonic_ns();
    if (deadline > now) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(deadline - now));
    }
}

}  // namespace

runner::runner(bench_options options, scenario_spec spec)
    : o_(std::move(options)), s_(std::move(spec)) {}

runner::~runner() {
    for (auto& w : workers_) {
        w->stop();
    }
}

void runner::note(const char* format, ...) {
    if (o_.quiet) {
        return;
    }
    va_list args;
    va_start(args, format);
    std::vfprintf(stdout, format, args);
    va_end(args);
    std::fflush(stdout);
}

int runner::run() {
    if (!prepare()) {
        return exit_failure;
    }
    switch (s_.kind) {
        case scenario_kind::throughput:
            return run_throughput();
        case scenario_kind::connections:
            return run_connections();
        case scenario_kind::retained:
            return run_retained();
        case scenario_kind::drain:
            return run_drain();
    }
    return exit_failure;
}

bool runner::prepare() {
    boost::system::error_code ec;
    auto address = asio::ip::make_address(o_.host, ec);
    if (ec) {
        std::fprintf(stderr, "starling-bench: --host must be an IP address: %s\n", o_.host.c_str());
        return false;
    }
    server_ = asio::ip::tcp::endpoint(address, o_.port);
    for (const auto& a : o_.ifaddrs) {
        auto local = asio::ip::make_address(a, ec);
        if (ec) {
            std::fprintf(stderr, "starling-bench: --ifaddr: not an address: %s\n", a.c_str());
            return false;
        }
        ifaddrs_.push_back(local);
    }
    std::random_device rd;
    run_id_ = rd();
    char hex[16];
    std::snprintf(hex, sizeof(hex), "%08x", run_id_);
    run_id_text_ = hex;
    machine_ = read_machine_info();
    if (o_.broker_pid != 0 && !read_cpu_seconds(o_.broker_pid)) {
        std::fprintf(stderr,
                     "starling-bench: cannot read /proc/%d: broker CPU and memory will "
                     "not be reported\n",
                     static_cast<int>(o_.broker_pid));
        o_.broker_pid = 0;
    }
    for (unsigned i = 0; i < o_.threads; ++i) {
        workers_.push_back(std::make_unique<worker>(i));
        workers_.back()->start();
    }
    note("%s against %s:%u%s%s (run %s, %u thread%s): %s\n", s_.name.c_str(), o_.host.c_str(),
         o_.port, o_.label.empty() ? "" : " ", o_.label.c_str(), run_id_text_.c_str(), o_.threads,
         o_.threads == 1 ? "" : "s", s_.description.c_str());
    return true;
}

// --- clients ---

void runner::build_clients() {
    const std::uint32_t workers = static_cast<std::uint32_t>(workers_.size());
    auto base_settings = [&] {
        client_settings c;
        c.version = o_.version;
        c.keep_alive = o_.keep_alive;
        c.username = o_.username;
        c.password = o_.password;
        c.inflight = o_.inflight;
        return c;
    };
    auto pattern = [](const std::string& text) { return topic_pattern::parse(text).value(); };
    auto vars = [&](std::uint64_t index, std::string_view client_id) {
        return topic_vars{.index = o_.start_index + index,
                          .client_id = client_id,
                          .group_size = o_.group_size,
                          .run_id = run_id_text_};
    };

    if (s_.kind == scenario_kind::connections) {
        const auto id_pattern = pattern(s_.conn_client_id);
        std::vector<std::vector<client_settings>> per_worker(workers);
        for (std::uint32_t i = 0; i < s_.connections; ++i) {
            auto settings = base_settings();
            settings.client_id = id_pattern.expand(vars(i, ""));
            settings.low_memory = true;
            settings.read_size = 512;
            per_worker[i % workers].push_back(std::move(settings));
        }
        for (std::uint32_t w = 0; w < workers; ++w) {
            workers_[w]->call([&] {
                for (auto& settings : per_worker[w]) {
                    workers_[w]->add_plain(std::move(settings));
                }
            });
        }
        total_clients_ = s_.connections;
        return;
    }

    // Publishers' topics first: subscribers' expectations are computed against them.
    const auto pub_id_pattern = pattern(s_.pub_client_id);
    const auto topic_pattern_ = pattern(s_.pub_topic);
    std::vector<publisher_spec> publishers;
    std::vector<std::string> match_topics;  // what a filter is matched against
    for (std::uint32_t i = 0; i < s_.publishers; ++i) {
        publisher_spec p;
        p.id = i;
        p.settings = base_settings();
        p.settings.client_id = pub_id_pattern.expand(vars(i, ""));
        p.topic = topic_pattern_.expand(vars(i, p.settings.client_id));
        p.qos = s_.pub_qos;
        p.phase = static_cast<double>(i) / static_cast<double>(s_.publishers);
        match_topics.push_back(s_.topic_per_message ? p.topic + "/0" : p.topic);
        if (mqtt::validate_topic_name(match_topics.back()) != mqtt::reason_code::success) {
            errors_.push_back("invalid publish topic '" + p.topic + "'");
        }
        publishers.push_back(std::move(p));
    }
    fanout_.assign(s_.publishers, 0);

    // Subscribers, grouped into tracking domains: one per subscriber, or one per shared group.
    const auto sub_id_pattern = pattern(s_.sub_client_id);
    const auto filter_pattern = pattern(s_.sub_filter);
    std::unordered_map<std::string, std::shared_ptr<const std::vector<std::uint32_t>>> memo;
    struct domain_place {
        std::uint32_t worker;
        std::uint32_t local;
    };
    std::unordered_map<std::string, domain_place> domains;
    std::uint32_t next_worker = 0;
    std::vector<std::vector<subscriber_spec>> per_worker(workers);
    for (std::uint32_t j = 0; j < s_.subscribers; ++j) {
        subscriber_spec sub;
        sub.settings = base_settings();
        sub.settings.client_id = sub_id_pattern.expand(vars(j, ""));
        sub.settings.clean_start = !s_.sub_persistent;
        if (s_.sub_persistent) {
            sub.settings.session_expiry = o_.session_expiry;
        }
        const std::string filter = filter_pattern.expand(vars(j, sub.settings.client_id));
        if (mqtt::validate_topic_filter(filter) != mqtt::reason_code::success) {
            errors_.push_back("invalid subscription filter '" + filter + "'");
            continue;
        }
        mqtt::subscription subscription;
        subscription.filter = filter;
        subscription.options.qos = s_.sub_qos;
        sub.subscriptions.push_back(subscription);

        std::string domain_name = sub.settings.client_id;
        std::string match_filter = filter;
        if (auto shared = mqtt::parse_shared(filter)) {
            domain_name = filter;
            match_filter = std::string(shared->filter);
            shared_domains_ = true;
        }
        auto placed = domains.find(domain_name);
        if (placed == domains.end()) {
            domain_spec spec;
            spec.name = domain_name;
            if (s_.strict) {
                auto& expected = memo[match_filter];
                if (!expected) {
                    auto ids = std::make_shared<std::vector<std::uint32_t>>();
                    for (std::uint32_t p = 0; p < match_topics.size(); ++p) {
                        if (mqtt::topic_matches(match_filter, match_topics[p])) {
                            ids->push_back(p);
                        }
                    }
                    expected = std::move(ids);
                }
                spec.expected = expected;
                for (auto p : *expected) {
                    ++fanout_[p];
                }
            }
            const std::uint32_t w = next_worker++ % workers;
            std::uint32_t local = 0;
            workers_[w]->call([&] { local = workers_[w]->add_domain(std::move(spec)); });
            placed = domains.emplace(domain_name, domain_place{w, local}).first;
            ++domains_;
        }
        sub.domain = placed->second.local;
        per_worker[placed->second.worker].push_back(std::move(sub));
    }
    // Subscribers are added (and so connect) before publishers.
    for (std::uint32_t w = 0; w < workers; ++w) {
        workers_[w]->call([&] {
            for (auto& sub : per_worker[w]) {
                workers_[w]->add_subscriber(std::move(sub));
            }
        });
    }
    for (auto& p : publishers) {
        const std::uint32_t w = p.id % workers;
        workers_[w]->call([&] { workers_[w]->add_publisher(std::move(p)); });
    }
    total_clients_ = s_.publishers + s_.subscribers;
    if (s_.strict) {
        std::uint64_t silent = 0;
        for (auto f : fanout_) {
            silent += f == 0 ? 1 : 0;
        }
        if (silent != 0 && s_.subscribers != 0) {
            note("note: %llu publisher(s) match no subscription\n",
                 static_cast<unsigned long long>(silent));
        }
    }
}

bool runner::connect_all() {
    const double per_worker_rate =
        o_.connect_rate > 0 ? o_.connect_rate / static_cast<double>(workers_.size()) : 0;
    const std::uint64_t timeout_ns = seconds_to_ns(o_.connect_timeout_s);
    for (auto& w : workers_) {
        w->call([&] {
            w->start_connecting(server_, ifaddrs_, per_worker_rate, o_.max_pending, timeout_ns);
        });
    }
    const std::uint64_t start = monotonic_ns();
    std::uint64_t last_change = start;
    std::uint64_t last_done = 0;
    std::uint64_t last_print = start;
    for (;;) {
        const auto p = progress_all();
        const std::uint64_t done = p.connected + p.connect_failed;
        const std::uint64_t now = monotonic_ns();
        if (done >= total_clients_) {
            break;
        }
        if (done != last_done) {
            last_done = done;
            last_change = now;
        }
        if (now - last_change > timeout_ns + 2 * ns_per_s) {
            errors_.push_back("connecting stalled");
            break;
        }
        if (now - last_print >= ns_per_s) {
            last_print = now;
            note("  connecting: %llu/%u connected, %llu failed\n",
                 static_cast<unsigned long long>(p.connected), total_clients_,
                 static_cast<unsigned long long>(p.connect_failed));
        }
        std::this_thread::sleep_for(poll_interval);
    }
    const auto p = progress_all();
    if (p.connect_failed != 0 || p.connected < total_clients_) {
        std::vector<std::string> why;
        for (auto& w : workers_) {
            auto r = w->call([&] { return w->report({}); });
            why.insert(why.end(), r.errors.begin(), r.errors.end());
        }
        std::fprintf(stderr, "starling-bench: %llu of %u clients connected (%llu failed)%s%s\n",
                     static_cast<unsigned long long>(p.connected), total_clients_,
                     static_cast<unsigned long long>(p.connect_failed), why.empty() ? "" : ": ",
                     why.empty() ? "" : why.front().c_str());
        errors_.push_back("connect failures: " + std::to_string(p.connect_failed));
        return false;
    }
    return true;
}

bool runner::subscribe_all() {
    if (s_.subscribers == 0) {
        return true;
    }
    for (auto& w : workers_) {
        w->call([&] { w->start_subscribing(); });
    }
    const std::uint64_t start = monotonic_ns();
    for (;;) {
        const auto p = progress_all();
        if (p.subscribed + p.subscribe_failed >= s_.subscribers) {
            if (p.subscribe_failed != 0) {
                std::fprintf(stderr, "starling-bench: %llu subscriptions refused\n",
                             static_cast<unsigned long long>(p.subscribe_failed));
                errors_.push_back("subscriptions refused");
                return false;
            }
            return true;
        }
        if (p.closed_unexpectedly != 0 || monotonic_ns() - start > 30 * ns_per_s) {
            std::fprintf(stderr, "starling-bench: only %llu of %u subscriptions acknowledged\n",
                         static_cast<unsigned long long>(p.subscribed), s_.subscribers);
            errors_.push_back("subscribe incomplete");
            return false;
        }
        std::this_thread::sleep_for(poll_interval);
    }
}

void runner::disconnect_all() {
    for (auto& w : workers_) {
        w->call([&] { w->disconnect_all(); });
    }
    const std::uint64_t deadline = monotonic_ns() + 5 * ns_per_s;
    while (monotonic_ns() < deadline) {
        std::size_t open = 0;
        for (auto& w : workers_) {
            open += w->call([&] { return w->open_clients(); });
        }
        if (open == 0) {
            break;
        }
        std::this_thread::sleep_for(poll_interval);
    }
}

worker_counters runner::progress_all() {
    worker_counters total;
    for (auto& w : workers_) {
        total.add(w->call([&] { return w->progress(); }));
    }
    return total;
}

std::vector<std::uint64_t> runner::collect_sent() {
    std::vector<std::uint64_t> sent(s_.publishers, 0);
    for (auto& w : workers_) {
        for (auto [id, count] : w->call([&] { return w->sent_counts(); })) {
            if (id < sent.size()) {
                sent[id] = count;
            }
        }
    }
    return sent;
}

std::optional<double> runner::broker_cpu() {
    if (o_.broker_pid == 0) {
        return std::nullopt;
    }
    return read_cpu_seconds(o_.broker_pid);
}

std::optional<process_memory> runner::broker_memory() {
    if (o_.broker_pid == 0) {
        return std::nullopt;
    }
    return read_memory(o_.broker_pid);
}

bool runner::broker_alive() { return o_.broker_pid == 0 || read_cpu_seconds(o_.broker_pid); }

// --- steps ---

step_result runner::run_step(double total_rate, std::string purpose) {
    step_result r;
    r.step = ++step_;
    r.purpose = std::move(purpose);
    r.offered_rate = total_rate;
    r.duration_s = s_.duration_s;

    step_plan plan;
    plan.run_id = run_id_;
    plan.step = step_;
    plan.start_ns = monotonic_ns() + 50'000'000;
    plan.measure_ns = plan.start_ns + seconds_to_ns(o_.warmup_s);
    plan.end_ns = plan.measure_ns + seconds_to_ns(s_.duration_s);
    plan.rate_per_publisher =
        s_.publishers == 0 ? 0 : total_rate / static_cast<double>(s_.publishers);
    plan.payload_size = s_.payload_size;
    plan.retain = s_.retain;
    plan.topic_per_message = s_.topic_per_message;
    plan.strict = s_.strict;

    const auto cpu0 = broker_cpu();
    const double self0 = self_cpu_seconds();
    for (auto& w : workers_) {
        w->call([&] { w->begin_step(plan); });
    }
    // Run: report progress once a second.
    worker_counters last;
    std::uint64_t last_ns = monotonic_ns();
    while (monotonic_ns() < plan.end_ns) {
        sleep_until_ns(std::min(plan.end_ns, last_ns + ns_per_s));
        const auto p = progress_all();
        const std::uint64_t now = monotonic_ns();
        const double dt = ns_to_s(now - last_ns);
        if (!o_.quiet && dt > 0.5 && now < plan.end_ns) {
            note(
                "  step %u: %.0f s  sent %s/s  received %s/s  in flight %llu\n", r.step,
                ns_to_s(now - plan.start_ns),
                std::to_string(static_cast<long long>(static_cast<double>(p.sent - last.sent) / dt))
                    .c_str(),
                std::to_string(
                    static_cast<long long>(static_cast<double>(p.received - last.received) / dt))
                    .c_str(),
                static_cast<unsigned long long>(p.inflight));
        }
        last = p;
        last_ns = now;
    }
    // Drain: publishers stop at end; wait for every expected message and acknowledgement.
    const std::uint64_t drain_deadline = plan.end_ns + seconds_to_ns(o_.drain_s);
    const std::uint64_t idle_ns = seconds_to_ns(o_.drain_idle_s);
    std::uint64_t last_change = monotonic_ns();
    std::uint64_t last_unique = UINT64_MAX;
    std::uint64_t last_acked = UINT64_MAX;
    std::vector<std::uint64_t> sent;
    std::uint64_t expected_total = 0;
    for (;;) {
        const auto p = progress_all();
        const std::uint64_t now = monotonic_ns();
        if (p.publishers_active == 0 && sent.empty()) {
            sent = collect_sent();
            for (std::size_t i = 0; i < sent.size(); ++i) {
                expected_total += sent[i] * (i < fanout_.size() ? fanout_[i] : 0);
            }
        }
        if (!sent.empty() && p.unique >= expected_total && p.inflight == 0) {
            break;
        }
        if (p.unique != last_unique || p.acked != last_acked) {
            last_unique = p.unique;
            last_acked = p.acked;
            last_change = now;
        }
        if (now >= drain_deadline || now - last_change > idle_ns) {
            break;
        }
        std::this_thread::sleep_for(poll_interval);
    }
    if (sent.empty()) {
        sent = collect_sent();  // a publisher still blocked on its window: count what it sent
        for (std::size_t i = 0; i < sent.size(); ++i) {
            expected_total += sent[i] * (i < fanout_.size() ? fanout_[i] : 0);
        }
    }
    const auto cpu1 = broker_cpu();
    r.bench_cpu_s = self_cpu_seconds() - self0;
    r.wall_s = ns_to_s(monotonic_ns() - plan.start_ns);
    if (auto mem = broker_memory()) {
        r.broker_rss_kb = mem->rss_kb;
    }
    r.load_average = read_load_average();

    // Collect.
    worker_counters c;
    latency_histogram e2e;
    latency_histogram puback;
    for (auto& w : workers_) {
        auto report = w->call([&] { return w->report(sent); });
        c.add(report.counters);
        e2e.merge(report.e2e);
        puback.merge(report.puback);
        for (const auto& d : report.domains) {
            if (o_.per_client) {
                r.per_subscriber.push_back(json{{"name", d.name},
                                                {"expected", d.expected},
                                                {"received", d.received},
                                                {"lost", d.lost},
                                                {"duplicates", d.duplicates},
                                                {"out_of_order", d.out_of_order},
                                                {"unexpected", d.unexpected}});
            }
            r.lost += d.lost;
            r.duplicates += d.duplicates;
            r.out_of_order += d.out_of_order;
            r.unexpected += d.unexpected;
            if (d.lost != 0) {
                ++r.domains_with_loss;
                if (d.lost > r.worst_domain_lost) {
                    r.worst_domain_lost = d.lost;
                    r.worst_domain = d.name;
                }
            }
        }
        for (const auto& e : report.errors) {
            if (std::find(errors_.begin(), errors_.end(), e) == errors_.end() &&
                errors_.size() < 20) {
                errors_.push_back(e);
            }
        }
    }
    for (auto s : sent) {
        r.sent += s;
    }
    r.expected = expected_total;
    r.received = c.received;
    r.unique = c.unique;
    r.stale = c.stale;
    r.publish_failed = c.publish_failed;
    r.window_waits = c.window_waits;
    r.closed_unexpectedly = c.closed_unexpectedly;
    r.sent_rate = static_cast<double>(c.sent_in_window) / s_.duration_s;
    r.delivered_rate = static_cast<double>(c.received_in_window) / s_.duration_s;
    r.expected_fanout =
        r.sent == 0 ? 0 : static_cast<double>(expected_total) / static_cast<double>(r.sent);
    r.e2e = summarize(e2e);
    r.puback = summarize(puback);
    if (cpu0 && cpu1) {
        r.broker_cpu_s = *cpu1 - *cpu0;
        if (r.unique != 0) {
            r.cpu_s_per_million = *r.broker_cpu_s / static_cast<double>(r.unique) * 1e6;
        }
    }

    // Verdict: the first reason this step does not count as sustained.
    if (r.closed_unexpectedly != 0 || r.publish_failed != 0 || !broker_alive()) {
        r.verdict = "errors";
    } else if (r.lost != 0) {
        r.verdict = "loss";
    } else if (r.duplicates != 0) {
        r.verdict = "duplicates";
    } else if (r.out_of_order != 0 && !shared_domains_) {
        // Members of a shared group read on separate sockets, so their interleaving at this
        // process says nothing about the broker; only non-shared streams must stay in order.
        r.verdict = "out-of-order";
    } else if (total_rate > 0 && r.sent_rate < 0.95 * total_rate) {
        r.verdict = "publishers-limited";
    } else if (total_rate > 0 && s_.subscribers != 0 &&
               r.delivered_rate < 0.9 * total_rate * r.expected_fanout) {
        r.verdict = "lagging";
    } else if (r.e2e.count != 0 && r.e2e.p99_ms > o_.max_p99_ms) {
        r.verdict = "latency";
    } else {
        r.verdict = "ok";
    }
    return r;
}

int runner::run_throughput() {
    build_clients();
    if (!errors_.empty()) {
        for (const auto& e : errors_) {
            std::fprintf(stderr, "starling-bench: %s\n", e.c_str());
        }
        return exit_usage;
    }
    if (!connect_all() || !subscribe_all()) {
        finish({}, json{{"setup_failed", true}});
        return exit_failure;
    }
    std::vector<step_result> steps;
    if (!o_.quiet) {
        print_step_header(stdout);
    }
    auto record = [&](step_result r) {
        if (!o_.quiet) {
            print_step(stdout, r);
        }
        steps.push_back(std::move(r));
    };
    if (o_.search) {
        if (s_.moderate_rate > 0) {
            record(run_step(s_.moderate_rate, "moderate"));
        }
        const std::uint64_t budget_end = monotonic_ns() + seconds_to_ns(o_.search_budget_s);
        double rate = s_.rate_start;
        std::optional<double> lo;
        std::optional<double> hi;
        for (unsigned n = 0; n < o_.search_steps && monotonic_ns() < budget_end; ++n) {
            auto r = run_step(rate, "search");
            const bool ok = r.sustained();
            const bool broker_gone = !broker_alive();
            record(std::move(r));
            if (broker_gone) {
                errors_.push_back("the broker exited during the search");
                break;
            }
            if (ok) {
                lo = rate;
            } else {
                hi = rate;
                // Let a backlog clear before the next (lower) rate.
                std::this_thread::sleep_for(std::chrono::seconds(1));
            }
            double next = 0;
            if (!hi) {
                next = rate * o_.rate_factor;
                if (next > s_.rate_max) {
                    break;
                }
            } else if (!lo) {
                next = rate / o_.rate_factor;
                if (next < 1) {
                    break;
                }
            } else {
                if (*hi / *lo <= 1 + o_.search_precision) {
                    break;
                }
                next = std::sqrt(*lo * *hi);
            }
            rate = next;
        }
    } else {
        record(run_step(s_.rate, "fixed"));
    }
    const auto mem = broker_memory();
    auto summary = throughput_summary(steps, mem ? std::optional(mem->peak_kb) : std::nullopt);
    if (!o_.quiet && o_.mode == bench_mode::scenario) {
        print_throughput_summary(stdout, summary);
    } else if (!o_.quiet && !steps.empty()) {
        const auto& s = steps.back();
        if (o_.mode == bench_mode::pub) {
            note("published %.0f msg/s (offered %.0f)", s.sent_rate, s.offered_rate);
            if (s.puback.count != 0) {
                note("; PUBACK p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms", s.puback.p50_ms,
                     s.puback.p99_ms, s.puback.p999_ms, s.puback.max_ms);
            }
            note("\n");
        } else {
            note(
                "received %.0f msg/s; lost %llu (gaps only: the publishers' totals are unknown "
                "here), duplicates %llu, out of order %llu; latency p50 %.3f p99 %.3f p99.9 "
                "%.3f max %.3f ms\n",
                s.delivered_rate, static_cast<unsigned long long>(s.lost),
                static_cast<unsigned long long>(s.duplicates),
                static_cast<unsigned long long>(s.out_of_order), s.e2e.p50_ms, s.e2e.p99_ms,
                s.e2e.p999_ms, s.e2e.max_ms);
        }
    }
    disconnect_all();
    finish(steps, summary);

    bool errors = false;
    bool loss_at_qos1 = false;
    const bool reliable =
        s_.pub_qos != mqtt::qos::at_most_once && s_.sub_qos != mqtt::qos::at_most_once;
    for (const auto& s : steps) {
        errors = errors || s.verdict == "errors";
        loss_at_qos1 = loss_at_qos1 || (reliable && (s.lost != 0 || s.duplicates != 0));
    }
    if (o_.search) {
        return errors && steps.empty() ? exit_failure : exit_ok;  // full runs are never pass/fail
    }
    if (errors) {
        return exit_failure;
    }
    return loss_at_qos1 ? exit_loss : exit_ok;
}

int runner::run_connections() {
    build_clients();
    const auto mem0 = broker_memory();
    const auto cpu0 = broker_cpu();
    const std::uint64_t start = monotonic_ns();
    const bool all = connect_all();
    const auto p = progress_all();
    const std::uint64_t connected_at = std::max(p.last_connected_ns, start);
    const auto cpu1 = broker_cpu();
    note("  %llu connected in %.2f s; holding for %.1f s\n",
         static_cast<unsigned long long>(p.connected), ns_to_s(connected_at - start),
         s_.duration_s);
    std::this_thread::sleep_for(std::chrono::nanoseconds(seconds_to_ns(s_.duration_s)));
    const auto mem1 = broker_memory();
    const auto held = progress_all();
    latency_histogram connect;
    for (auto& w : workers_) {
        connect.merge(w->call([&] { return w->report({}); }).connect);
    }
    const auto self_mem = read_memory(::getpid());
    const std::uint64_t disconnect_start = monotonic_ns();
    disconnect_all();
    const double disconnect_s = ns_to_s(monotonic_ns() - disconnect_start);
    const auto mem2 = broker_memory();

    json summary;
    summary["connected"] = p.connected;
    summary["failed"] = p.connect_failed;
    summary["closed_while_idle"] = held.closed_unexpectedly;
    const double connect_s = ns_to_s(connected_at - start);
    summary["connect_time_s"] = connect_s;
    summary["connect_rate"] =
        connect_s > 0 ? json(static_cast<double>(p.connected) / connect_s) : json(nullptr);
    summary["connect_latency"] = to_json(summarize(connect));
    summary["disconnect_time_s"] = disconnect_s;
    if (mem0 && mem1) {
        summary["broker_rss_before_kb"] = mem0->rss_kb;
        summary["broker_rss_connected_kb"] = mem1->rss_kb;
        summary["bytes_per_connection"] =
            p.connected == 0
                ? json(nullptr)
                : json((static_cast<double>(mem1->rss_kb) - static_cast<double>(mem0->rss_kb)) *
                       1024.0 / static_cast<double>(p.connected));
        summary["broker_peak_rss_mb"] = static_cast<double>(mem1->peak_kb) / 1024.0;
    }
    if (mem2) {
        summary["broker_rss_after_disconnect_kb"] = mem2->rss_kb;
    }
    if (cpu0 && cpu1 && p.connected != 0) {
        summary["broker_cpu_s_connecting"] = *cpu1 - *cpu0;
        summary["cpu_s_per_thousand_connects"] =
            (*cpu1 - *cpu0) / static_cast<double>(p.connected) * 1000.0;
    }
    if (self_mem) {
        summary["bench_rss_kb"] = self_mem->rss_kb;
    }
    if (!o_.quiet) {
        const auto l = summarize(connect);
        note(
            "connections: %llu connected, %llu failed, %.0f conn/s, connect p50 %.2f ms p99 "
            "%.2f ms max %.2f ms\n",
            static_cast<unsigned long long>(p.connected),
            static_cast<unsigned long long>(p.connect_failed),
            connect_s > 0 ? static_cast<double>(p.connected) / connect_s : 0.0, l.p50_ms, l.p99_ms,
            l.max_ms);
        if (summary.contains("bytes_per_connection") &&
            !summary["bytes_per_connection"].is_null()) {
            note(
                "broker memory: %llu kB before, %llu kB with the connections: %.0f bytes per "
                "connection; peak RSS %.1f MB\n",
                static_cast<unsigned long long>(mem0->rss_kb),
                static_cast<unsigned long long>(mem1->rss_kb),
                summary["bytes_per_connection"].get<double>(),
                summary["broker_peak_rss_mb"].get<double>());
        }
    }
    finish({}, summary);
    return all && held.closed_unexpectedly == 0 ? exit_ok : exit_failure;
}

int runner::run_retained() {
    build_clients();
    if (!errors_.empty()) {
        for (const auto& e : errors_) {
            std::fprintf(stderr, "starling-bench: %s\n", e.c_str());
        }
        return exit_usage;
    }
    if (!connect_all()) {
        finish({}, json{{"setup_failed", true}});
        return exit_failure;
    }
    // 1. Store: every publisher sends its share of retained messages, each to its own topic,
    // as fast as its window allows.
    const std::uint64_t per_publisher = (s_.retained_count + s_.publishers - 1) / s_.publishers;
    step_plan plan;
    plan.run_id = run_id_;
    plan.step = ++step_;
    plan.start_ns = monotonic_ns() + 10'000'000;
    plan.measure_ns = plan.start_ns;
    plan.end_ns = plan.start_ns + 600 * ns_per_s;
    plan.rate_per_publisher = 0;
    plan.messages_per_publisher = per_publisher;
    plan.payload_size = s_.payload_size;
    plan.retain = true;
    plan.topic_per_message = true;
    plan.strict = true;
    const auto cpu0 = broker_cpu();
    for (auto& w : workers_) {
        w->call([&] { w->begin_step(plan); });
    }
    std::uint64_t last_change = monotonic_ns();
    std::uint64_t last_acked = 0;
    std::uint64_t last_print = last_change;
    for (;;) {
        const auto p = progress_all();
        const std::uint64_t now = monotonic_ns();
        if (p.publishers_active == 0 && p.inflight == 0) {
            break;
        }
        if (p.acked != last_acked) {
            last_acked = p.acked;
            last_change = now;
        }
        if (now - last_change > 10 * ns_per_s || p.closed_unexpectedly != 0) {
            errors_.push_back("storing retained messages stalled");
            break;
        }
        if (now - last_print >= ns_per_s) {
            last_print = now;
            note("  storing: %llu sent, %llu acknowledged\n",
                 static_cast<unsigned long long>(p.sent), static_cast<unsigned long long>(p.acked));
        }
        std::this_thread::sleep_for(poll_interval);
    }
    const std::uint64_t stored_at = monotonic_ns();
    const auto cpu1 = broker_cpu();
    const auto sent = collect_sent();
    std::uint64_t total_sent = 0;
    for (auto s : sent) {
        total_sent += s;
    }
    const double store_s = ns_to_s(stored_at - plan.start_ns);
    note("  stored %llu retained messages in %.2f s\n", static_cast<unsigned long long>(total_sent),
         store_s);

    // 2. Deliver: wildcard subscribers, timed from SUBSCRIBE to the last retained message.
    std::this_thread::sleep_for(std::chrono::nanoseconds(seconds_to_ns(o_.settle_s)));
    for (auto& w : workers_) {
        w->call([&] { w->set_expectations(sent); });
    }
    const auto cpu2 = broker_cpu();
    const std::uint64_t subscribe_at = monotonic_ns();
    for (auto& w : workers_) {
        w->call([&] { w->start_subscribing(); });
    }
    last_change = monotonic_ns();
    std::uint64_t last_unique = 0;
    last_print = last_change;
    for (;;) {
        const auto p = progress_all();
        const std::uint64_t now = monotonic_ns();
        if (p.domains_complete >= domains_) {
            break;
        }
        if (p.unique != last_unique) {
            last_unique = p.unique;
            last_change = now;
        }
        if (now - last_change > 5 * ns_per_s || now - subscribe_at > 600 * ns_per_s) {
            errors_.push_back("retained delivery incomplete");
            break;
        }
        if (now - last_print >= ns_per_s) {
            last_print = now;
            note("  delivering: %llu of %llu\n", static_cast<unsigned long long>(p.unique),
                 static_cast<unsigned long long>(total_sent * s_.subscribers));
        }
        std::this_thread::sleep_for(poll_interval);
    }
    const auto cpu3 = broker_cpu();
    std::vector<double> times;
    std::uint64_t lost = 0;
    std::uint64_t dups = 0;
    std::uint64_t delivered = 0;
    std::uint64_t last_complete = subscribe_at;
    latency_histogram suback;
    for (auto& w : workers_) {
        auto report = w->call([&] { return w->report(sent); });
        suback.merge(report.suback);
        for (const auto& d : report.domains) {
            lost += d.lost;
            dups += d.duplicates;
            delivered += d.unique;
            if (d.complete_ns != 0) {
                times.push_back(ns_to_s(d.complete_ns - d.subscribe_ns));
                last_complete = std::max(last_complete, d.complete_ns);
            }
        }
    }
    std::sort(times.begin(), times.end());
    const auto mem = broker_memory();
    json summary;
    summary["retained_count"] = total_sent;
    summary["store_time_s"] = store_s;
    summary["retained_store_rate"] = store_s > 0 ? static_cast<double>(total_sent) / store_s : 0.0;
    summary["subscribers_complete"] = times.size();
    if (times.size() == domains_ && !times.empty()) {
        summary["time_to_deliver_s"] = times.back();
        summary["time_to_deliver_p50_s"] = times[(times.size() - 1) / 2];
        const double span = ns_to_s(last_complete - subscribe_at);
        summary["retained_deliver_rate"] =
            span > 0 ? json(static_cast<double>(delivered) / span) : json(nullptr);
    }
    summary["delivered"] = delivered;
    summary["lost"] = lost;
    summary["duplicates"] = dups;
    summary["suback_latency"] = to_json(summarize(suback));
    if (cpu0 && cpu1) {
        summary["broker_cpu_s_storing"] = *cpu1 - *cpu0;
    }
    if (cpu2 && cpu3 && delivered != 0) {
        summary["broker_cpu_s_delivering"] = *cpu3 - *cpu2;
        summary["cpu_s_per_million"] = (*cpu3 - *cpu2) / static_cast<double>(delivered) * 1e6;
    }
    if (mem) {
        summary["broker_peak_rss_mb"] = static_cast<double>(mem->peak_kb) / 1024.0;
    }
    if (!o_.quiet) {
        note("retained: stored %llu at %.0f msg/s; %zu of %u subscribers got all",
             static_cast<unsigned long long>(total_sent),
             summary["retained_store_rate"].get<double>(), times.size(), domains_);
        if (!times.empty()) {
            note(" (median %.3f s, slowest %.3f s)", times[(times.size() - 1) / 2], times.back());
        }
        note("; lost %llu, duplicates %llu\n", static_cast<unsigned long long>(lost),
             static_cast<unsigned long long>(dups));
    }
    disconnect_all();
    finish({}, summary);
    if (!errors_.empty() && times.empty()) {
        return exit_failure;
    }
    return lost != 0 ? exit_loss : exit_ok;
}

// --- drain ---

bool runner::disconnect_subscribers() {
    for (auto& w : workers_) {
        w->call([&] { w->disconnect_subscribers(); });
    }
    const std::uint64_t deadline = monotonic_ns() + 5 * ns_per_s;
    for (;;) {
        std::size_t open = 0;
        for (auto& w : workers_) {
            open += w->call([&] { return w->open_subscribers(); });
        }
        if (open == 0) {
            return true;
        }
        if (monotonic_ns() >= deadline) {
            // The sessions stay on the broker either way; only the goodbye is missing.
            for (auto& w : workers_) {
                w->call([&] { w->abort_subscribers("DISCONNECT not written within 5 s"); });
            }
            return false;
        }
        std::this_thread::sleep_for(poll_interval);
    }
}

int runner::run_drain() {
    build_clients();
    if (!errors_.empty()) {
        for (const auto& e : errors_) {
            std::fprintf(stderr, "starling-bench: %s\n", e.c_str());
        }
        return exit_usage;
    }
    // 1. Persistent sessions: every subscriber subscribes, then disconnects cleanly. The
    // publishers connect with them and stay connected.
    if (!connect_all() || !subscribe_all()) {
        finish({}, json{{"setup_failed", true}});
        return exit_failure;
    }
    if (!disconnect_subscribers()) {
        note("  some subscribers did not close within 5 s: their sockets were closed instead\n");
    }
    // Let the broker process every DISCONNECT first: each copy is then queued for an offline
    // session, none is written to a closing socket.
    std::this_thread::sleep_for(std::chrono::nanoseconds(seconds_to_ns(o_.settle_s)));

    // 2. Queue: every publisher sends its messages (as fast as its window allows, or at --rate)
    // and the run waits for every acknowledgement.
    step_plan plan;
    plan.run_id = run_id_;
    plan.step = ++step_;
    plan.start_ns = monotonic_ns() + 10'000'000;
    plan.measure_ns = plan.start_ns;
    plan.end_ns = plan.start_ns + 86'400 * ns_per_s;  // the message count ends publishing
    plan.rate_per_publisher = s_.rate / static_cast<double>(s_.publishers);
    plan.messages_per_publisher = s_.queued;
    plan.payload_size = s_.payload_size;
    plan.retain = s_.retain;
    plan.strict = true;
    for (auto& w : workers_) {
        w->call([&] { w->begin_step(plan); });
    }
    drain_measurement m;
    m.publishers = s_.publishers;
    m.queued_per_publisher = s_.queued;
    m.stall_limit_s = o_.drain_s;
    const std::uint64_t stall_ns = seconds_to_ns(o_.drain_s);
    {
        stall_watch watch(stall_ns, plan.start_ns);
        std::uint64_t last_print = monotonic_ns();
        for (;;) {
            const auto p = progress_all();
            const std::uint64_t now = monotonic_ns();
            if (p.publishers_active == 0 && p.inflight == 0) {
                break;
            }
            if (p.closed_unexpectedly != 0) {
                errors_.push_back("a publisher's connection closed while queueing");
                m.publish_stalled = true;
                break;
            }
            if (watch.stalled(p.sent + p.acked, now)) {
                errors_.push_back("queueing stalled: no acknowledgement for " +
                                  seconds_text(o_.drain_s) + " s");
                m.publish_stalled = true;
                break;
            }
            if (now - last_print >= ns_per_s) {
                last_print = now;
                note("  queueing: %llu sent, %llu acknowledged\n",
                     static_cast<unsigned long long>(p.sent),
                     static_cast<unsigned long long>(p.acked));
            }
            std::this_thread::sleep_for(poll_interval);
        }
    }
    const std::uint64_t queued_at = monotonic_ns();
    const auto sent = collect_sent();
    {
        const auto p = progress_all();
        m.acked = p.acked;
        m.publish_failed = p.publish_failed;
    }
    for (auto n : sent) {
        m.published += n;
    }
    m.publish_s = ns_to_s(queued_at - plan.start_ns);
    m.memory_queued = broker_memory();
    note("  queued %llu messages in %.2f s (%llu acknowledged)\n",
         static_cast<unsigned long long>(m.published), m.publish_s,
         static_cast<unsigned long long>(m.acked));

    // 3. Drain: every subscriber reconnects at once (same client id, clean start 0) and
    // acknowledges what arrives; timed from the first reconnect to the last message.
    std::uint32_t expecting = 0;
    for (auto& w : workers_) {
        w->call([&] { w->set_expectations(sent); });
        for (const auto& d : w->call([&] { return w->report(sent); }).domains) {
            expecting += d.expected != 0 ? 1 : 0;
        }
    }
    for (auto& w : workers_) {
        w->call([&] { w->reset_connection_histograms(); });  // from here: reconnects only
    }
    const auto before = progress_all();
    const std::size_t all_at_once =
        std::max<std::size_t>(o_.max_pending, static_cast<std::size_t>(s_.subscribers));
    const std::uint64_t timeout_ns = seconds_to_ns(o_.connect_timeout_s);
    const double self0 = self_cpu_seconds();
    const auto cpu0 = broker_cpu();
    const std::uint64_t reconnect_ns = monotonic_ns();
    for (auto& w : workers_) {
        w->call([&] {
            w->renew_subscribers();
            w->start_connecting(server_, ifaddrs_, 0, all_at_once, timeout_ns);
        });
    }
    constexpr std::uint64_t max_drain_ns = 600 * ns_per_s;
    {
        stall_watch watch(stall_ns, reconnect_ns);
        std::uint64_t last_print = reconnect_ns;
        for (;;) {
            const auto p = progress_all();
            const std::uint64_t now = monotonic_ns();
            if (p.domains_complete >= expecting) {
                break;
            }
            // Reconnects count as progress too: a big reconnect storm is not a stall.
            if (watch.stalled(p.unique + p.connected + p.connect_failed, now)) {
                m.stalled = true;
                break;
            }
            if (now - reconnect_ns > max_drain_ns) {
                break;
            }
            if (now - last_print >= ns_per_s) {
                last_print = now;
                note("  draining: %llu of %llu delivered, %llu of %u reconnected\n",
                     static_cast<unsigned long long>(p.unique),
                     static_cast<unsigned long long>(m.published),
                     static_cast<unsigned long long>(p.connected - before.connected),
                     s_.subscribers);
            }
            std::this_thread::sleep_for(poll_interval);
        }
    }
    const auto cpu1 = broker_cpu();
    const std::uint64_t stop_ns = monotonic_ns();
    const double self1 = self_cpu_seconds();
    m.memory_end = broker_memory();
    m.waited_s = ns_to_s(stop_ns - reconnect_ns);
    if (cpu0 && cpu1) {
        m.broker_cpu_s = *cpu1 - *cpu0;
    }

    // Collect.
    std::vector<drain_subscriber> subscribers;
    worker_counters c;
    latency_histogram age;
    latency_histogram puback;
    latency_histogram reconnect;
    step_result r;
    for (auto& w : workers_) {
        auto report = w->call([&] { return w->report(sent); });
        c.add(report.counters);
        age.merge(report.e2e);
        puback.merge(report.puback);
        reconnect.merge(report.connect);
        for (const auto& d : report.domains) {
            subscribers.push_back(drain_subscriber{.name = d.name,
                                                   .expected = d.expected,
                                                   .received = d.received,
                                                   .unique = d.unique,
                                                   .lost = d.lost,
                                                   .duplicates = d.duplicates,
                                                   .out_of_order = d.out_of_order,
                                                   .unexpected = d.unexpected,
                                                   .first_ns = d.first_ns,
                                                   .last_ns = d.last_ns,
                                                   .complete_ns = d.complete_ns});
            if (o_.per_client) {
                r.per_subscriber.push_back(json{{"name", d.name},
                                                {"expected", d.expected},
                                                {"received", d.received},
                                                {"lost", d.lost},
                                                {"duplicates", d.duplicates},
                                                {"out_of_order", d.out_of_order},
                                                {"unexpected", d.unexpected}});
            }
        }
        for (const auto& e : report.errors) {
            if (std::find(errors_.begin(), errors_.end(), e) == errors_.end() &&
                errors_.size() < 20) {
                errors_.push_back(e);
            }
        }
    }
    m.reconnected = static_cast<std::uint32_t>(c.connected - before.connected);
    m.sessions_resumed = static_cast<std::uint32_t>(c.sessions_present - before.sessions_present);
    m.reconnect = summarize(reconnect);
    const std::uint64_t reconnect_failed = c.connect_failed - before.connect_failed;
    const auto tally = tally_drain(subscribers, reconnect_ns);
    if (m.stalled) {
        errors_.push_back("drain stalled: nothing new for " + seconds_text(o_.drain_s) +
                          " s with " + std::to_string(tally.lost) + " of " +
                          std::to_string(tally.expected) + " messages missing");
    } else if (!tally.complete) {
        errors_.push_back("drain incomplete after " + std::to_string(max_drain_ns / ns_per_s) +
                          " s: " + std::to_string(tally.lost) + " messages missing");
    }
    if (reconnect_failed != 0) {
        errors_.push_back(std::to_string(reconnect_failed) + " subscribers failed to reconnect");
    } else if (m.reconnected < s_.subscribers) {
        errors_.push_back("only " + std::to_string(m.reconnected) + " of " +
                          std::to_string(s_.subscribers) + " subscribers got a CONNACK");
    }
    if (m.sessions_resumed < m.reconnected) {
        errors_.push_back(std::to_string(m.reconnected - m.sessions_resumed) +
                          " reconnects found no session (session present 0)");
    }
    const bool broker_up = broker_alive();
    if (!broker_up) {
        errors_.push_back("the broker exited during the drain");
    }
    auto summary = drain_summary(subscribers, tally, m);

    // The drain as one step of the usual table: sent/s is the queueing rate, delivered/s the
    // drain rate, the latency columns how long a message waited (send to delivery).
    r.step = plan.step;
    r.purpose = "drain";
    r.offered_rate = s_.rate;
    r.duration_s = tally.drain_s.value_or(m.waited_s);
    r.sent = m.published;
    r.expected = tally.expected;
    r.expected_fanout =
        r.sent == 0 ? 0 : static_cast<double>(r.expected) / static_cast<double>(r.sent);
    r.sent_rate = m.publish_s > 0 ? static_cast<double>(m.published) / m.publish_s : 0;
    r.delivered_rate = tally.drain_rate.value_or(0);
    r.received = tally.received;
    r.unique = tally.delivered;
    r.lost = tally.lost;
    r.duplicates = tally.duplicates;
    r.out_of_order = tally.out_of_order;
    r.unexpected = tally.unexpected;
    r.stale = c.stale;
    r.domains_with_loss = tally.subscribers_with_loss;
    r.worst_domain = tally.worst_subscriber;
    r.worst_domain_lost = tally.worst_subscriber_lost;
    r.publish_failed = c.publish_failed;
    r.window_waits = c.window_waits;
    r.closed_unexpectedly = c.closed_unexpectedly;
    r.e2e = summarize(age);
    r.puback = summarize(puback);
    r.broker_cpu_s = m.broker_cpu_s;
    if (m.broker_cpu_s && tally.delivered != 0) {
        r.cpu_s_per_million = *m.broker_cpu_s / static_cast<double>(tally.delivered) * 1e6;
    }
    r.bench_cpu_s = self1 - self0;
    r.wall_s = m.waited_s;
    if (m.memory_end) {
        r.broker_rss_kb = m.memory_end->rss_kb;
    }
    r.load_average = read_load_average();
    const bool errors = r.closed_unexpectedly != 0 || r.publish_failed != 0 || m.publish_stalled ||
                        reconnect_failed != 0 || !broker_up;
    if (errors) {
        r.verdict = "errors";
    } else if (m.stalled) {
        r.verdict = "stalled";
    } else if (!tally.complete) {
        r.verdict = "incomplete";
    } else if (r.lost != 0) {
        r.verdict = "loss";
    } else if (r.duplicates != 0) {
        r.verdict = "duplicates";
    } else if (r.out_of_order != 0) {
        r.verdict = "out-of-order";
    } else {
        r.verdict = "ok";
    }
    if (!o_.quiet) {
        print_step_header(stdout);
        print_step(stdout, r);
        print_drain_summary(stdout, summary);
    }
    disconnect_all();
    finish({r}, summary);
    if (errors) {
        return exit_failure;
    }
    // QoS >= 1 on both sides (resolve_scenario checks it): anything missing or twice is a failure.
    return r.lost != 0 || r.duplicates != 0 ? exit_loss : exit_ok;
}

// --- output ---

json runner::config_json() const {
    json c;
    c["host"] = o_.host;
    c["port"] = o_.port;
    c["mqtt_version"] = std::string(mqtt::to_string(o_.version));
    c["threads"] = o_.threads;
    c["publishers"] = s_.publishers;
    c["subscribers"] = s_.subscribers;
    c["connections"] = s_.connections;
    c["pub_topic"] = s_.pub_topic;
    c["sub_filter"] = s_.sub_filter;
    c["pub_qos"] = static_cast<int>(s_.pub_qos);
    c["sub_qos"] = static_cast<int>(s_.sub_qos);
    c["persistent_subscribers"] = s_.sub_persistent;
    c["payload_size"] = s_.payload_size;
    c["inflight"] = o_.inflight;
    c["warmup_s"] = o_.warmup_s;
    c["duration_s"] = s_.duration_s;
    c["search"] = o_.search;
    c["rate"] = s_.rate;
    c["rate_start"] = s_.rate_start;
    c["moderate_rate"] = s_.moderate_rate;
    c["max_p99_ms"] = o_.max_p99_ms;
    c["connect_rate"] = o_.connect_rate;
    c["retained_count"] = s_.retained_count;
    c["queued"] = s_.queued;
    c["drain_s"] = o_.drain_s;
    c["settle_s"] = o_.settle_s;
    c["session_expiry"] = o_.session_expiry;
    c["run_id"] = run_id_text_;
    return c;
}

void runner::finish(const std::vector<step_result>& steps, const json& summary) {
    if (o_.json_path.empty()) {
        return;
    }
    run_header header;
    header.scenario = s_.name;
    header.kind = s_.kind == scenario_kind::throughput    ? "throughput"
                  : s_.kind == scenario_kind::connections ? "connections"
                  : s_.kind == scenario_kind::drain       ? "drain"
                                                          : "retained";
    header.description = s_.description;
    header.broker = o_.label.empty() ? "broker" : o_.label;
    header.machine = machine_;
    header.config = config_json();
    auto result = make_result(header, steps, summary, errors_);
    std::ofstream out(o_.json_path);
    if (!out) {
        std::fprintf(stderr, "starling-bench: cannot write %s\n", o_.json_path.c_str());
        return;
    }
    out << result.dump(2) << "\n";
}

}  // namespace starling::bench
