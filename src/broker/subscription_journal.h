#pragma once

// What an actor has written of its session's subscription set to client.subscriptions, so that
// each write carries only what changed (the record layout is subscription_records.h).
//
// The first write of a generation puts the base record and every entry on the log; later
// writes put the entries added or changed and tombstones for those removed. An empty set is
// written as one tombstone on the base record. restart() begins a new generation with the next
// write: the actor calls it when it takes a set over from elsewhere (another node wrote the
// current records) and after a failed write (the log may hold part of it).
//
// Not thread-safe: the actor's own state, used in its turns.

#include "broker/stored_subscription.h"
#include "broker/subscription_records.h"

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace starling::broker {

class subscription_journal {
  public:
    // The records that bring the log from what this journal wrote to `current` (keyed by
    // subscription_records::entry_key), in the order to produce them. Empty when nothing
    // changed. Assumes they will be written: call restart() if they are not.
    std::vector<subscription_records::record> records_for(
        std::string_view client_id, const std::map<std::string, stored_subscription>& current);

    // The set in the log is `current`, written as `generation` (a session restored from the
    // node's own start-up snapshot): later writes continue that generation.
    void adopt(std::uint64_t generation, const std::map<std::string, stored_subscription>& current);

    // The next write starts a new generation.
    void restart();

    std::uint64_t generation() const { return generation_; }

  private:
    std::uint64_t generation_ = 0;  // 0: nothing written by this journal (or restarted)
    // Entry key → the options written, packed (see pack()).
    std::unordered_map<std::string, std::uint64_t> written_;
};

}  // namespace starling::broker
