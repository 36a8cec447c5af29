#pragma once

// lazy_hash_set: an unordered set that costs one pointer until its first element goes in.
//
// Why: a client's actor keeps a few sets of packet ids for persistent sessions (ids removed from
// the device inbox but not confirmed yet, ids read ahead from the inbox, ids sent on an earlier
// connection). A std::unordered_set is 56 bytes inline even when empty, and these sets stay
// empty for every clean-session client; lazy_deque.h says the same for queues. The storage is
// created on the first insertion and kept from then on.
//
// Only what the broker uses is offered; reading or erasing from a never-used set allocates
// nothing.

#include <cstddef>
#include <memory>
#include <unordered_set>

namespace starling::base {

template <class T>
class lazy_hash_set {
    using storage = std::unordered_set<T>;

  public:
    lazy_hash_set() noexcept = default;
    lazy_hash_set(lazy_hash_set&&) noexcept = default;
    lazy_hash_set& operator=(lazy_hash_set&&) noexcept = default;
    lazy_hash_set(const lazy_hash_set& other)
        : items_(other.items_ ? std::make_unique<storage>(*other.items_) : nullptr) {}
    lazy_hash_set& operator=(const lazy_hash_set& other) {
        if (this != &other) {
            lazy_hash_set copy(other);
            *this = std::move(copy);
        }
        return *this;
    }

    bool empty() const noexcept { return !items_ || items_->empty(); }
    std::size_t size() const noexcept { return items_ ? items_->size() : 0; }
    bool contains(const T& value) const { return items_ && items_->contains(value); }
    // Whether the storage exists (for tests and memory accounting).
    bool allocated() const noexcept { return items_ != nullptr; }

    // True when `value` was not there yet.
    bool insert(const T& value) {
        if (!items_) {
            items_ = std::make_unique<storage>();
        }
        return items_->insert(value).second;
    }
    // How many were removed (0 or 1).
    std::size_t erase(const T& value) { return items_ ? items_->erase(value) : 0; }
    // Keeps the storage: a set that was used once is likely to be used again.
    void clear() noexcept {
        if (items_) {
            items_->clear();
        }
    }

  private:
    std::unique_ptr<storage> items_;
};

}  // namespace starling::base
