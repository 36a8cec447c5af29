#include "auth/blocked_clients.h"

#include "auth/pattern.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <functional>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace starling::auth {
namespace {

class category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.auth.blocked_clients"; }
    std::string message(int value) const override {
        switch (static_cast<blocked_error>(value)) {
            case blocked_error::empty_value:
                return "blocked client entry has an empty value";
            case blocked_error::invalid_regex:
                return "blocked client regex does not compile";
            case blocked_error::invalid_ip_address:
                return "blocked client ip_address is not an IPv4 or IPv6 address";
        }
        return "unknown blocked clients error";
    }
};

// Transparent hashing so check() looks up a string_view without building a string.
struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

struct stored_entry {
    blocked_entry entry;
    std::optional<pattern> compiled;  // regex entries only

    bool expired(std::int64_t now_ms) const {
        return entry.expires_at_ms != 0 && entry.expires_at_ms <= now_ms;
    }
};

using entry_ptr = std::shared_ptr<const stored_entry>;
using entry_map = std::unordered_map<std::string, entry_ptr, string_hash, std::equal_to<>>;

// "2001:DB8::1" and "2001:db8:0::1" are one address: store and look up inet_ntop's form.
std::optional<std::string> canonical_ip(const std::string& text) {
    std::array<std::uint8_t, sizeof(in6_addr)> binary{};
    std::array<char, INET6_ADDRSTRLEN> out{};
    for (int family : {AF_INET, AF_INET6}) {
        if (::inet_pton(family, text.c_str(), binary.data()) == 1 &&
            ::inet_ntop(family, binary.data(), out.data(), out.size()) != nullptr) {
            return std::string(out.data());
        }
    }
    return std::nullopt;
}

// Compiles or normalizes the entry; on failure says why (naming the value) in `why`.
std::optional<entry_ptr> prepare(blocked_entry e, std::string& why,
                                 std::optional<blocked_error>& error) {
    if (e.value.empty()) {
        why = "blocked client " + std::string(to_string(e.type)) + " value is empty";
        error = blocked_error::empty_value;
        return std::nullopt;
    }
    auto stored = std::make_shared<stored_entry>();
    if (e.type == block_type::ip_address) {
        auto ip = canonical_ip(e.value);
        if (!ip) {
            why = "blocked client ip_address '" + e.value + "' is not an IPv4 or IPv6 address";
            error = blocked_error::invalid_ip_address;
            return std::nullopt;
        }
        e.value = std::move(*ip);
    } else if (e.type == block_type::regex) {
        // RE2 (pattern.h): Perl-like syntax as TBMQ's Java patterns, matched in linear time
        // with no recursion, where libstdc++'s std::regex overflows the stack on a 64 KiB
        // client id and a backtracking engine can take exponential time.
        std::string error_text;
        stored->compiled = pattern::compile(e.value, &error_text);
        if (!stored->compiled) {
            why = "blocked client regex '" + e.value + "' is invalid: " + error_text;
            error = blocked_error::invalid_regex;
            return std::nullopt;
        }
    }
    stored->entry = std::move(e);
    return entry_ptr(std::move(stored));
}

bool regex_matches(const stored_entry& s, std::string_view text) {
    return s.compiled && s.compiled->full_match(text);
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

// The immutable state readers see. Exact maps are indexed by block_type (client_id, username,
// ip_address); regexes keep insertion order so list() and check() are deterministic.
struct blocked_clients::snapshot {
    std::array<entry_map, 3> exact;
    std::vector<entry_ptr> regexes;

    entry_map& map_for(block_type t) { return exact[static_cast<std::size_t>(t)]; }
    const entry_map& map_for(block_type t) const { return exact[static_cast<std::size_t>(t)]; }
};

const std::error_category& blocked_category() {
    static const category instance;
    return instance;
}

std::error_code make_error_code(blocked_error e) {
    return {static_cast<int>(e), blocked_category()};
}

std::string_view to_string(block_type type) {
    switch (type) {
        case block_type::client_id:
            return "client_id";
        case block_type::username:
            return "username";
        case block_type::ip_address:
            return "ip_address";
        case block_type::regex:
            return "regex";
    }
    return "unknown";
}

std::string_view to_string(regex_target target) {
    switch (target) {
        case regex_target::client_id:
            return "client_id";
        case regex_target::username:
            return "username";
        case regex_target::ip_address:
            return "ip_address";
    }
    return "unknown";
}

namespace {

constexpr std::array<std::pair<block_type, std::string_view>, 4> type_names{{
    {block_type::client_id, "CLIENT_ID"},
    {block_type::username, "USERNAME"},
    {block_type::ip_address, "IP_ADDRESS"},
    {block_type::regex, "REGEX"},
}};

constexpr std::array<std::pair<regex_target, std::string_view>, 3> target_names{{
    {regex_target::client_id, "BY_CLIENT_ID"},
    {regex_target::username, "BY_USERNAME"},
    {regex_target::ip_address, "BY_IP_ADDRESS"},
}};

}  // namespace

std::string_view tbmq_name(block_type type) {
    for (const auto& [t, name] : type_names) {
        if (t == type) {
            return name;
        }
    }
    return "CLIENT_ID";
}

std::string_view tbmq_name(regex_target target) {
    for (const auto& [t, name] : target_names) {
        if (t == target) {
            return name;
        }
    }
    return "BY_CLIENT_ID";
}

std::optional<block_type> block_type_from_tbmq(std::string_view name) {
    for (const auto& [t, n] : type_names) {
        if (n == name) {
            return t;
        }
    }
    return std::nullopt;
}

std::optional<regex_target> regex_target_from_tbmq(std::string_view name) {
    for (const auto& [t, n] : target_names) {
        if (n == name) {
            return t;
        }
    }
    return std::nullopt;
}

blocked_clients::blocked_clients() : current_(std::make_shared<const snapshot>()) {}

blocked_clients::~blocked_clients() = default;

std::shared_ptr<const blocked_clients::snapshot> blocked_clients::load() const {
    std::lock_guard lock(pointer_mutex_);
    return current_;
}

void blocked_clients::publish(std::shared_ptr<const snapshot> next) {
    std::shared_ptr<const snapshot> previous;
    {
        std::lock_guard lock(pointer_mutex_);
        previous = std::exchange(current_, std::move(next));
    }
    // `previous` (possibly the last reference to the old maps) is freed here, outside the lock.
}

std::string blocked_clients::canonical_value(block_type type, const std::string& value) {
    if (type == block_type::ip_address) {
        if (auto ip = canonical_ip(value)) {
            return std::move(*ip);
        }
    }
    return value;
}

status blocked_clients::validate(const blocked_entry& e) {
    std::string why;
    std::optional<blocked_error> error;
    if (prepare(e, why, error)) {
        return {};
    }
    return make_error_code(*error);
}

std::optional<std::string> blocked_clients::describe_error(const blocked_entry& e) {
    std::string why;
    std::optional<blocked_error> error;
    if (prepare(e, why, error)) {
        return std::nullopt;
    }
    return why;
}

status blocked_clients::add(blocked_entry e) {
    std::string why;
    std::optional<blocked_error> error;
    auto prepared = prepare(std::move(e), why, error);
    if (!prepared) {
        spdlog::warn("{}", why);
        return make_error_code(*error);
    }
    const entry_ptr& entry = *prepared;
    std::lock_guard lock(write_mutex_);
    auto next = std::make_shared<snapshot>(*load());
    if (entry->entry.type == block_type::regex) {
        auto same = std::find_if(next->regexes.begin(), next->regexes.end(), [&](const auto& r) {
            return r->entry.value == entry->entry.value;
        });
        if (same != next->regexes.end()) {
            *same = entry;  // replaced in place: keeps its position in the order
        } else {
            next->regexes.push_back(entry);
        }
    } else {
        next->map_for(entry->entry.type).insert_or_assign(entry->entry.value, entry);
    }
    publish(std::move(next));
    return {};
}

bool blocked_clients::remove(block_type type, const std::string& value) {
    std::string key = value;
    if (type == block_type::ip_address) {
        auto ip = canonical_ip(value);
        if (!ip) {
            return false;
        }
        key = std::move(*ip);
    }
    std::lock_guard lock(write_mutex_);
    const auto current = load();
    auto next = std::make_shared<snapshot>(*current);
    bool removed = false;
    if (type == block_type::regex) {
        auto it = std::find_if(next->regexes.begin(), next->regexes.end(),
                               [&](const auto& r) { return r->entry.value == key; });
        if (it != next->regexes.end()) {
            next->regexes.erase(it);
            removed = true;
        }
    } else {
        removed = next->map_for(type).erase(key) > 0;
    }
    if (removed) {
        publish(std::move(next));
    }
    return removed;
}

std::vector<blocked_entry> blocked_clients::list(std::int64_t now_ms) const {
    const auto s = load();
    std::vector<blocked_entry> out;
    for (const entry_map& map : s->exact) {
        for (const auto& [key, stored] : map) {
            if (!stored->expired(now_ms)) {
                out.push_back(stored->entry);
            }
        }
    }
    // Hash order is arbitrary; sort the exact part so listings are stable for the admin API.
    std::sort(out.begin(), out.end(), [](const blocked_entry& a, const blocked_entry& b) {
        return std::tie(a.type, a.value) < std::tie(b.type, b.value);
    });
    for (const entry_ptr& r : s->regexes) {
        if (!r->expired(now_ms)) {
            out.push_back(r->entry);
        }
    }
    return out;
}

std::optional<std::string> blocked_clients::check(std::string_view client_id,
                                                  std::optional<std::string_view> username,
                                                  std::string_view ip, std::int64_t now_ms) const {
    const auto s = load();
    auto reason = [](const stored_entry& e, std::string generated) {
        return e.entry.description.empty() ? std::move(generated) : e.entry.description;
    };
    auto exact = [&](block_type type, std::string_view key) -> const stored_entry* {
        const entry_map& map = s->map_for(type);
        if (map.empty()) {
            return nullptr;
        }
        auto it = map.find(key);
        return it != map.end() && !it->second->expired(now_ms) ? it->second.get() : nullptr;
    };
    if (const auto* e = exact(block_type::client_id, client_id)) {
        return reason(*e, "client id " + quoted(client_id) + " is blocked");
    }
    if (username) {
        if (const auto* e = exact(block_type::username, *username)) {
            return reason(*e, "username " + quoted(*username) + " is blocked");
        }
    }
    // A dual-stack listener reports an IPv4 peer as ::ffff:a.b.c.d; its rule says a.b.c.d.
    constexpr std::string_view mapped_prefix = "::ffff:";
    std::string_view ipv4_of_mapped;
    if (ip.starts_with(mapped_prefix) && ip.find('.') != std::string_view::npos) {
        ipv4_of_mapped = ip.substr(mapped_prefix.size());
    }
    for (std::string_view candidate : {ip, ipv4_of_mapped}) {
        if (candidate.empty()) {
            continue;
        }
        if (const auto* e = exact(block_type::ip_address, candidate)) {
            return reason(*e, "ip address " + quoted(ip) + " is blocked");
        }
    }
    for (const entry_ptr& r : s->regexes) {
        if (r->expired(now_ms)) {
            continue;
        }
        std::string_view text;
        switch (r->entry.target) {
            case regex_target::client_id:
                text = client_id;
                break;
            case regex_target::username:
                if (!username) {
                    continue;  // no username: nothing to match
                }
                text = *username;
                break;
            case regex_target::ip_address:
                text = ip;
                break;
        }
        if (regex_matches(*r, text)) {
            return reason(*r, std::string(to_string(r->entry.target)) + " " + quoted(text) +
                                  " matches blocked pattern " + quoted(r->entry.value));
        }
    }
    return std::nullopt;
}

std::size_t blocked_clients::purge_expired(std::int64_t now_ms) {
    std::lock_guard lock(write_mutex_);
    auto next = std::make_shared<snapshot>(*load());
    std::size_t purged = 0;
    for (entry_map& map : next->exact) {
        purged += std::erase_if(map, [&](const auto& kv) { return kv.second->expired(now_ms); });
    }
    purged += std::erase_if(next->regexes, [&](const entry_ptr& r) { return r->expired(now_ms); });
    if (purged > 0) {
        publish(std::move(next));
    }
    return purged;
}

std::size_t blocked_clients::size() const {
    const auto s = load();
    std::size_t n = s->regexes.size();
    for (const entry_map& map : s->exact) {
        n += map.size();
    }
    return n;
}

}  // namespace starling::auth
