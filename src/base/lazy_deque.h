#pragma once

// lazy_deque: a FIFO/deque that costs one pointer until its first element goes in.
//
// Why: libstdc++'s std::deque allocates its block map and a 512-byte block in its default
// constructor (about 600 bytes of heap, plus 80 bytes inline). A client's actor holds several
// queues — packets held for the quota, acknowledgements waiting their turn, queued deliveries,
// prefetched inbox messages, packets that arrived before CONNACK — that stay empty for almost
// every connection's whole life; as std::deques they were over half of an idle connection's
// memory (docs/performance.md, "Memory per idle connection"). Here the storage (a
// Boost.Container deque, same complexity and reference stability as std::deque) is created on
// the first insertion and kept from then on, so a busy queue does not allocate it again
// (lazy_storage.h, shared with lazy_hash_set.h).
//
// Only what the broker uses is offered; reading an empty, never-used queue allocates nothing.

#include "base/lazy_storage.h"

#include <boost/container/deque.hpp>

#include <utility>

namespace starling::base {

template <class T>
class lazy_deque : public lazy_storage<boost::container::deque<T>> {
    using storage = boost::container::deque<T>;
    using lazy_storage<storage>::items_;
    using lazy_storage<storage>::store;

  public:
    using value_type = T;
    using iterator = typename storage::iterator;
    using const_iterator = typename storage::const_iterator;

    // Precondition for front/back/pop_*: !empty().
    T& front() { return items_->front(); }
    const T& front() const { return items_->front(); }
    T& back() { return items_->back(); }
    const T& back() const { return items_->back(); }
    void pop_front() { items_->pop_front(); }
    void pop_back() { items_->pop_back(); }

    void push_back(const T& value) { store().push_back(value); }
    void push_back(T&& value) { store().push_back(std::move(value)); }
    void push_front(T&& value) { store().push_front(std::move(value)); }
    template <class... Args>
    T& emplace_back(Args&&... args) {
        return store().emplace_back(std::forward<Args>(args)...);
    }

    // A never-used queue yields two default-constructed iterators, which compare equal.
    iterator begin() noexcept { return items_ ? items_->begin() : iterator{}; }
    iterator end() noexcept { return items_ ? items_->end() : iterator{}; }
    const_iterator begin() const noexcept { return items_ ? items_->cbegin() : const_iterator{}; }
    const_iterator end() const noexcept { return items_ ? items_->cend() : const_iterator{}; }
};

}  // namespace starling::base
