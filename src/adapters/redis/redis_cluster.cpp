// redis_connection's Redis Cluster mode: the slot map, routing by key, MOVED and ASK.
// (The class and its standalone and Sentinel modes: redis_connection.h / .cpp.)

#include "adapters/redis/redis_connection.h"
#include "adapters/redis/redis_errc.h"
#include "base/text.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace starling::adapters::redis {

namespace {

constexpr std::size_t slot_count = 16384;

// CRC16/XMODEM (polynomial 0x1021, initial 0), the checksum Redis Cluster hashes keys with.
constexpr std::array<std::uint16_t, 256> crc16_table = [] {
    std::array<std::uint16_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t crc = i << 8;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc & 0x8000) != 0 ? (crc << 1) ^ 0x1021 : crc << 1;
        }
        table[i] = static_cast<std::uint16_t>(crc);
    }
    return table;
}();

std::uint16_t crc16(std::string_view bytes) {
    std::uint16_t crc = 0;
    for (const char c : bytes) {
        crc = static_cast<std::uint16_t>(
            (crc << 8) ^ crc16_table[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xFF]);
    }
    return crc;
}

bool equals_upper(std::string_view text, std::string_view upper) {
    return text.size() == upper.size() &&
           std::equal(text.begin(), text.end(), upper.begin(), [](char a, char b) {
               return std::toupper(static_cast<unsigned char>(a)) == b;
           });
}

// Commands sent to every master: a script must be cached wherever EVALSHA may land, and a PING
// should find a lost master as soon as the owner's idle check runs.
bool is_broadcast(std::string_view command) {
    return equals_upper(command, "SCRIPT") || equals_upper(command, "PING");
}

// The key a command is routed by, or nullopt for a keyless command. Starling sends EVALSHA,
// EVAL, single-key commands (INCRBY, GET, DEL, ...) and the keyless ones listed here; a
// multi-key command must keep its keys in one slot (hash tags), as Redis Cluster requires.
std::optional<std::string_view> routing_key(std::span<const std::string_view> args) {
    if (args.empty()) {
        return std::nullopt;
    }
    const auto command = args[0];
    if (equals_upper(command, "EVALSHA") || equals_upper(command, "EVAL")) {
        if (args.size() < 4 || args[2] == "0") {
            return std::nullopt;
        }
        return args[3];
    }
    static constexpr std::string_view keyless[] = {
        "PING",     "WAIT",    "ROLE",   "SCRIPT", "SCAN", "INFO",   "DBSIZE",
        "FLUSHALL", "FLUSHDB", "KEYS",   "ECHO",   "TIME", "CONFIG", "CLUSTER",
        "ASKING",   "AUTH",    "SELECT", "CLIENT", "HELLO"};
    for (const auto name : keyless) {
        if (equals_upper(command, name)) {
            return std::nullopt;
        }
    }
    if (args.size() < 2) {
        return std::nullopt;
    }
    return args[1];
}

// "MOVED 3999 127.0.0.1:6381" / "ASK 3999 127.0.0.1:6381" → slot, host, port.
struct redirect {
    bool ask = false;
    std::uint16_t slot = 0;
    std::string host;
    std::uint16_t port = 0;
};

std::optional<redirect> parse_redirect(std::string_view text) {
    redirect r;
    if (text.starts_with("MOVED ")) {
        text.remove_prefix(6);
    } else if (text.starts_with("ASK ")) {
        r.ask = true;
        text.remove_prefix(4);
    } else {
        return std::nullopt;
    }
    const auto space = text.find(' ');
    const auto colon = text.rfind(':');
    if (space == std::string_view::npos || colon == std::string_view::npos || colon < space) {
        return std::nullopt;
    }
    const auto slot = base::parse_number<std::uint16_t>(text.substr(0, space));
    const auto port = base::parse_number<std::uint16_t>(text.substr(colon + 1));
    if (!slot || *slot >= slot_count || !port || *port == 0) {
        return std::nullopt;
    }
    r.slot = *slot;
    r.host = std::string(text.substr(space + 1, colon - space - 1));
    r.port = *port;
    return r;
}

}  // namespace

std::uint16_t key_slot(std::string_view key) {
    const auto open = key.find('{');
    if (open != std::string_view::npos) {
        const auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close != open + 1) {
            key = key.substr(open + 1, close - open - 1);
        }
    }
    return static_cast<std::uint16_t>(crc16(key) % slot_count);
}

std::string seed_list(const redis_cluster& cluster) {
    std::string out;
    for (const auto& [host, port] : cluster.nodes) {
        out += fmt::format("{}{}:{}", out.empty() ? "" : ",", host, port);
    }
    return out;
}

std::string describe_endpoint(std::string_view host, std::uint16_t port,
                              const redis_sentinel& sentinel, const redis_cluster& cluster) {
    if (!cluster.nodes.empty()) {
        return fmt::format("redis.cluster nodes {}", seed_list(cluster));
    }
    if (!sentinel.master.empty()) {
        return fmt::format("redis.sentinel master \"{}\"", sentinel.master);
    }
    return fmt::format("redis.standalone {}:{}", host, port);
}

status redis_connection::connect_cluster() {
    const auto& seeds = endpoint_.cluster.nodes;
    std::string errors;
    for (std::size_t i = 0; i < seeds.size(); ++i) {
        const std::size_t index = (next_seed_ + i) % seeds.size();
        const auto& [host, port] = seeds[index];
        // Redis Cluster has only database 0: no SELECT.
        auto seed = dial(host, port, false);
        if (!seed) {
            errors += fmt::format("{}{}", errors.empty() ? "" : "; ", last_error_);
            continue;
        }
        auto free_seed = [this](redisContext* c) { free_context(c); };
        std::unique_ptr<redisContext, decltype(free_seed)> owned(*seed, free_seed);
        reply_ptr reply(static_cast<redisReply*>(redisCommand(owned.get(), "CLUSTER SLOTS")));
        if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0) {
            errors +=
                fmt::format("{}{}:{}: CLUSTER SLOTS {}", errors.empty() ? "" : "; ", host, port,
                            !reply ? std::string(owned->errstr)
                            : is_error_reply(*reply)
                                ? fmt::format("refused: {}", reply_text(*reply))
                                : std::string("names no slots (the cluster is not created yet)"));
            continue;
        }
        next_seed_ = index;
        const std::string from = host;
        owned.reset();
        return apply_slots(*reply, from);
    }
    last_error_ = fmt::format("no seed node gave the cluster's slot map ({})",
                              errors.empty() ? "no nodes configured" : errors);
    return make_error_code(redis_errc::not_connected);
}

status redis_connection::apply_slots(const redisReply& reply, const std::string& from) {
    // Keep the connections to masters that stay; connect to the new ones; close the rest.
    std::vector<link> old = std::move(links_);
    links_.clear();
    slots_.assign(slot_count, no_node);
    auto node_index = [this, &old](const std::string& host, std::uint16_t port) -> std::size_t {
        for (std::size_t i = 0; i < links_.size(); ++i) {
            if (links_[i].host == host && links_[i].port == port) {
                return i;
            }
        }
        link l{.host = host, .port = port};
        for (auto& o : old) {
            if (o.host == host && o.port == port) {
                l.context = std::exchange(o.context, nullptr);
            }
        }
        links_.push_back(std::move(l));
        return links_.size() - 1;
    };
    for (std::size_t i = 0; i < reply.elements; ++i) {
        const redisReply& range = *reply.element[i];
        if (range.type != REDIS_REPLY_ARRAY || range.elements < 3 ||
            range.element[0]->type != REDIS_REPLY_INTEGER ||
            range.element[1]->type != REDIS_REPLY_INTEGER ||
            range.element[2]->type != REDIS_REPLY_ARRAY || range.element[2]->elements < 2) {
            continue;
        }
        const redisReply& master = *range.element[2];
        // An empty or "?" endpoint means "the address you reached me at".
        std::string host(reply_text(*master.element[0]));
        if (host.empty() || host == "?") {
            host = from;
        }
        if (master.element[1]->type != REDIS_REPLY_INTEGER || master.element[1]->integer <= 0 ||
            master.element[1]->integer > 65535) {
            continue;
        }
        const auto index = node_index(host, static_cast<std::uint16_t>(master.element[1]->integer));
        const auto first = std::clamp<long long>(range.element[0]->integer, 0, slot_count - 1);
        const auto last = std::clamp<long long>(range.element[1]->integer, 0, slot_count - 1);
        for (auto slot = first; slot <= last; ++slot) {
            slots_[static_cast<std::size_t>(slot)] = static_cast<std::uint16_t>(index);
        }
    }
    for (auto& o : old) {
        if (o.context != nullptr) {
            free_context(o.context);
        }
    }
    if (links_.empty()) {
        last_error_ = fmt::format("the slot map from {} names no master", from);
        close();
        return make_error_code(redis_errc::not_connected);
    }
    // Every master must answer: a command for its slots would fail anyway, and health should
    // say so now rather than on the first such call.
    for (auto& l : links_) {
        if (l.context == nullptr) {
            auto context = dial(l.host, l.port, false);
            if (!context) {
                const auto ec = context.error();
                close();
                return ec;
            }
            l.context = *context;
        }
    }
    current_ = std::min(current_, links_.size() - 1);
    cluster_up_ = true;
    refresh_due_ = std::chrono::steady_clock::now() + endpoint_.cluster.topology_refresh;
    return {};
}

status redis_connection::refresh_topology() {
    ++refreshes_;
    const std::string_view slots_command[] = {"CLUSTER", "SLOTS"};
    const auto& l = links_[current_];
    auto reply = exec(l.context, l.host, l.port, slots_command);
    if (!reply) {
        return reply.error();
    }
    if ((*reply)->type != REDIS_REPLY_ARRAY || (*reply)->elements == 0) {
        return fail(redis_errc::not_connected,
                    fmt::format("{}:{} gave no slot map: {}", l.host, l.port, reply_text(**reply)));
    }
    const std::string from = l.host;
    return apply_slots(**reply, from);
}

result<std::size_t> redis_connection::link_to(const std::string& host, std::uint16_t port) {
    for (std::size_t i = 0; i < links_.size(); ++i) {
        if (links_[i].host == host && links_[i].port == port) {
            return i;
        }
    }
    // A node the map does not know yet (ASK to a node taking over a slot, or a MOVED that came
    // before the map did): connect to it for this command; the next refresh sorts it in.
    auto context = dial(host, port, false);
    if (!context) {
        return fail(context.error(), last_error_);
    }
    links_.push_back(link{.host = host, .port = port, .context = *context});
    return links_.size() - 1;
}

result<reply_ptr> redis_connection::on_link(std::size_t node,
                                            std::span<const std::string_view> args, bool asking) {
    const auto& l = links_[node];
    if (asking) {
        const std::string_view asking_command[] = {"ASKING"};
        auto ok = exec(l.context, l.host, l.port, asking_command);
        if (!ok) {
            return ok.error();
        }
        if (is_error_reply(**ok)) {
            return ok;
        }
    }
    return exec(l.context, l.host, l.port, args);
}

result<reply_ptr> redis_connection::cluster_command(std::span<const std::string_view> args) {
    if (!cluster_up_) {
        return make_error_code(redis_errc::not_connected);
    }
    if (endpoint_.cluster.topology_refresh.count() > 0 &&
        std::chrono::steady_clock::now() >= refresh_due_) {
        if (auto st = refresh_topology(); !st) {
            return st.error();
        }
    }
    if (!args.empty() && is_broadcast(args[0])) {
        // The last master's reply, unless one refused: then that refusal.
        result<reply_ptr> last = make_error_code(redis_errc::not_connected);
        for (std::size_t i = 0; i < links_.size(); ++i) {
            auto reply = on_link(i, args, false);
            if (!reply || is_error_reply(**reply)) {
                return reply;
            }
            last = std::move(reply);
        }
        return last;
    }
    const auto key = routing_key(args);
    std::size_t node = current_;
    if (key) {
        const auto slot = key_slot(*key);
        if (slots_[slot] == no_node) {
            return fail(redis_errc::not_connected,
                        fmt::format("no master serves slot {} (the cluster is missing a node or "
                                    "still being created)",
                                    slot));
        }
        node = slots_[slot];
    }
    bool asking = false;
    for (std::uint32_t hop = 0;; ++hop) {
        auto reply = on_link(node, args, asking);
        if (!reply || !is_error_reply(**reply)) {
            if (reply) {
                current_ = node;
            }
            return reply;
        }
        const auto moved = parse_redirect(reply_text(**reply));
        if (!moved || hop >= endpoint_.cluster.max_redirects) {
            return reply;  // a plain error reply (or too many hops): the caller's to judge
        }
        ++redirects_;
        if (moved->ask) {
            // The slot is migrating: this one command goes to the importing node.
            auto target = link_to(moved->host, moved->port);
            if (!target) {
                return target.error();
            }
            node = *target;
            asking = true;
            continue;
        }
        // MOVED: the map is stale. Re-read it (a resharding moves ranges, not one slot), and
        // trust the redirect for this slot if the node asked has not heard of the move yet.
        if (auto st = refresh_topology(); !st) {
            return st.error();
        }
        auto target = link_to(moved->host, moved->port);
        if (!target) {
            return target.error();
        }
        slots_[moved->slot] = static_cast<std::uint16_t>(*target);
        node = *target;
        asking = false;
    }
}

}  // namespace starling::adapters::redis
