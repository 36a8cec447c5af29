#include "broker/subscription_records.h"

#include "proto/starling.pb.h"

#include <algorithm>
#include <charconv>
#include <random>

namespace starling::broker::subscription_records {

namespace {

constexpr char separator = '\0';
constexpr std::size_t generation_digits = 16;  // lower-case hex, zero-padded

}  // namespace

std::string entry_key(std::string_view share_group, std::string_view filter) {
    std::string key;
    key.reserve(share_group.size() + filter.size() + 1);
    key.append(share_group);
    key.push_back(separator);
    key.append(filter);
    return key;
}

std::string entry_record_key(std::string_view client_id, std::uint64_t generation,
                             std::string_view entry_key) {
    std::string key;
    key.reserve(client_id.size() + generation_digits + entry_key.size() + 2);
    key.append(client_id);
    key.push_back(separator);
    char digits[generation_digits];
    for (std::size_t i = 0; i < generation_digits; ++i) {
        digits[generation_digits - 1 - i] = "0123456789abcdef"[(generation >> (4 * i)) & 0xF];
    }
    key.append(digits, generation_digits);
    key.push_back(separator);
    key.append(entry_key);
    return key;
}

std::optional<parsed_key> parse_key(std::string_view key) {
    const auto first = key.find(separator);
    if (first == std::string_view::npos) {
        return parsed_key{.client_id = key};
    }
    parsed_key parsed{.client_id = key.substr(0, first), .is_entry = true};
    const auto rest = key.substr(first + 1);
    if (rest.size() < generation_digits + 1 || rest[generation_digits] != separator) {
        return std::nullopt;
    }
    const char* begin = rest.data();
    const char* end = begin + generation_digits;
    auto [ptr, ec] = std::from_chars(begin, end, parsed.generation, 16);
    if (ec != std::errc() || ptr != end) {
        return std::nullopt;
    }
    parsed.entry_key = rest.substr(generation_digits + 1);
    // The entry key is share name \0 filter: exactly one more separator.
    if (parsed.entry_key.find(separator) == std::string_view::npos) {
        return std::nullopt;
    }
    return parsed;
}

std::string base_record(std::uint64_t generation, std::uint32_t entries_following) {
    proto::client_subscriptions base;
    base.set_generation(generation);
    base.set_entries_following(entries_following);
    return base.SerializeAsString();
}

std::uint64_t new_generation() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::uint64_t g = 0;
    while (g == 0) {
        g = rng();
    }
    return g;
}

fold::applied fold::apply(std::string_view key, std::string_view value, std::string_view writer) {
    applied result;
    auto parsed = parse_key(key);
    if (!parsed) {
        result.what = outcome::unreadable;
        return result;
    }
    result.client_id = std::string(parsed->client_id);
    auto it = clients_.find(result.client_id);

    if (!parsed->is_entry) {
        if (value.empty()) {
            if (it == clients_.end()) {
                return result;
            }
            for (const auto& [entry, unused] : it->second.entries) {
                if (it->second.generation != 0) {
                    result.superseded.push_back(
                        entry_record_key(result.client_id, it->second.generation, entry));
                }
            }
            clients_.erase(it);
            result.what = outcome::changed;
            return result;
        }
        proto::client_subscriptions base;
        if (!base.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
            result.what = outcome::unreadable;
            return result;
        }
        if (it != clients_.end() && base.generation() != 0 &&
            base.generation() == it->second.generation) {
            return result;  // the same base again (a re-read or a repeated write)
        }
        client_set fresh;
        fresh.generation = base.generation();
        fresh.writer = std::string(writer);
        fresh.pending = base.entries_following();
        for (const auto& ts : base.subscriptions()) {
            fresh.entries.insert_or_assign(entry_key(ts.share_name(), ts.topic_filter()),
                                           ts.SerializeAsString());
        }
        if (it != clients_.end()) {
            if (it->second.generation != 0) {
                for (const auto& [entry, unused] : it->second.entries) {
                    result.superseded.push_back(
                        entry_record_key(result.client_id, it->second.generation, entry));
                }
            }
            it->second = std::move(fresh);
        } else {
            clients_.emplace(result.client_id, std::move(fresh));
        }
        result.what = base.entries_following() == 0 ? outcome::changed : outcome::incomplete;
        return result;
    }

    if (it == clients_.end() || parsed->generation == 0 ||
        parsed->generation != it->second.generation) {
        // A set that ended, or one another writer replaced: whatever it says is garbage. A
        // tombstone for garbage is the collection itself.
        result.what = value.empty() ? outcome::unchanged : outcome::dead;
        return result;
    }
    auto& set = it->second;
    const bool was_pending = set.pending > 0;
    if (was_pending) {
        --set.pending;
    }
    // The last of a new generation's first entries completes it: the set changed as a whole.
    const outcome done_with = set.pending > 0 ? outcome::incomplete : outcome::changed;
    if (value.empty()) {
        auto e = set.entries.find(parsed->entry_key);
        if (e != set.entries.end()) {
            set.entries.erase(e);
            result.what = done_with;
        } else if (was_pending) {
            result.what = done_with;
        }
        return result;
    }
    proto::topic_subscription ts;
    if (!ts.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
        result.what = outcome::unreadable;
        return result;
    }
    auto e = set.entries.find(parsed->entry_key);
    if (e != set.entries.end() && e->second == value) {
        if (was_pending) {
            result.what = done_with;
        }
        return result;
    }
    set.entries.insert_or_assign(std::string(parsed->entry_key), std::string(value));
    result.what = done_with;
    return result;
}

std::vector<std::string> fold::load(const std::unordered_map<std::string, std::string>& snapshot,
                                    const std::unordered_map<std::string, std::string>& writers) {
    std::vector<std::string> dead;
    for (const auto& [key, value] : snapshot) {
        if (key.find(separator) == std::string::npos) {
            auto w = writers.find(key);
            apply(key, value,
                  w == writers.end() ? std::string_view() : std::string_view(w->second));
        }
    }
    for (const auto& [key, value] : snapshot) {
        if (key.find(separator) == std::string::npos) {
            continue;
        }
        const auto folded = apply(key, value);
        if (folded.what == outcome::dead || folded.what == outcome::unreadable) {
            dead.push_back(key);
        }
    }
    for (auto& [id, set] : clients_) {
        set.pending = 0;
    }
    return dead;
}

std::optional<std::string> fold::serialized_set(std::string_view client_id) const {
    auto it = clients_.find(std::string(client_id));
    if (it == clients_.end()) {
        return std::nullopt;
    }
    proto::client_subscriptions set;
    for (const auto& [entry, serialized] : it->second.entries) {
        set.add_subscriptions()->ParseFromString(serialized);
    }
    return set.SerializeAsString();
}

std::uint64_t fold::generation_of(std::string_view client_id) const {
    auto it = clients_.find(std::string(client_id));
    return it == clients_.end() ? 0 : it->second.generation;
}

std::string_view fold::writer_of(std::string_view client_id) const {
    auto it = clients_.find(std::string(client_id));
    return it == clients_.end() ? std::string_view() : std::string_view(it->second.writer);
}

std::vector<std::string> fold::clients() const {
    std::vector<std::string> ids;
    ids.reserve(clients_.size());
    for (const auto& [id, unused] : clients_) {
        ids.push_back(id);
    }
    return ids;
}

namespace {

void to_proto(const stored_subscription& sub, proto::topic_subscription& ts) {
    ts.set_topic_filter(sub.filter);
    ts.set_share_name(sub.share_group);
    auto* opts = ts.mutable_options();
    opts->set_qos(static_cast<std::uint32_t>(sub.options.qos));
    opts->set_no_local(sub.options.no_local);
    opts->set_retain_as_published(sub.options.retain_as_published);
    opts->set_retain_handling(static_cast<std::uint32_t>(sub.options.retain_handling));
    if (sub.subscription_id) {
        ts.set_subscription_id(*sub.subscription_id);
    }
}

}  // namespace

std::string serialize_entry(const stored_subscription& sub) {
    proto::topic_subscription ts;
    to_proto(sub, ts);
    return ts.SerializeAsString();
}

std::string serialize_set(const std::vector<stored_subscription>& subscriptions) {
    proto::client_subscriptions set;
    for (const auto& sub : subscriptions) {
        to_proto(sub, *set.add_subscriptions());
    }
    return set.SerializeAsString();
}

std::optional<std::vector<stored_subscription>> parse_set(std::string_view serialized) {
    proto::client_subscriptions set;
    if (!set.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
        return std::nullopt;
    }
    std::vector<stored_subscription> out;
    out.reserve(static_cast<std::size_t>(set.subscriptions_size()));
    for (const auto& ts : set.subscriptions()) {
        stored_subscription sub;
        sub.filter = ts.topic_filter();
        sub.share_group = ts.share_name();
        sub.options.qos = static_cast<mqtt::qos>(std::min<std::uint32_t>(ts.options().qos(), 2));
        sub.options.no_local = ts.options().no_local();
        sub.options.retain_as_published = ts.options().retain_as_published();
        sub.options.retain_handling = static_cast<mqtt::retain_handling>(
            std::min<std::uint32_t>(ts.options().retain_handling(), 2));
        if (ts.has_subscription_id()) {
            sub.subscription_id = ts.subscription_id();
        }
        out.push_back(std::move(sub));
    }
    return out;
}

}  // namespace starling::broker::subscription_records
