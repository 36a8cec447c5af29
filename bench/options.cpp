#include "bench/options.h"

#include "bench/payload.h"
#include "bench/topic_pattern.h"

#include <charconv>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string_view>

namespace starling::bench {

namespace {

template <class T>
bool parse_number(std::string_view text, T& out) {
    if constexpr (std::is_floating_point_v<T>) {
        // from_chars for double exists in gcc 12; strtod keeps it simple and locale-free enough.
        std::string copy(text);
        char* end = nullptr;
        const double v = std::strtod(copy.c_str(), &end);
        if (copy.empty() || end != copy.c_str() + copy.size() || !(v >= 0)) {
            return false;
        }
        out = static_cast<T>(v);
        return true;
    } else {
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
        return ec == std::errc{} && ptr == text.data() + text.size();
    }
}

std::vector<std::string> split_commas(std::string_view text) {
    std::vector<std::string> out;
    while (!text.empty()) {
        const auto comma = text.find(',');
        out.emplace_back(text.substr(0, comma));
        if (comma == std::string_view::npos) {
            break;
        }
        text.remove_prefix(comma + 1);
    }
    return out;
}

std::optional<mqtt::qos> to_qos(std::optional<int> value) {
    if (!value) {
        return std::nullopt;
    }
    return static_cast<mqtt::qos>(*value);
}

}  // namespace

std::string describe(const scenario_spec& s) {
    std::ostringstream d;
    const auto qos = [](mqtt::qos q) { return static_cast<int>(q); };
    switch (s.kind) {
        case scenario_kind::connections:
            d << s.connections << " idle connections";
            break;
        case scenario_kind::retained:
            d << s.retained_count << " retained messages from " << s.publishers
              << " publishers, then " << s.subscribers << " subscribers of '" << s.sub_filter
              << "', QoS " << qos(s.pub_qos) << "/" << qos(s.sub_qos);
            break;
        case scenario_kind::drain:
            d << s.publishers << " publisher" << (s.publishers == 1 ? "" : "s") << " queue "
              << s.queued << " message" << (s.queued == 1 ? "" : "s") << " each ('" << s.pub_topic
              << "', QoS " << qos(s.pub_qos) << ") for " << s.subscribers
              << " offline persistent subscriber" << (s.subscribers == 1 ? "" : "s") << " ('"
              << s.sub_filter << "', QoS " << qos(s.sub_qos)
              << "), which then reconnect at once and drain, " << s.payload_size << " B";
            break;
        case scenario_kind::throughput:
            if (s.publishers != 0) {
                d << s.publishers << " publisher" << (s.publishers == 1 ? "" : "s") << " ('"
                  << s.pub_topic << "', QoS " << qos(s.pub_qos) << ")";
            }
            if (s.publishers != 0 && s.subscribers != 0) {
                d << " -> ";
            }
            if (s.subscribers != 0) {
                d << s.subscribers << " subscriber" << (s.subscribers == 1 ? "" : "s") << " ('"
                  << s.sub_filter << "', QoS " << qos(s.sub_qos)
                  << (s.sub_persistent ? ", persistent" : "") << ")";
            }
            d << ", " << s.payload_size << " B";
            break;
    }
    return d.str();
}

std::string usage_text() {
    return R"(starling-bench: MQTT load generator (Starling's codec on Asio)

usage:
  starling-bench conn     [options]            connect clients and hold them
  starling-bench pub      [options]            publishers
  starling-bench sub      [options]            subscribers
  starling-bench scenario <name> [options]     fan-out | fan-in | p2p | shared |
                                               connections | retained | drain
  starling-bench compare  <result.json>...     side-by-side table of several runs

connection:
  --host H (127.0.0.1)  -p, --port P (1883)  -V, --version 3|4|5 (4 = 3.1.1)
  -u, --username U  -P, --password P  -k, --keep-alive S (300)
  --ifaddr A,B,...      source addresses, round-robin per client
  -T, --threads N (1)   load-generator threads, each with its own event loop
  -R, --connect-rate N  connections per second (0 = unpaced)
  --max-pending N (100) connects awaiting CONNACK per thread
clients:
  -c, --count N         clients of conn/pub/sub mode
  --publishers N  --subscribers N  --connections N
  -t, --topic PATTERN   publish topic   -f, --filter PATTERN   subscription filter
  -i, --client-id PATTERN               placeholders: %i index, %c client id,
                                        %g index/group-size, %m index%group-size, %r run id
  --group-size N  --start-index N
  -q, --qos Q  --pub-qos Q  --sub-qos Q
  --persistent | --clean                subscribers keep their session (or not)
  -x, --session-expiry S (3600)         v5 session expiry of persistent sessions
  --retain  -s, --size BYTES (64, at least 32)  -F, --inflight N (100)
load:
  -r, --rate N          total messages/s over all publishers (0 = as fast as possible)
  --rate-per-client N   messages/s per publisher
  -w, --warmup S (1)  -d, --duration S  --drain S (5)  --drain-idle S (1)
  --search              find the highest rate delivered without loss (step up, then bisect)
  --rate-start N  --rate-max N  --rate-factor F (2)  --search-steps N (8)
  --search-precision F (0.15)  --search-budget S (120)  --max-p99-ms MS (1000)
  --moderate-rate N     also measure latency at this fixed rate
  --retained-count N  --settle S (1)
  --queued N (1000)     drain: messages each publisher queues for the offline subscribers;
                        a drain without progress for --drain S ends the run as a stall
output:
  --json FILE  --label NAME  --broker-pid PID  --per-client  --quiet
)";
}

parse_outcome parse_options(int argc, const char* const* argv) {
    parse_outcome out;
    bench_options& o = out.options;
    if (argc < 2) {
        o.mode = bench_mode::help;
        return out;
    }
    const std::string_view command = argv[1];
    int i = 2;
    if (command == "help" || command == "--help" || command == "-h") {
        o.mode = bench_mode::help;
        return out;
    } else if (command == "conn") {
        o.mode = bench_mode::conn;
    } else if (command == "pub") {
        o.mode = bench_mode::pub;
    } else if (command == "sub") {
        o.mode = bench_mode::sub;
    } else if (command == "scenario") {
        o.mode = bench_mode::scenario;
        if (argc < 3) {
            out.error = "scenario: name missing";
            return out;
        }
        o.scenario = argv[2];
        i = 3;
    } else if (command == "compare") {
        o.mode = bench_mode::compare;
        for (; i < argc; ++i) {
            o.files.emplace_back(argv[i]);
        }
        if (o.files.empty()) {
            out.error = "compare: no result files";
        }
        return out;
    } else {
        out.error = "unknown command '" + std::string(command) + "'";
        return out;
    }

    using setter = std::function<bool(std::string_view)>;
    auto num = [](auto& field) -> setter {
        return [&field](std::string_view v) {
            std::remove_reference_t<decltype(field)> value{};
            if (!parse_number(v, value)) {
                return false;
            }
            field = value;
            return true;
        };
    };
    auto opt_num = [](auto& field) -> setter {
        return [&field](std::string_view v) {
            typename std::remove_reference_t<decltype(field)>::value_type value{};
            if (!parse_number(v, value)) {
                return false;
            }
            field = value;
            return true;
        };
    };
    auto text = [](auto& field) -> setter {
        return [&field](std::string_view v) {
            field = std::string(v);
            return true;
        };
    };
    auto qos = [](std::optional<int>& field) -> setter {
        return [&field](std::string_view v) {
            int q = 0;
            if (!parse_number(v, q) || q < 0 || q > 2) {
                return false;
            }
            field = q;
            return true;
        };
    };
    const std::map<std::string_view, setter> with_value = {
        {"--host", text(o.host)},
        {"--port", num(o.port)},
        {"-p", num(o.port)},
        {"--version",
         [&o](std::string_view v) {
             if (v == "3") {
                 o.version = mqtt::protocol_version::v3_1;
             } else if (v == "4" || v == "3.1.1") {
                 o.version = mqtt::protocol_version::v3_1_1;
             } else if (v == "5" || v == "5.0") {
                 o.version = mqtt::protocol_version::v5;
             } else {
                 return false;
             }
             return true;
         }},
        {"--username", text(o.username)},
        {"--password", text(o.password)},
        {"--keep-alive", num(o.keep_alive)},
        {"--ifaddr",
         [&o](std::string_view v) {
             o.ifaddrs = split_commas(v);
             return !o.ifaddrs.empty();
         }},
        {"--threads", num(o.threads)},
        {"--connect-rate", num(o.connect_rate)},
        {"--max-pending", num(o.max_pending)},
        {"--connect-timeout", num(o.connect_timeout_s)},
        {"--count", opt_num(o.count)},
        {"--publishers", opt_num(o.publishers)},
        {"--subscribers", opt_num(o.subscribers)},
        {"--connections", opt_num(o.connections)},
        {"--topic", text(o.topic)},
        {"--filter", text(o.filter)},
        {"--client-id", text(o.client_id)},
        {"--qos", qos(o.qos)},
        {"--pub-qos", qos(o.pub_qos)},
        {"--sub-qos", qos(o.sub_qos)},
        {"--session-expiry", num(o.session_expiry)},
        {"--group-size", num(o.group_size)},
        {"--start-index", num(o.start_index)},
        {"--size", opt_num(o.payload_size)},
        {"--inflight", num(o.inflight)},
        {"--rate", opt_num(o.rate)},
        {"--rate-per-client", opt_num(o.rate_per_client)},
        {"--warmup", num(o.warmup_s)},
        {"--duration", opt_num(o.duration_s)},
        {"--drain", num(o.drain_s)},
        {"--drain-idle", num(o.drain_idle_s)},
        {"--rate-start", opt_num(o.rate_start)},
        {"--rate-max", opt_num(o.rate_max)},
        {"--rate-factor", num(o.rate_factor)},
        {"--search-steps", num(o.search_steps)},
        {"--search-precision", num(o.search_precision)},
        {"--search-budget", num(o.search_budget_s)},
        {"--moderate-rate", opt_num(o.moderate_rate)},
        {"--max-p99-ms", num(o.max_p99_ms)},
        {"--retained-count", opt_num(o.retained_count)},
        {"--queued", opt_num(o.queued)},
        {"--settle", num(o.settle_s)},
        {"--json", text(o.json_path)},
        {"--label", text(o.label)},
        {"--broker-pid", num(o.broker_pid)},
    };
    const std::map<std::string_view, std::string_view> short_names = {
        {"-V", "--version"},    {"-u", "--username"}, {"-P", "--password"},
        {"-k", "--keep-alive"}, {"-T", "--threads"},  {"-R", "--connect-rate"},
        {"-c", "--count"},      {"-t", "--topic"},    {"-f", "--filter"},
        {"-i", "--client-id"},  {"-q", "--qos"},      {"-x", "--session-expiry"},
        {"-s", "--size"},       {"-F", "--inflight"}, {"-r", "--rate"},
        {"-w", "--warmup"},     {"-d", "--duration"},
    };
    for (; i < argc; ++i) {
        std::string_view name = argv[i];
        if (auto s = short_names.find(name); s != short_names.end()) {
            name = s->second;
        }
        if (name == "--search") {
            o.search = true;
        } else if (name == "--persistent") {
            o.persistent = true;
        } else if (name == "--clean") {
            o.persistent = false;
        } else if (name == "--retain") {
            o.retain = true;
        } else if (name == "--quiet") {
            o.quiet = true;
        } else if (name == "--per-client") {
            o.per_client = true;
        } else if (name == "--help" || name == "-h") {
            o.mode = bench_mode::help;
            return out;
        } else if (auto it = with_value.find(name); it != with_value.end()) {
            if (i + 1 >= argc) {
                out.error = std::string(name) + ": value missing";
                return out;
            }
            if (!it->second(argv[++i])) {
                out.error = std::string(name) + ": invalid value '" + argv[i] + "'";
                return out;
            }
        } else {
            out.error = "unknown option '" + std::string(argv[i]) + "'";
            return out;
        }
    }
    if (o.threads == 0) {
        out.error = "--threads must be at least 1";
    } else if (o.payload_size && *o.payload_size < header_size) {
        out.error = "--size must be at least " + std::to_string(header_size) +
                    " (sequence number and timestamp)";
    } else if (o.inflight == 0) {
        out.error = "--inflight must be at least 1";
    }
    return out;
}

std::vector<std::string> scenario_names() {
    return {"fan-out", "fan-in", "p2p", "shared", "connections", "retained", "drain"};
}

std::optional<scenario_spec> resolve_scenario(const bench_options& o, std::string& error) {
    scenario_spec s;
    // Defaults shared by every mode; the scenario table below overrides them.
    s.pub_client_id = "sb%r-p%i";
    s.sub_client_id = "sb%r-s%i";
    s.conn_client_id = "sb%r-c%i";
    s.duration_s = 5;
    switch (o.mode) {
        case bench_mode::conn:
            s.name = "conn";
            s.kind = scenario_kind::connections;
            s.connections = o.count.value_or(1000);
            if (o.client_id) {
                s.conn_client_id = *o.client_id;
            }
            s.duration_s = 10;
            break;
        case bench_mode::pub:
            s.name = "pub";
            s.publishers = o.count.value_or(1);
            s.pub_topic = "bench/%i";
            s.pub_qos = mqtt::qos::at_most_once;
            s.rate = static_cast<double>(s.publishers);  // 1 msg/s each
            if (o.client_id) {
                s.pub_client_id = *o.client_id;
            }
            s.duration_s = 10;
            break;
        case bench_mode::sub:
            s.name = "sub";
            s.subscribers = o.count.value_or(1);
            s.sub_filter = "bench/#";
            s.strict = false;
            if (o.client_id) {
                s.sub_client_id = *o.client_id;
            }
            s.duration_s = 10;
            break;
        case bench_mode::scenario:
            s.name = o.scenario;
            if (o.scenario == "fan-out") {
                s.publishers = 5;
                s.subscribers = 1000;
                s.pub_topic = "bench/%r/fanout/%i";
                s.sub_filter = "bench/%r/fanout/#";
                s.rate_start = 100;
                s.moderate_rate = 20;
            } else if (o.scenario == "fan-in") {
                s.publishers = 1000;
                s.subscribers = 1;
                s.pub_topic = "bench/%r/fanin/%i";
                s.sub_filter = "bench/%r/fanin/+";
                s.pub_qos = s.sub_qos = mqtt::qos::at_least_once;
                s.rate_start = 2000;
                s.moderate_rate = 1000;
            } else if (o.scenario == "p2p") {
                s.publishers = 1000;
                s.subscribers = 1000;
                s.pub_topic = "bench/%r/p2p/%i";
                s.sub_filter = "bench/%r/p2p/%i";
                s.pub_qos = s.sub_qos = mqtt::qos::at_least_once;
                s.sub_persistent = true;
                s.rate_start = 2000;
                s.moderate_rate = 1000;
            } else if (o.scenario == "shared") {
                s.publishers = 1000;
                s.subscribers = 10;
                s.pub_topic = "bench/%r/shared/%i";
                s.sub_filter = "$share/g%r/bench/%r/shared/+";
                s.pub_qos = s.sub_qos = mqtt::qos::at_least_once;
                s.rate_start = 2000;
                s.moderate_rate = 1000;
            } else if (o.scenario == "connections") {
                s.kind = scenario_kind::connections;
                s.connections = 10000;
                s.duration_s = 2;
            } else if (o.scenario == "retained") {
                s.kind = scenario_kind::retained;
                s.publishers = 10;
                s.subscribers = 10;
                s.pub_topic = "bench/%r/retained/%i";
                s.sub_filter = "bench/%r/retained/#";
                s.pub_qos = s.sub_qos = mqtt::qos::at_least_once;
                s.retain = true;
                s.topic_per_message = true;
                s.retained_count = 100000;
            } else if (o.scenario == "drain") {
                // M persistent subscribers, one private topic each, go offline; one publisher
                // per topic queues N messages for each; then all reconnect at once.
                s.kind = scenario_kind::drain;
                s.subscribers = 100;
                s.pub_topic = "bench/%r/drain/%i";
                s.sub_filter = "bench/%r/drain/%i";
                s.pub_qos = s.sub_qos = mqtt::qos::at_least_once;
                s.sub_persistent = true;
                s.queued = 1000;
            } else {
                error = "unknown scenario '" + o.scenario +
                        "' (known: fan-out, fan-in, p2p, "
                        "shared, connections, retained, drain)";
                return std::nullopt;
            }
            break;
        default:
            error = "no scenario for this command";
            return std::nullopt;
    }

    // Overrides.
    if (o.publishers) {
        s.publishers = *o.publishers;
    }
    if (o.subscribers) {
        s.subscribers = *o.subscribers;
    }
    if (s.kind == scenario_kind::drain && !o.publishers) {
        s.publishers = s.subscribers;  // one publisher per subscriber's topic
    }
    if (o.connections) {
        s.connections = *o.connections;
    }
    if (o.count && o.mode == bench_mode::scenario) {
        error = "-c/--count is for conn, pub and sub; use --publishers/--subscribers/--connections";
        return std::nullopt;
    }
    if (o.topic) {
        s.pub_topic = *o.topic;
    }
    if (o.filter) {
        s.sub_filter = *o.filter;
    }
    if (auto q = to_qos(o.qos)) {
        s.pub_qos = s.sub_qos = *q;
    }
    if (auto q = to_qos(o.pub_qos)) {
        s.pub_qos = *q;
    }
    if (auto q = to_qos(o.sub_qos)) {
        s.sub_qos = *q;
    }
    if (o.persistent) {
        s.sub_persistent = *o.persistent;
    }
    if (o.retain) {
        s.retain = true;
    }
    if (o.payload_size) {
        s.payload_size = *o.payload_size;
    }
    if (o.retained_count) {
        s.retained_count = *o.retained_count;
    }
    if (o.queued) {
        s.queued = *o.queued;
    }
    if (o.duration_s) {
        s.duration_s = *o.duration_s;
    }
    if (o.rate_per_client) {
        s.rate = *o.rate_per_client * static_cast<double>(s.publishers);
    }
    if (o.rate) {
        s.rate = *o.rate;
    } else if (!o.rate_per_client && s.kind == scenario_kind::throughput && s.rate == 0) {
        s.rate = s.moderate_rate;  // a plain scenario run without --rate: the moderate rate
    }
    if (o.rate_start) {
        s.rate_start = *o.rate_start;
    } else if (s.rate_start == 0) {
        s.rate_start = s.rate > 0 ? s.rate : 100;
    }
    s.rate_max = o.rate_max.value_or(1e7);
    if (o.moderate_rate) {
        s.moderate_rate = *o.moderate_rate;
    } else if (o.mode != bench_mode::scenario) {
        s.moderate_rate = 0;
    }

    // Checks.
    for (const auto* pattern :
         {&s.pub_topic, &s.sub_filter, &s.pub_client_id, &s.sub_client_id, &s.conn_client_id}) {
        if (!topic_pattern::parse(*pattern)) {
            error = "invalid placeholder in '" + *pattern + "'";
            return std::nullopt;
        }
    }
    if (s.kind == scenario_kind::throughput) {
        if (o.mode != bench_mode::sub && s.publishers == 0) {
            error = "no publishers";
            return std::nullopt;
        }
        if (o.mode == bench_mode::scenario && s.subscribers == 0) {
            error = "no subscribers";
            return std::nullopt;
        }
    }
    if (s.kind == scenario_kind::connections && s.connections == 0) {
        error = "no connections";
        return std::nullopt;
    }
    if (s.kind == scenario_kind::retained &&
        (s.publishers == 0 || s.subscribers == 0 || s.retained_count == 0)) {
        error = "retained needs publishers, subscribers and --retained-count";
        return std::nullopt;
    }
    if (s.kind == scenario_kind::drain) {
        if (s.publishers == 0 || s.subscribers == 0 || s.queued == 0) {
            error = "drain needs publishers, subscribers and --queued";
            return std::nullopt;
        }
        if (!s.sub_persistent) {
            error = "drain needs persistent subscribers (--clean makes nothing to drain)";
            return std::nullopt;
        }
        if (s.pub_qos == mqtt::qos::at_most_once || s.sub_qos == mqtt::qos::at_most_once) {
            error = "drain needs QoS 1 or 2 on both sides: offline sessions queue no QoS 0";
            return std::nullopt;
        }
        if (mqtt::is_v5(o.version) && o.session_expiry == 0) {
            error =
                "drain with -V 5 needs --session-expiry above 0 (the session must outlive "
                "the disconnect)";
            return std::nullopt;
        }
        if (o.search) {
            error = "--search is for the throughput scenarios";
            return std::nullopt;
        }
    }
    if (o.search && o.mode != bench_mode::scenario) {
        error = "--search is for scenarios";
        return std::nullopt;
    }
    s.description = describe(s);
    return s;
}

}  // namespace starling::bench
