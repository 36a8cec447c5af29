#include "bench/report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

namespace starling::bench {

using nlohmann::json;

namespace {

double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

// 1234567.8 -> "1,234,568"
std::string grouped(double value) {
    if (!std::isfinite(value)) {
        return "-";
    }
    auto v = static_cast<long long>(std::llround(value));
    const bool negative = v < 0;
    std::string digits = std::to_string(negative ? -v : v);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) {
            out.push_back(',');
        }
        out.push_back(digits[i]);
    }
    return negative ? "-" + out : out;
}

// Three significant digits, without exponent for the usual range.
std::string short_number(double value) {
    if (!std::isfinite(value)) {
        return "-";
    }
    char buf[32];
    const double a = std::fabs(value);
    if (a >= 1000) {
        return grouped(value);
    }
    if (a >= 100) {
        std::snprintf(buf, sizeof(buf), "%.0f", value);
    } else if (a >= 10) {
        std::snprintf(buf, sizeof(buf), "%.1f", value);
    } else if (a >= 1) {
        std::snprintf(buf, sizeof(buf), "%.2f", value);
    } else {
        std::snprintf(buf, sizeof(buf), "%.3f", value);
    }
    return buf;
}

}  // namespace

latency_summary summarize(const latency_histogram& h) {
    latency_summary l;
    l.count = h.count();
    l.p50_ms = ms(h.percentile(0.5));
    l.p99_ms = ms(h.percentile(0.99));
    l.p999_ms = ms(h.percentile(0.999));
    l.max_ms = ms(h.max());
    l.mean_ms = h.mean() / 1e6;
    return l;
}

json to_json(const latency_summary& l) {
    return json{{"count", l.count},  {"p50", l.p50_ms}, {"p99", l.p99_ms},
                {"p999", l.p999_ms}, {"max", l.max_ms}, {"mean", l.mean_ms}};
}

json to_json(const step_result& s) {
    json j{{"step", s.step},
           {"purpose", s.purpose},
           {"offered_rate", s.offered_rate},
           {"expected_fanout", s.expected_fanout},
           {"duration_s", s.duration_s},
           {"sent_rate", s.sent_rate},
           {"delivered_rate", s.delivered_rate},
           {"sent", s.sent},
           {"expected", s.expected},
           {"received", s.received},
           {"unique", s.unique},
           {"lost", s.lost},
           {"duplicates", s.duplicates},
           {"out_of_order", s.out_of_order},
           {"unexpected", s.unexpected},
           {"stale", s.stale},
           {"subscribers_with_loss", s.domains_with_loss},
           {"worst_subscriber", s.worst_domain},
           {"worst_subscriber_lost", s.worst_domain_lost},
           {"publish_failed", s.publish_failed},
           {"window_waits", s.window_waits},
           {"closed_unexpectedly", s.closed_unexpectedly},
           {"latency_ms", to_json(s.e2e)},
           {"puback_ms", to_json(s.puback)},
           {"bench_cpu_s", s.bench_cpu_s},
           {"wall_s", s.wall_s},
           {"verdict", s.verdict}};
    j["broker_cpu_s"] = s.broker_cpu_s ? json(*s.broker_cpu_s) : json(nullptr);
    j["cpu_s_per_million"] = s.cpu_s_per_million ? json(*s.cpu_s_per_million) : json(nullptr);
    j["broker_rss_kb"] = s.broker_rss_kb ? json(*s.broker_rss_kb) : json(nullptr);
    j["load_average"] = s.load_average ? json(*s.load_average) : json(nullptr);
    if (!s.per_subscriber.empty()) {
        j["per_subscriber"] = s.per_subscriber;
    }
    return j;
}

void print_step_header(std::FILE* out) {
    std::fprintf(out, "%4s %-8s %11s %11s %12s %8s %6s %6s %8s %8s %8s %8s %9s %8s  %s\n", "step",
                 "purpose", "offered/s", "sent/s", "delivered/s", "lost", "dup", "ooo", "p50 ms",
                 "p99 ms", "p99.9 ms", "max ms", "ack p99", "cpu s/M", "verdict");
}

void print_step(std::FILE* out, const step_result& s) {
    const std::string offered = s.offered_rate > 0 ? grouped(s.offered_rate) : "max";
    const std::string cpu = s.cpu_s_per_million ? short_number(*s.cpu_s_per_million) : "-";
    const std::string ack = s.puback.count > 0 ? short_number(s.puback.p99_ms) : "-";
    std::fprintf(out, "%4u %-8s %11s %11s %12s %8s %6s %6s %8s %8s %8s %8s %9s %8s  %s\n", s.step,
                 s.purpose.c_str(), offered.c_str(), grouped(s.sent_rate).c_str(),
                 grouped(s.delivered_rate).c_str(), grouped(static_cast<double>(s.lost)).c_str(),
                 grouped(static_cast<double>(s.duplicates)).c_str(),
                 grouped(static_cast<double>(s.out_of_order)).c_str(),
                 short_number(s.e2e.p50_ms).c_str(), short_number(s.e2e.p99_ms).c_str(),
                 short_number(s.e2e.p999_ms).c_str(), short_number(s.e2e.max_ms).c_str(),
                 ack.c_str(), cpu.c_str(), s.verdict.c_str());
    std::fflush(out);
}

json make_result(const run_header& header, const std::vector<step_result>& steps,
                 const json& summary, const std::vector<std::string>& errors) {
    json j;
    j["tool"] = "starling-bench";
    j["scenario"] = header.scenario;
    j["kind"] = header.kind;
    j["description"] = header.description;
    j["broker"] = header.broker;
    j["machine"] = json{{"cores", header.machine.cores},
                        {"cpu_model", header.machine.cpu_model},
                        {"kernel", header.machine.kernel}};
    j["config"] = header.config;
    j["steps"] = json::array();
    for (const auto& s : steps) {
        j["steps"].push_back(to_json(s));
    }
    j["summary"] = summary;
    j["errors"] = errors;
    return j;
}

json throughput_summary(const std::vector<step_result>& steps,
                        std::optional<std::uint64_t> broker_peak_kb) {
    json sum;
    const step_result* best = nullptr;
    const step_result* moderate = nullptr;
    const step_result* first_failure = nullptr;
    for (const auto& s : steps) {
        if (s.purpose == "moderate") {
            moderate = &s;
            continue;
        }
        if (s.sustained()) {
            if (best == nullptr || s.delivered_rate > best->delivered_rate) {
                best = &s;
            }
        } else if (first_failure == nullptr) {
            first_failure = &s;
        }
    }
    sum["sustained_found"] = best != nullptr;
    if (best != nullptr) {
        sum["max_delivered_rate"] = best->delivered_rate;
        sum["max_offered_rate"] = best->offered_rate;
        sum["max_sent_rate"] = best->sent_rate;
        sum["latency_at_max"] = to_json(best->e2e);
        if (best->puback.count != 0) {
            sum["puback_at_max"] = to_json(best->puback);
        }
        sum["cpu_s_per_million"] =
            best->cpu_s_per_million ? json(*best->cpu_s_per_million) : json(nullptr);
    }
    if (first_failure != nullptr) {
        sum["first_failure"] = json{{"offered_rate", first_failure->offered_rate},
                                    {"verdict", first_failure->verdict}};
    }
    if (moderate != nullptr) {
        sum["moderate_rate"] = moderate->offered_rate;
        sum["moderate_delivered_rate"] = moderate->delivered_rate;
        sum["latency_at_moderate"] = to_json(moderate->e2e);
        if (moderate->puback.count != 0) {
            sum["puback_at_moderate"] = to_json(moderate->puback);
        }
        sum["moderate_verdict"] = moderate->verdict;
        sum["cpu_s_per_million_at_moderate"] =
            moderate->cpu_s_per_million ? json(*moderate->cpu_s_per_million) : json(nullptr);
    }
    std::uint64_t lost = 0;
    std::uint64_t dups = 0;
    std::uint64_t ooo = 0;
    for (const auto& s : steps) {
        lost += s.lost;
        dups += s.duplicates;
        ooo += s.out_of_order;
    }
    sum["lost_all_steps"] = lost;
    sum["duplicates_all_steps"] = dups;
    sum["out_of_order_all_steps"] = ooo;
    sum["broker_peak_rss_mb"] =
        broker_peak_kb ? json(static_cast<double>(*broker_peak_kb) / 1024.0) : json(nullptr);
    return sum;
}

void print_throughput_summary(std::FILE* out, const json& sum) {
    if (sum.value("sustained_found", false)) {
        const auto& l = sum["latency_at_max"];
        std::fprintf(out,
                     "highest sustained: %s msg/s delivered (offered %s msg/s in), latency p50 %s "
                     "p99 %s p99.9 %s max %s ms\n",
                     grouped(sum["max_delivered_rate"].get<double>()).c_str(),
                     grouped(sum["max_offered_rate"].get<double>()).c_str(),
                     short_number(l["p50"].get<double>()).c_str(),
                     short_number(l["p99"].get<double>()).c_str(),
                     short_number(l["p999"].get<double>()).c_str(),
                     short_number(l["max"].get<double>()).c_str());
    } else {
        std::fprintf(out,
                     "highest sustained: none of the rates tried was delivered without loss\n");
    }
    if (sum.contains("moderate_rate")) {
        const auto& l = sum["latency_at_moderate"];
        std::fprintf(out,
                     "at the moderate rate %s msg/s in: p50 %s p99 %s p99.9 %s max %s ms (%s)\n",
                     grouped(sum["moderate_rate"].get<double>()).c_str(),
                     short_number(l["p50"].get<double>()).c_str(),
                     short_number(l["p99"].get<double>()).c_str(),
                     short_number(l["p999"].get<double>()).c_str(),
                     short_number(l["max"].get<double>()).c_str(),
                     sum["moderate_verdict"].get<std::string>().c_str());
    }
    if (!sum["broker_peak_rss_mb"].is_null()) {
        std::fprintf(out, "broker peak RSS: %s MB\n",
                     short_number(sum["broker_peak_rss_mb"].get<double>()).c_str());
    }
    std::fflush(out);
}

// --- drain ---

namespace {

constexpr std::size_t max_missing_listed = 20;

json optional_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json megabytes(const std::optional<process_memory>& m, bool peak) {
    if (!m) {
        return nullptr;
    }
    return static_cast<double>(peak ? m->peak_kb : m->rss_kb) / 1024.0;
}

}  // namespace

json drain_summary(const std::vector<drain_subscriber>& subscribers, const drain_tally& t,
                   const drain_measurement& m) {
    json sum;
    sum["subscribers"] = t.subscribers;
    sum["publishers"] = m.publishers;
    sum["queued_per_publisher"] = m.queued_per_publisher;
    sum["queued_total"] = t.expected;
    sum["published"] = m.published;
    sum["published_acked"] = m.acked;
    sum["publish_failed"] = m.publish_failed;
    sum["publish_time_s"] = m.publish_s;
    sum["publish_rate"] =
        m.publish_s > 0 ? json(static_cast<double>(m.published) / m.publish_s) : json(nullptr);
    sum["publish_stalled"] = m.publish_stalled;
    sum["reconnected"] = m.reconnected;
    sum["sessions_resumed"] = m.sessions_resumed;
    sum["reconnect_latency"] = to_json(m.reconnect);
    sum["complete"] = t.complete;
    sum["stalled"] = m.stalled;
    sum["stall_limit_s"] = m.stall_limit_s;
    sum["waited_s"] = m.waited_s;
    sum["drain_time_s"] = optional_number(t.drain_s);
    sum["drain_rate"] = optional_number(t.drain_rate);
    sum["first_message_s"] = optional_number(t.first_message_s);
    sum["last_message_s"] = optional_number(t.last_message_s);
    sum["subscriber_drain_p50_s"] = optional_number(t.subscriber_p50_s);
    sum["subscriber_drain_max_s"] = optional_number(t.subscriber_max_s);
    sum["subscribers_expecting"] = t.subscribers_expecting;
    sum["subscribers_complete"] = t.subscribers_complete;
    sum["delivered"] = t.delivered;
    sum["received"] = t.received;
    sum["lost"] = t.lost;
    sum["duplicates"] = t.duplicates;
    sum["out_of_order"] = t.out_of_order;
    sum["unexpected"] = t.unexpected;
    sum["subscribers_with_loss"] = t.subscribers_with_loss;
    sum["worst_subscriber"] = t.worst_subscriber;
    sum["worst_subscriber_lost"] = t.worst_subscriber_lost;
    std::vector<const drain_subscriber*> missing;
    for (const auto& s : subscribers) {
        if (s.lost != 0) {
            missing.push_back(&s);
        }
    }
    std::stable_sort(missing.begin(), missing.end(),
                     [](const auto* a, const auto* b) { return a->lost > b->lost; });
    if (missing.size() > max_missing_listed) {
        missing.resize(max_missing_listed);
    }
    sum["missing_by_subscriber"] = json::array();
    for (const auto* s : missing) {
        sum["missing_by_subscriber"].push_back(json{{"name", s->name},
                                                    {"expected", s->expected},
                                                    {"delivered", s->unique},
                                                    {"missing", s->lost}});
    }
    sum["broker_cpu_s_draining"] = optional_number(m.broker_cpu_s);
    sum["cpu_s_per_million"] = m.broker_cpu_s && t.delivered != 0
                                   ? json(*m.broker_cpu_s / static_cast<double>(t.delivered) * 1e6)
                                   : json(nullptr);
    sum["broker_rss_queued_mb"] = megabytes(m.memory_queued, false);
    sum["broker_peak_rss_mb"] = megabytes(m.memory_end, true);
    return sum;
}

void print_drain_summary(std::FILE* out, const json& sum) {
    auto number = [&](const char* key) {
        const auto& v = sum[key];
        return v.is_number() ? short_number(v.get<double>()) : std::string("-");
    };
    auto count = [&](const char* key) {
        const auto& v = sum[key];
        return v.is_number() ? grouped(v.get<double>()) : std::string("-");
    };
    std::fprintf(
        out, "queued: %s messages for %s subscribers by %s publishers in %s s (%s msg/s)%s\n",
        count("queued_total").c_str(), count("subscribers").c_str(), count("publishers").c_str(),
        number("publish_time_s").c_str(), count("publish_rate").c_str(),
        sum.value("publish_stalled", false) ? "; publishing STALLED before every PUBACK"
                                            : ", every one acknowledged");
    if (sum.value("complete", false)) {
        std::fprintf(out,
                     "drained in %s s: %s msg/s; first message after %s s, median subscriber "
                     "done after %s s\n",
                     number("drain_time_s").c_str(), count("drain_rate").c_str(),
                     number("first_message_s").c_str(), number("subscriber_drain_p50_s").c_str());
    } else {
        const std::string last = sum["last_message_s"].is_number()
                                     ? "the last after " + number("last_message_s") + " s"
                                     : "none arrived";
        std::fprintf(out,
                     "drain %s: %s of %s messages delivered (%s), %s missing over %s of %s "
                     "subscribers",
                     sum.value("stalled", false) ? "STALLED" : "INCOMPLETE",
                     count("delivered").c_str(), count("queued_total").c_str(), last.c_str(),
                     count("lost").c_str(), count("subscribers_with_loss").c_str(),
                     count("subscribers").c_str());
        if (sum.value("stalled", false)) {
            std::fprintf(out, "; nothing new for %s s", number("stall_limit_s").c_str());
        }
        std::fprintf(out, "\n");
        for (const auto& s : sum["missing_by_subscriber"]) {
            std::fprintf(out, "  %s: %s of %s delivered, %s missing\n",
                         s["name"].get<std::string>().c_str(),
                         grouped(s["delivered"].get<double>()).c_str(),
                         grouped(s["expected"].get<double>()).c_str(),
                         grouped(s["missing"].get<double>()).c_str());
        }
    }
    std::fprintf(out, "lost %s, duplicates %s, out of order %s; sessions resumed %s of %s",
                 count("lost").c_str(), count("duplicates").c_str(), count("out_of_order").c_str(),
                 count("sessions_resumed").c_str(), count("subscribers").c_str());
    const auto& reconnect = sum["reconnect_latency"];
    if (reconnect.value("count", 0) != 0) {
        std::fprintf(out, " (reconnect to CONNACK p50 %s ms, max %s ms)",
                     short_number(reconnect.value("p50", 0.0)).c_str(),
                     short_number(reconnect.value("max", 0.0)).c_str());
    }
    std::fprintf(out, "\n");
    if (!sum["broker_cpu_s_draining"].is_null()) {
        std::fprintf(out,
                     "broker: %s CPU s during the drain (%s per 1M delivered); RSS %s MB holding "
                     "the backlog, peak %s MB\n",
                     number("broker_cpu_s_draining").c_str(), number("cpu_s_per_million").c_str(),
                     number("broker_rss_queued_mb").c_str(), number("broker_peak_rss_mb").c_str());
    }
    std::fflush(out);
}

// --- compare ---

namespace {

struct metric_row {
    const char* label;
    const char* pointer;  // JSON pointer into a result
    bool higher_is_better;
    bool integer;
};

const std::vector<metric_row>& rows_for(const std::string& kind) {
    static const std::vector<metric_row> throughput = {
        {"max delivered msg/s without loss", "/summary/max_delivered_rate", true, true},
        {"  offered msg/s (in) at that rate", "/summary/max_offered_rate", true, true},
        {"  latency p50 ms at max", "/summary/latency_at_max/p50", false, false},
        {"  latency p99 ms at max", "/summary/latency_at_max/p99", false, false},
        {"  latency p99.9 ms at max", "/summary/latency_at_max/p999", false, false},
        {"  latency max ms at max", "/summary/latency_at_max/max", false, false},
        {"  PUBACK p99 ms at max", "/summary/puback_at_max/p99", false, false},
        {"latency p50 ms at moderate rate", "/summary/latency_at_moderate/p50", false, false},
        {"latency p99 ms at moderate rate", "/summary/latency_at_moderate/p99", false, false},
        {"latency p99.9 ms at moderate rate", "/summary/latency_at_moderate/p999", false, false},
        {"latency max ms at moderate rate", "/summary/latency_at_moderate/max", false, false},
        {"broker CPU s per 1M delivered (at max)", "/summary/cpu_s_per_million", false, false},
        {"broker CPU s per 1M delivered (moderate)", "/summary/cpu_s_per_million_at_moderate",
         false, false},
        {"broker peak RSS MB", "/summary/broker_peak_rss_mb", false, false},
    };
    static const std::vector<metric_row> connections = {
        {"connections established", "/summary/connected", true, true},
        {"connect rate conn/s", "/summary/connect_rate", true, true},
        {"connect latency p50 ms", "/summary/connect_latency/p50", false, false},
        {"connect latency p99 ms", "/summary/connect_latency/p99", false, false},
        {"broker memory per connection, bytes", "/summary/bytes_per_connection", false, true},
        {"broker CPU s per 1k connects", "/summary/cpu_s_per_thousand_connects", false, false},
        {"broker peak RSS MB", "/summary/broker_peak_rss_mb", false, false},
    };
    static const std::vector<metric_row> retained = {
        {"retained messages stored, msg/s", "/summary/retained_store_rate", true, true},
        {"time to deliver all, s (slowest subscriber)", "/summary/time_to_deliver_s", false, false},
        {"time to deliver all, s (median subscriber)", "/summary/time_to_deliver_p50_s", false,
         false},
        {"retained delivery msg/s (all subscribers)", "/summary/retained_deliver_rate", true, true},
        {"retained messages lost", "/summary/lost", false, true},
        {"broker CPU s per 1M delivered", "/summary/cpu_s_per_million", false, false},
        {"broker peak RSS MB", "/summary/broker_peak_rss_mb", false, false},
    };
    static const std::vector<metric_row> drain = {
        {"drain time s (reconnect to last message)", "/summary/drain_time_s", false, false},
        {"drained msg/s (all subscribers)", "/summary/drain_rate", true, true},
        {"subscribers that got their whole backlog", "/summary/subscribers_complete", true, true},
        {"  first message after reconnect, s", "/summary/first_message_s", false, false},
        {"  median subscriber drained, s", "/summary/subscriber_drain_p50_s", false, false},
        {"  reconnect to CONNACK, max ms", "/summary/reconnect_latency/max", false, false},
        {"messages lost (missing after the drain)", "/summary/lost", false, true},
        {"messages duplicated", "/summary/duplicates", false, true},
        {"messages out of order", "/summary/out_of_order", false, true},
        {"broker CPU s during the drain", "/summary/broker_cpu_s_draining", false, false},
        {"broker CPU s per 1M delivered", "/summary/cpu_s_per_million", false, false},
        {"broker RSS MB holding the backlog", "/summary/broker_rss_queued_mb", false, false},
        {"broker peak RSS MB", "/summary/broker_peak_rss_mb", false, false},
        {"queueing: publish msg/s (to the last PUBACK)", "/summary/publish_rate", true, true},
    };
    if (kind == "connections") {
        return connections;
    }
    if (kind == "drain") {
        return drain;
    }
    if (kind == "retained") {
        return retained;
    }
    return throughput;
}

std::optional<double> number_at(const json& j, const char* pointer) {
    const json::json_pointer ptr(pointer);
    if (!j.contains(ptr)) {
        return std::nullopt;
    }
    const json& v = j.at(ptr);
    if (!v.is_number()) {
        return std::nullopt;
    }
    return v.get<double>();
}

}  // namespace

int compare_results(const std::vector<std::string>& files, std::FILE* out) {
    // scenario -> broker -> result; scenarios and brokers in first-seen order.
    std::vector<std::string> scenarios;
    std::vector<std::string> brokers;
    std::map<std::string, std::map<std::string, json>> results;
    json machine;
    for (const auto& path : files) {
        std::ifstream in(path);
        if (!in) {
            std::fprintf(stderr, "compare: cannot read %s\n", path.c_str());
            return 2;
        }
        json j;
        try {
            in >> j;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "compare: %s is not JSON: %s\n", path.c_str(), e.what());
            return 2;
        }
        if (!j.contains("scenario") || !j.contains("broker")) {
            std::fprintf(stderr, "compare: %s is not a starling-bench result\n", path.c_str());
            return 2;
        }
        const auto scenario = j["scenario"].get<std::string>();
        const auto broker = j["broker"].get<std::string>();
        if (std::find(scenarios.begin(), scenarios.end(), scenario) == scenarios.end()) {
            scenarios.push_back(scenario);
        }
        if (std::find(brokers.begin(), brokers.end(), broker) == brokers.end()) {
            brokers.push_back(broker);
        }
        if (machine.is_null() && j.contains("machine")) {
            machine = j["machine"];
        }
        results[scenario][broker] = std::move(j);
    }
    // Starling (embedded) first, Mosquitto second: the ratio column is Starling / Mosquitto;
    // other kinds (starling-cluster) follow.
    auto rank = [](const std::string& b) {
        if (b == "starling") {
            return 0;
        }
        if (b.find("mosquitto") != std::string::npos) {
            return 1;
        }
        return 2;
    };
    std::stable_sort(brokers.begin(), brokers.end(),
                     [&](const auto& a, const auto& b) { return rank(a) < rank(b); });
    if (!machine.is_null()) {
        std::fprintf(out, "machine: %s cores, %s, %s\n\n",
                     std::to_string(machine.value("cores", 0)).c_str(),
                     machine.value("cpu_model", std::string("?")).c_str(),
                     machine.value("kernel", std::string("?")).c_str());
    }
    const bool ratio = brokers.size() >= 2;
    std::fprintf(out, "| scenario | metric |");
    for (const auto& b : brokers) {
        std::fprintf(out, " %s |", b.c_str());
    }
    if (ratio) {
        std::fprintf(out, " %s / %s |", brokers[0].c_str(), brokers[1].c_str());
    }
    std::fprintf(out, "\n|---|---|");
    for (std::size_t i = 0; i < brokers.size() + (ratio ? 1 : 0); ++i) {
        std::fprintf(out, "---:|");
    }
    std::fprintf(out, "\n");
    for (const auto& scenario : scenarios) {
        const auto& by_broker = results[scenario];
        const std::string kind = by_broker.begin()->second.value("kind", std::string("throughput"));
        bool first_row = true;
        for (const auto& row : rows_for(kind)) {
            std::vector<std::optional<double>> values;
            bool any = false;
            for (const auto& b : brokers) {
                auto it = by_broker.find(b);
                values.push_back(it == by_broker.end() ? std::nullopt
                                                       : number_at(it->second, row.pointer));
                any = any || values.back().has_value();
            }
            if (!any) {
                continue;
            }
            std::fprintf(out, "| %s | %s |", first_row ? scenario.c_str() : "", row.label);
            first_row = false;
            for (const auto& v : values) {
                if (!v) {
                    std::fprintf(out, " - |");
                } else {
                    std::fprintf(out, " %s |",
                                 (row.integer ? grouped(*v) : short_number(*v)).c_str());
                }
            }
            if (ratio) {
                if (values[0] && values[1] && *values[1] != 0) {
                    std::fprintf(out, " %s |", short_number(*values[0] / *values[1]).c_str());
                } else {
                    std::fprintf(out, " - |");
                }
            }
            std::fprintf(out, "\n");
        }
        if (first_row) {
            std::fprintf(out, "| %s | (no sustained result) |", scenario.c_str());
            for (std::size_t i = 0; i < brokers.size() + (ratio ? 1 : 0); ++i) {
                std::fprintf(out, " - |");
            }
            std::fprintf(out, "\n");
        }
    }
    std::fprintf(out,
                 "\nRatios are %s / %s: above 1 is better for rates, below 1 is better for "
                 "latency, CPU and memory. starling-cluster is one node in cluster mode (Kafka, "
                 "Redis, PostgreSQL).\n",
                 ratio ? brokers[0].c_str() : "-", ratio ? brokers[1].c_str() : "-");
    return 0;
}

}  // namespace starling::bench
