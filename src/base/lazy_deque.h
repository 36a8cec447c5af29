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
// the first insertion and kept from then on, so a busy queue does not allocate it again.
//
// Only what the broker uses is offered; reading an empty, never-used queue allocates nothing.

#include <boost/container/deque.hpp>

#include <cstddef>
#include <memory>
#include <utility>

namespace starling::base {

template <class T>
class lazy_deque {
    using storage = boost::container::deque<T>;

  public:
    using value_type = T;
    using iterator = typename storage::iterator;
    using const_iterator = typename storage::const_iterator;

    lazy_deque() noexcept = default;
    lazy_deque(lazy_deque&&) noexcept = default;
    lazy_deque& operator=(lazy_deque&&) noexcept = default;
    lazy_deque(const lazy_deque& other)
        : items_(other.items_ ? std::make_unique<storage>(*other.items_) : nullptr) {}
    lazy_deque& operator=(const lazy_deque& other) {
        if (this != &other) {
            lazy_deque copy(other);
            *this = std::move(copy);
        }
        return *this;
    }

    bool empty() const noexcept { return !items_ || items_->empty(); }
    std::size_t size() const noexcept { return items_ ? items_->size() : 0; }
    // Whether the storage exists (for tests and memory accounting).
    bool allocated() const noexcept { return items_ != nullptr; }

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

    // Keeps the storage: a queue that was used once is likely to be used again.
    void clear() noexcept {
        if (items_) {
            items_->clear();
        }
    }

    // A never-used queue yields two default-constructed iterators, which compare equal.
    iterator begin() noexcept { return items_ ? items_->begin() : iterator{}; }
    iterator end() noexcept { return items_ ? items_->end() : iterator{}; }
    const_iterator begin() const noexcept { return items_ ? items_->cbegin() : const_iterator{}; }
    const_iterator end() const noexcept { return items_ ? items_->cend() : const_iterator{}; }

  private:
    storage& store() {
        if (!items_) {
            items_ = std::make_unique<storage>();
        }
        return *items_;
    }

    std::unique_ptr<storage> items_;
};

}  // namespace starling::base
