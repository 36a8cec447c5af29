#pragma once

// The retained-message trie (docs/architecture.md §7): topic -> value, searched in reverse -- given
// a new subscription's filter, find every stored topic the filter matches.
//
// Structure. One node per topic level, children keyed by exact segment in a hash map; a node
// holds a value when a retained message was published to exactly its topic (and then also that
// topic's text, handed to visitors). match_filter walks the tree along the filter: an exact
// level follows one child, `+` every child, `#` the whole subtree including the node it hangs
// from ("a/#" matches "a"). At the first level `+` and `#` skip topics starting with '$'.
// Every walk, insert, erase and teardown is iterative, so a 32k-level topic cannot exhaust the
// thread's stack.

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace starling::routing {

// Lifecycle: created empty at start-up, filled from the compacted msg.retained topic, destroyed
// at shutdown. Ownership: owns the values (e.g. std::shared_ptr<const retained_message>).
// Concurrency: a std::shared_mutex -- put/erase take it exclusively, match_filter shared. That is
// enough here, unlike the subscription trie: retained lookups happen once per SUBSCRIBE, not per
// PUBLISH, and writes come from one msg.retained consumer. match_filter calls the visitor under
// the shared lock, so a visitor must be short and must not call put/erase on the same trie.
template <class T>
class retained_trie {
  public:
    retained_trie() = default;
    ~retained_trie() { clear_unlocked(); }
    retained_trie(const retained_trie&) = delete;
    retained_trie& operator=(const retained_trie&) = delete;

    // Stores `value` under `topic` (a valid topic name), replacing any previous value; returns
    // true if one was replaced (then moved into *previous when given).
    bool put(std::string_view topic, T value, std::optional<T>* previous = nullptr) {
        std::unique_lock lock(mutex_);
        node* at = &root_;
        for (std::size_t pos = 0;;) {
            const level l = level_at(topic, pos);
            auto it = at->children.find(l.segment);
            if (it == at->children.end()) {
                auto child = std::make_unique<node>(at, l.segment);
                it = at->children.emplace(std::string(l.segment), std::move(child)).first;
                ++node_count_;
            }
            at = it->second.get();
            if (l.next == std::string_view::npos) {
                break;
            }
            pos = l.next;
        }
        const bool replaced = at->value.has_value();
        if (replaced && previous != nullptr) {
            *previous = std::move(at->value);
        }
        at->value.emplace(std::move(value));
        if (!replaced) {
            at->topic = topic;
            ++size_;
        }
        return replaced;
    }

    // Removes the value stored under `topic` (moved into *removed when given) and prunes the
    // nodes left empty; returns false if there was none.
    bool erase(std::string_view topic, std::optional<T>* removed = nullptr) {
        std::unique_lock lock(mutex_);
        node* at = &root_;
        for (std::size_t pos = 0;;) {
            const level l = level_at(topic, pos);
            auto it = at->children.find(l.segment);
            if (it == at->children.end()) {
                return false;
            }
            at = it->second.get();
            if (l.next == std::string_view::npos) {
                break;
            }
            pos = l.next;
        }
        if (!at->value.has_value()) {
            return false;
        }
        if (removed != nullptr) {
            *removed = std::move(at->value);
        }
        at->value.reset();
        std::string().swap(at->topic);
        --size_;
        while (at != &root_ && !at->value.has_value() && at->children.empty()) {
            node* parent = at->parent;
            parent->children.erase(parent->children.find(at->segment));  // destroys *at
            --node_count_;
            at = parent;
        }
        return true;
    }

    // True when a value is stored under `topic`.
    bool contains(std::string_view topic) const {
        std::shared_lock lock(mutex_);
        const node* at = &root_;
        for (std::size_t pos = 0;;) {
            const level l = level_at(topic, pos);
            auto it = at->children.find(l.segment);
            if (it == at->children.end()) {
                return false;
            }
            at = it->second.get();
            if (l.next == std::string_view::npos) {
                return at->value.has_value();
            }
            pos = l.next;
        }
    }

    // Calls visit(std::string_view topic, const T&) -- or visit(const T&) -- once for every
    // stored topic that `filter` (a valid filter, `$share/<group>/` already stripped) matches.
    template <class V>
    void match_filter(std::string_view filter, V&& visit) const {
        std::shared_lock lock(mutex_);
        const auto deliver = [&](const node& n) {
            if (!n.value.has_value()) {
                return;
            }
            if constexpr (std::is_invocable_v<V&, std::string_view, const T&>) {
                std::invoke(visit, std::string_view(n.topic), *n.value);
            } else {
                std::invoke(visit, *n.value);
            }
        };
        struct branch {
            const node* at;
            std::size_t pos;  // where the next filter level starts; npos once all are consumed
        };
        std::vector<branch> pending{{&root_, 0}};
        std::vector<const node*> subtree;
        while (!pending.empty()) {
            const branch b = pending.back();
            pending.pop_back();
            if (b.pos == std::string_view::npos) {
                deliver(*b.at);
                continue;
            }
            const level l = level_at(filter, b.pos);
            const bool first_level = b.at == &root_;
            if (l.segment == "#") {
                // The whole subtree, the node itself included ("a/#" matches "a"); at the first
                // level, without the '$' topics. '#' is always the last level of a filter.
                subtree.assign(1, b.at);
                while (!subtree.empty()) {
                    const node* n = subtree.back();
                    subtree.pop_back();
                    deliver(*n);
                    for (const auto& [segment, child] : n->children) {
                        if (!(n == &root_ && is_system(segment))) {
                            subtree.push_back(child.get());
                        }
                    }
                }
            } else if (l.segment == "+") {
                for (const auto& [segment, child] : b.at->children) {
                    if (!(first_level && is_system(segment))) {
                        pending.push_back({child.get(), l.next});
                    }
                }
            } else if (auto it = b.at->children.find(l.segment); it != b.at->children.end()) {
                pending.push_back({it->second.get(), l.next});
            }
        }
    }

    // Number of stored topics.
    std::size_t size() const {
        std::shared_lock lock(mutex_);
        return size_;
    }

    // Number of nodes, the root included (1 when empty). For metrics and tests.
    std::size_t node_count() const {
        std::shared_lock lock(mutex_);
        return node_count_;
    }

    void clear() {
        std::unique_lock lock(mutex_);
        clear_unlocked();
    }

  private:
    struct segment_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };

    struct node {
        node() = default;
        node(node* parent_node, std::string_view level_segment)
            : parent(parent_node), segment(level_segment) {}

        node* parent = nullptr;  // nullptr for the root
        std::string segment;
        std::unordered_map<std::string, std::unique_ptr<node>, segment_hash, std::equal_to<>>
            children;
        std::optional<T> value;
        std::string topic;  // the full topic while value is set
    };

    struct level {
        std::string_view segment;
        std::size_t next;  // where the next level starts; npos after the last
    };

    static level level_at(std::string_view text, std::size_t pos) noexcept {
        const std::size_t slash = text.find('/', pos);
        if (slash == std::string_view::npos) {
            return {text.substr(pos), std::string_view::npos};
        }
        return {text.substr(pos, slash - pos), slash + 1};
    }

    static bool is_system(std::string_view segment) noexcept {
        return !segment.empty() && segment.front() == '$';
    }

    // Tears the tree down iteratively: each node dies with no children left, so destroying a
    // very deep tree does not recurse.
    void clear_unlocked() {
        std::vector<std::unique_ptr<node>> work;
        for (auto& [segment, child] : root_.children) {
            work.push_back(std::move(child));
        }
        root_.children.clear();
        while (!work.empty()) {
            std::unique_ptr<node> n = std::move(work.back());
            work.pop_back();
            for (auto& [segment, child] : n->children) {
                work.push_back(std::move(child));
            }
        }
        size_ = 0;
        node_count_ = 1;
    }

    mutable std::shared_mutex mutex_;
    node root_;
    std::size_t size_ = 0;
    std::size_t node_count_ = 1;
};

}  // namespace starling::routing
