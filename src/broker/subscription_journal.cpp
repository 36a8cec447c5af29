#include "broker/subscription_journal.h"

namespace starling::broker {

namespace {

// Everything of a subscription besides its key, in one comparable number.
std::uint64_t pack(const stored_subscription& sub) {
    std::uint64_t v = static_cast<std::uint64_t>(sub.options.qos) & 0x3;
    v |= static_cast<std::uint64_t>(sub.options.no_local) << 2;
    v |= static_cast<std::uint64_t>(sub.options.retain_as_published) << 3;
    v |= (static_cast<std::uint64_t>(sub.options.retain_handling) & 0x3) << 4;
    if (sub.subscription_id) {
        v |= std::uint64_t{1} << 6;
        v |= static_cast<std::uint64_t>(*sub.subscription_id) << 32;
    }
    return v;
}

}  // namespace

std::vector<subscription_records::record> subscription_journal::records_for(
    std::string_view client_id, const std::map<std::string, stored_subscription>& current) {
    std::vector<subscription_records::record> out;
    if (current.empty()) {
        // One tombstone ends the set, whatever generation it has and whoever wrote it; the
        // entry records this journal wrote go too (others' are collected, see
        // subscription_records.h).
        out.emplace_back(std::string(client_id), std::string());
        for (const auto& [key, unused] : written_) {
            out.emplace_back(subscription_records::entry_record_key(client_id, generation_, key),
                             std::string());
        }
        restart();
        return out;
    }
    if (generation_ == 0) {
        generation_ = subscription_records::new_generation();
        out.emplace_back(std::string(client_id),
                         subscription_records::base_record(
                             generation_, static_cast<std::uint32_t>(current.size())));
    }
    for (const auto& [key, sub] : current) {
        const std::uint64_t packed = pack(sub);
        auto [it, inserted] = written_.try_emplace(key, packed);
        if (!inserted && it->second == packed) {
            continue;
        }
        it->second = packed;
        out.emplace_back(subscription_records::entry_record_key(client_id, generation_, key),
                         subscription_records::serialize_entry(sub));
    }
    if (written_.size() != current.size()) {
        for (auto it = written_.begin(); it != written_.end();) {
            if (current.contains(it->first)) {
                ++it;
                continue;
            }
            out.emplace_back(
                subscription_records::entry_record_key(client_id, generation_, it->first),
                std::string());
            it = written_.erase(it);
        }
    }
    return out;
}

void subscription_journal::adopt(std::uint64_t generation,
                                 const std::map<std::string, stored_subscription>& current) {
    restart();
    if (generation == 0) {
        return;  // an older release's whole-set record: the next write replaces it
    }
    generation_ = generation;
    for (const auto& [key, sub] : current) {
        written_.emplace(key, pack(sub));
    }
}

void subscription_journal::restart() {
    generation_ = 0;
    written_.clear();
}

}  // namespace starling::broker
