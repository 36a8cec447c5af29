#pragma once

// lazy_storage: the part lazy_deque.h and lazy_hash_set.h share — a container that is only a
// null pointer until something goes in, and is kept (cleared, not freed) from then on.
//
// Why: see lazy_deque.h. A client's actor holds queues and packet-id sets that stay empty for
// most connections' whole lives; as standard containers they cost 56–80 bytes inline (and, for
// libstdc++'s std::deque, about 600 bytes of heap) each. The derived classes offer the
// operations their users need; reads of a never-used container allocate nothing.

#include <cstddef>
#include <memory>
#include <utility>

namespace starling::base {

template <class Storage>
class lazy_storage {
  public:
    lazy_storage() noexcept = default;
    lazy_storage(lazy_storage&&) noexcept = default;
    lazy_storage& operator=(lazy_storage&&) noexcept = default;
    lazy_storage(const lazy_storage& other)
        : items_(other.items_ ? std::make_unique<Storage>(*other.items_) : nullptr) {}
    lazy_storage& operator=(const lazy_storage& other) {
        if (this != &other) {
            lazy_storage copy(other);
            *this = std::move(copy);
        }
        return *this;
    }
    ~lazy_storage() = default;

    bool empty() const noexcept { return !items_ || items_->empty(); }
    std::size_t size() const noexcept { return items_ ? items_->size() : 0; }
    // Whether the storage exists (for tests and memory accounting).
    bool allocated() const noexcept { return items_ != nullptr; }

    // Keeps the storage: a container that was used once is likely to be used again.
    void clear() noexcept {
        if (items_) {
            items_->clear();
        }
    }

  protected:
    // The storage, created on first use.
    Storage& store() {
        if (!items_) {
            items_ = std::make_unique<Storage>();
        }
        return *items_;
    }

    std::unique_ptr<Storage> items_;  // null until the first insertion
};

}  // namespace starling::base
