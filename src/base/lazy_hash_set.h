#pragma once

// lazy_hash_set: an unordered set that costs one pointer until its first element goes in.
//
// Why: a client's actor keeps a few sets of packet ids for persistent sessions (ids removed from
// the device inbox but not confirmed yet, ids read ahead from the inbox, ids sent on an earlier
// connection). A std::unordered_set is 56 bytes inline even when empty, and these sets stay
// empty for every clean-session client; lazy_deque.h says the same for queues. The storage is
// created on the first insertion and kept from then on (lazy_storage.h).
//
// Only what the broker uses is offered; reading or erasing from a never-used set allocates
// nothing.

#include "base/lazy_storage.h"

#include <cstddef>
#include <unordered_set>

namespace starling::base {

template <class T>
class lazy_hash_set : public lazy_storage<std::unordered_set<T>> {
    using storage = std::unordered_set<T>;
    using lazy_storage<storage>::items_;
    using lazy_storage<storage>::store;

  public:
    bool contains(const T& value) const { return items_ && items_->contains(value); }
    // True when `value` was not there yet.
    bool insert(const T& value) { return store().insert(value).second; }
    // How many were removed (0 or 1).
    std::size_t erase(const T& value) { return items_ ? items_->erase(value) : 0; }
};

}  // namespace starling::base
