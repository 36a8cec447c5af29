#pragma once

// A lock-free multi-producer, single-consumer FIFO queue: Dmitry Vyukov's intrusive
// "non-intrusive-looking" MPSC node queue.
//
// Structure: a singly linked list from `tail_` (oldest, consumer side) to `head_` (newest,
// producer side) with a permanent stub node that keeps the list non-empty, so a push is one
// atomic exchange on `head_` plus one store linking the previous node to the new one, and a pop
// touches only consumer-owned state. Between those two producer steps the list is briefly
// "broken" (the new node is reachable from `head_` but not yet from `tail_`); pop() then
// reports nothing rather than spin, and the producer completes the link a few instructions
// later. FIFO holds per producer (and globally in exchange order).
//
// Each value lives in a heap node allocated by push(). An empty queue costs three pointers.
//
// Concurrency: push() from any number of threads; pop(), has_visible() and the destructor from
// the single consumer (or once no producer can run). Not copyable or movable: nodes point into
// the object (the stub).

#include <atomic>
#include <utility>

namespace starling::actor {

template <class T>
class mpsc_queue {
  public:
    mpsc_queue() = default;
    ~mpsc_queue() {
        while (value_node* node = pop()) {
            delete node;
        }
    }

    mpsc_queue(const mpsc_queue&) = delete;
    mpsc_queue& operator=(const mpsc_queue&) = delete;

    struct node_base {
        std::atomic<node_base*> next{nullptr};
    };
    struct value_node : node_base {
        template <class... Args>
        explicit value_node(Args&&... args) : value(std::forward<Args>(args)...) {}
        T value;
    };

    // Producer side. The release on the link store publishes the value to the consumer's
    // acquire load of `next`.
    void push(value_node* node) {
        node->next.store(nullptr, std::memory_order_relaxed);
        node_base* prev = head_.exchange(node, std::memory_order_acq_rel);
        prev->next.store(node, std::memory_order_release);
    }

    // Consumer side: the oldest fully linked node, or nullptr when none is visible (empty, or a
    // producer is between its two steps). The caller owns the returned node.
    value_node* pop() {
        node_base* tail = tail_;
        node_base* next = tail->next.load(std::memory_order_acquire);
        if (tail == &stub_) {
            if (next == nullptr) {
                return nullptr;
            }
            tail_ = next;
            tail = next;
            next = next->next.load(std::memory_order_acquire);
        }
        if (next != nullptr) {
            tail_ = next;
            return static_cast<value_node*>(tail);
        }
        if (tail != head_.load(std::memory_order_acquire)) {
            return nullptr;  // a producer is mid-push behind `tail`; it will link shortly
        }
        // `tail` is the last node: re-insert the stub behind it so it can be handed out.
        push_stub();
        next = tail->next.load(std::memory_order_acquire);
        if (next != nullptr) {
            tail_ = next;
            return static_cast<value_node*>(tail);
        }
        return nullptr;
    }

    // Consumer side: whether pop() would return a node right now. A node whose producer has not
    // finished linking does not count.
    bool has_visible() const {
        if (tail_ == &stub_) {
            return stub_.next.load(std::memory_order_acquire) != nullptr;
        }
        // tail_ is a real node: pop() hands it out if something is linked behind it, or if it
        // is the newest node (pop() then re-inserts the stub behind it).
        return tail_->next.load(std::memory_order_acquire) != nullptr ||
               tail_ == head_.load(std::memory_order_acquire);
    }

  private:
    void push_stub() {
        stub_.next.store(nullptr, std::memory_order_relaxed);
        node_base* prev = head_.exchange(&stub_, std::memory_order_acq_rel);
        prev->next.store(&stub_, std::memory_order_release);
    }

    // Producers hammer head_, the consumer owns tail_. They are not padded apart: there is one
    // queue pair per connected client and 2 × 64 bytes of padding each would cost more memory
    // than the rare false sharing costs time (most mailboxes have one hot producer).
    std::atomic<node_base*> head_{&stub_};
    node_base* tail_{&stub_};
    node_base stub_;
};

}  // namespace starling::actor
