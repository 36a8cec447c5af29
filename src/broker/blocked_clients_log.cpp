#include "broker/blocked_clients_log.h"

#include "broker/state_loader.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

namespace starling::broker {
blocked_clients_log::blocked_clients_log(message_log& log, std::string topic,
                                         auth::blocked_clients& blocked)
    : log_(log), topic_(std::move(topic)), blocked_(blocked) {}

status blocked_clients_log::create_topic() {
    return log_.create_topic(topic_spec{.name = topic_, .partitions = 1, .compacted = true});
}

std::string blocked_clients_log::record_key(auth::block_type type, const std::string& value) {
    return std::string(auth::tbmq_name(type)) + "|" +
           auth::blocked_clients::canonical_value(type, value);
}

std::string blocked_clients_log::encode(const auth::blocked_entry& e) {
    proto::blocked_client record;
    record.set_type(std::string(auth::tbmq_name(e.type)));
    record.set_value(auth::blocked_clients::canonical_value(e.type, e.value));
    record.set_expiration_time_ms(e.expires_at_ms);
    record.set_description(e.description);
    if (e.type == auth::block_type::regex) {
        record.set_regex_match_target(std::string(auth::tbmq_name(e.target)));
    }
    return record.SerializeAsString();
}

std::optional<auth::blocked_entry> blocked_clients_log::decode(std::string_view bytes) {
    proto::blocked_client record;
    if (bytes.empty() || !record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return std::nullopt;
    }
    auto type = auth::block_type_from_tbmq(record.type());
    if (!type) {
        return std::nullopt;
    }
    auth::blocked_entry e;
    e.type = *type;
    e.value = record.value();
    e.expires_at_ms = record.expiration_time_ms();
    e.description = record.description();
    if (e.type == auth::block_type::regex) {
        auto target = record.regex_match_target().empty()
                          ? std::optional(auth::regex_target::client_id)
                          : auth::regex_target_from_tbmq(record.regex_match_target());
        if (!target) {
            return std::nullopt;
        }
        e.target = *target;
    }
    return e;
}

bool blocked_clients_log::apply_record(std::string_view key, std::string_view value) {
    if (value.empty()) {
        const auto bar = key.find('|');
        auto type = bar == std::string_view::npos ? std::nullopt
                                                  : auth::block_type_from_tbmq(key.substr(0, bar));
        if (!type) {
            spdlog::warn("{}: tombstone with unreadable key '{}' ignored", topic_, key);
            return false;
        }
        blocked_.remove(*type, std::string(key.substr(bar + 1)));
        return true;
    }
    auto entry = decode(value);
    if (!entry) {
        spdlog::warn("{}: unreadable record under key '{}' ignored", topic_, key);
        return false;
    }
    if (auto st = blocked_.add(std::move(*entry)); !st) {
        spdlog::warn("{}: record under key '{}' refused: {}", topic_, key, st.error().message());
        return false;
    }
    return true;
}

result<std::size_t> blocked_clients_log::load(const std::string& group_id,
                                              std::chrono::milliseconds timeout,
                                              std::int64_t now_ms) {
    auto records = load_compacted_topic(log_, topic_, group_id, timeout);
    if (!records) {
        return records.error();
    }
    std::size_t loaded = 0;
    for (const auto& [key, value] : records.value()) {
        auto entry = decode(value);
        if (entry && entry->expires_at_ms != 0 && entry->expires_at_ms <= now_ms) {
            continue;  // expired while the node was down
        }
        if (apply_record(key, value)) {
            ++loaded;
        }
    }
    return loaded;
}

void blocked_clients_log::put(auth::blocked_entry e, std::function<void(status)> done) {
    if (auto st = auth::blocked_clients::validate(e); !st) {
        // add() would refuse it: say why (naming the value) without writing anything.
        spdlog::warn("{}", auth::blocked_clients::describe_error(e).value_or(""));
        done(st);
        return;
    }
    std::string key = record_key(e.type, e.value);
    std::string value = encode(e);
    log_.produce(
        topic_, std::move(key), std::move(value), {},
        [this, entry = std::move(e), done = std::move(done)](result<produce_ack> ack) mutable {
            if (!ack) {
                done(ack.error());
                return;
            }
            done(blocked_.add(std::move(entry)));
        });
}

void blocked_clients_log::erase(auth::block_type type, const std::string& value,
                                std::function<void(result<bool>)> done) {
    // Whether there is a rule to remove is decided now, not when the tombstone is acknowledged:
    // in cluster mode this node's follower may apply the tombstone first, and the rule would
    // then look as if it had never existed.
    const auto canonical = auth::blocked_clients::canonical_value(type, value);
    const auto rules = blocked_.list(0);
    const bool exists = std::any_of(rules.begin(), rules.end(), [&](const auth::blocked_entry& e) {
        return e.type == type && e.value == canonical;
    });
    if (!exists) {
        done(false);
        return;
    }
    log_.produce(topic_, record_key(type, value), std::string(), {},
                 [this, type, value, done = std::move(done)](result<produce_ack> ack) {
                     if (!ack) {
                         done(result<bool>(boost::system::in_place_error, ack.error()));
                         return;
                     }
                     (void)blocked_.remove(type, value);  // the follower may have done it
                     done(true);
                 });
}

}  // namespace starling::broker
