#include "routing/subscription_trie.h"

#include "base/assert.h"

#include <urcu/urcu-memb.h>

#include <algorithm>
#include <array>
#include <bit>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#define STARLING_ROUTING_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define STARLING_ROUTING_TSAN 1
#endif
#endif
#if defined(STARLING_ROUTING_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

namespace starling::routing {
namespace {

// --- ThreadSanitizer and the grace period -------------------------------------------------------
// liburcu is not instrumented, so TSan cannot see that call_rcu runs its callback only after every
// read-side critical section that was open at call time has closed. Without help it would report
// each deferred free as racing with the reads that preceded it. We state that ordering to TSan on
// one sync address: a reader releases it as it leaves a critical section, a writer releases it
// before handing objects to call_rcu, and the callback acquires it before freeing. This only adds
// edges the grace period really provides; it hides no race in our own code. Compiled out unless
// building with -fsanitize=thread.
#if defined(STARLING_ROUTING_TSAN)
char grace_period_sync;
void tsan_reader_leaves() { __tsan_release(&grace_period_sync); }
void tsan_writer_retires() { __tsan_release(&grace_period_sync); }
void tsan_grace_period_ended() { __tsan_acquire(&grace_period_sync); }
#else
void tsan_reader_leaves() {}
void tsan_writer_retires() {}
void tsan_grace_period_ended() {}
#endif

thread_local int registration_depth = 0;

// --- Deferred reclamation ------------------------------------------------------------------------
// A write collects everything it unpublished and hands it to call_rcu as one batch, so a subscribe
// costs one call_rcu however many buckets and tables it replaced.
struct retired_object {
    void* object;
    void (*destroy)(void*);
};

struct retire_payload {
    std::vector<retired_object> objects;
    std::shared_ptr<subscription_trie::reclaim_tracker> tracker;
};

struct retire_batch {
    rcu_head head;  // first member of a standard-layout struct: free_batch recovers the batch
    retire_payload* payload;
};
static_assert(std::is_standard_layout_v<retire_batch>);

}  // namespace

// The trie's batches still waiting for their grace period, so that the destructor waits for
// exactly those. (rcu_barrier would also do, but it waits for every call_rcu in the process and
// its own bookkeeping is invisible to ThreadSanitizer, which then needs suppressions.) Shared
// with the batches so a callback may finish touching it after the trie is gone.
struct subscription_trie::reclaim_tracker {
    std::mutex mutex;
    std::condition_variable drained;
    std::size_t pending = 0;
};

namespace {

void free_batch(rcu_head* head) {
    tsan_grace_period_ended();
    auto* batch = reinterpret_cast<retire_batch*>(head);
    std::unique_ptr<retire_payload> payload(batch->payload);
    delete batch;
    for (const retired_object& r : payload->objects) {
        r.destroy(r.object);
    }
    subscription_trie::reclaim_tracker& tracker = *payload->tracker;
    std::lock_guard lock(tracker.mutex);
    if (--tracker.pending == 0) {
        tracker.drained.notify_all();
    }
}

// Objects unpublished by one write, freed after a grace period. The writer must hold a
// registration (call_rcu requires it). Flushes on destruction.
class retire_list {
  public:
    explicit retire_list(const std::shared_ptr<subscription_trie::reclaim_tracker>& tracker)
        : tracker_(tracker) {}
    retire_list(const retire_list&) = delete;
    retire_list& operator=(const retire_list&) = delete;
    ~retire_list() { flush(); }

    template <class T>
    void add(T* object) {
        objects_.push_back({object, [](void* p) { delete static_cast<T*>(p); }});
    }
    template <class T>
    void add_array(T* array) {
        objects_.push_back({array, [](void* p) { delete[] static_cast<T*>(p); }});
    }

    void flush() {
        if (objects_.empty()) {
            return;
        }
        auto* batch = new retire_batch{{}, new retire_payload{std::move(objects_), tracker_}};
        objects_.clear();
        {
            std::lock_guard lock(tracker_->mutex);
            ++tracker_->pending;
        }
        tsan_writer_retires();
        // call_rcu rather than synchronize_rcu: writers run on actor and consumer threads that
        // must not block for a grace period (and a writer inside a read-side section would
        // deadlock on synchronize_rcu). Deferred frees cost memory only until the call_rcu thread
        // catches up, and subscribe storms then batch naturally.
        urcu_memb_call_rcu(&batch->head, &free_batch);
    }

  private:
    const std::shared_ptr<subscription_trie::reclaim_tracker>& tracker_;
    std::vector<retired_object> objects_;
};

// --- RCU-readable hash set -----------------------------------------------------------------------
// A hash set of pointers to immutable items, each carrying its own `hash`. Layout: an atomic
// pointer to a table; the table holds a power-of-two array of atomic pointers to buckets; a bucket
// is an immutable nullptr-terminated array of item pointers. A write replaces one bucket (copy of a
// few pointers) or, when the load factor leaves [1/4, 1], rebuilds the table; both publish with a
// release store and retire the old version. So inserting into a node with a million children
// costs O(1) amortized, not a copy of a million pointers.
// Readers: find/for_each inside a read-side critical section. Writers: under the trie's mutex.
template <class Item>
class rcu_hash_set {
  public:
    rcu_hash_set() = default;
    rcu_hash_set(const rcu_hash_set&) = delete;
    rcu_hash_set& operator=(const rcu_hash_set&) = delete;
    // The owner empties the set (erase or destroy_unsafe) before destroying it.
    ~rcu_hash_set() { STARLING_ASSERT(table_.load(std::memory_order_relaxed) == nullptr); }

    template <class Same>
    Item* find(std::size_t hash, Same&& same) const noexcept {
        const table* t = table_.load(std::memory_order_acquire);
        if (t == nullptr) {
            return nullptr;
        }
        Item* const* it = t->buckets[hash & t->mask].load(std::memory_order_acquire);
        if (it == nullptr) {
            return nullptr;
        }
        for (; *it != nullptr; ++it) {
            if ((*it)->hash == hash && same(**it)) {
                return *it;
            }
        }
        return nullptr;
    }

    template <class F>
    void for_each(F&& f) const {
        const table* t = table_.load(std::memory_order_acquire);
        if (t == nullptr) {
            return;
        }
        for (std::size_t i = 0; i <= t->mask; ++i) {
            Item* const* it = t->buckets[i].load(std::memory_order_acquire);
            if (it == nullptr) {
                continue;
            }
            for (; *it != nullptr; ++it) {
                f(static_cast<const Item&>(**it));
            }
        }
    }

    // Writer side only.
    bool empty() const noexcept { return table_.load(std::memory_order_relaxed) == nullptr; }

    // Inserts `item`, or replaces the item `same` selects among those with item->hash. Returns
    // the replaced item (the caller retires it) or nullptr.
    template <class Same>
    Item* upsert(Item* item, Same&& same, retire_list& retired) {
        table* t = table_.load(std::memory_order_relaxed);
        if (t != nullptr) {
            std::atomic<Item**>& slot = t->buckets[item->hash & t->mask];
            Item** old = slot.load(std::memory_order_relaxed);
            const std::size_t n = bucket_size(old);
            for (std::size_t i = 0; i < n; ++i) {
                if (old[i]->hash == item->hash && same(*old[i])) {
                    Item* replaced = old[i];
                    Item** fresh = new Item*[n + 1];
                    std::copy(old, old + n + 1, fresh);
                    fresh[i] = item;
                    slot.store(fresh, std::memory_order_release);
                    retired.add_array(old);
                    return replaced;
                }
            }
            if (t->count + 1 <= t->mask + 1) {
                Item** fresh = new Item*[n + 2];
                std::copy(old, old + n, fresh);
                fresh[n] = item;
                fresh[n + 1] = nullptr;
                slot.store(fresh, std::memory_order_release);
                if (old != nullptr) {
                    retired.add_array(old);
                }
                ++t->count;
                return nullptr;
            }
        }
        rebuild(t == nullptr ? 1 : 2 * (t->mask + 1), item, nullptr, retired);
        return nullptr;
    }

    // Removes the item `same` selects among those with `hash`; returns it (the caller retires
    // it) or nullptr.
    template <class Same>
    Item* erase(std::size_t hash, Same&& same, retire_list& retired) {
        table* t = table_.load(std::memory_order_relaxed);
        if (t == nullptr) {
            return nullptr;
        }
        std::atomic<Item**>& slot = t->buckets[hash & t->mask];
        Item** old = slot.load(std::memory_order_relaxed);
        const std::size_t n = bucket_size(old);
        std::size_t index = n;
        for (std::size_t i = 0; i < n; ++i) {
            if (old[i]->hash == hash && same(*old[i])) {
                index = i;
                break;
            }
        }
        if (index == n) {
            return nullptr;
        }
        Item* victim = old[index];
        const std::size_t remaining = t->count - 1;
        if (remaining == 0) {
            table_.store(nullptr, std::memory_order_release);
            retire_table(t, retired);
            return victim;
        }
        if (remaining * 4 <= t->mask + 1) {
            rebuild(std::bit_ceil(remaining), nullptr, victim, retired);
            return victim;
        }
        if (n == 1) {
            slot.store(nullptr, std::memory_order_release);
        } else {
            Item** fresh = new Item*[n];
            std::copy(old, old + index, fresh);
            std::copy(old + index + 1, old + n + 1, fresh + index);
            slot.store(fresh, std::memory_order_release);
        }
        retired.add_array(old);
        --t->count;
        return victim;
    }

    // Hands every item to `destroy` and frees the set's own memory at once. Only when no reader
    // can reach the set any more (the trie's destructor).
    template <class F>
    void destroy_unsafe(F&& destroy) {
        table* t = table_.exchange(nullptr, std::memory_order_relaxed);
        if (t == nullptr) {
            return;
        }
        for (std::size_t i = 0; i <= t->mask; ++i) {
            Item** bucket = t->buckets[i].load(std::memory_order_relaxed);
            if (bucket == nullptr) {
                continue;
            }
            for (Item** it = bucket; *it != nullptr; ++it) {
                destroy(*it);
            }
            delete[] bucket;
        }
        delete t;
    }

  private:
    struct table {
        explicit table(std::size_t bucket_count)
            : mask(bucket_count - 1), buckets(new std::atomic<Item**>[bucket_count]) {
            for (std::size_t i = 0; i < bucket_count; ++i) {
                buckets[i].store(nullptr, std::memory_order_relaxed);
            }
        }
        const std::size_t mask;
        std::size_t count = 0;  // writer-only
        const std::unique_ptr<std::atomic<Item**>[]> buckets;
    };

    static std::size_t bucket_size(Item* const* bucket) noexcept {
        std::size_t n = 0;
        if (bucket != nullptr) {
            while (bucket[n] != nullptr) {
                ++n;
            }
        }
        return n;
    }

    static void retire_table(table* t, retire_list& retired) {
        for (std::size_t i = 0; i <= t->mask; ++i) {
            if (Item** bucket = t->buckets[i].load(std::memory_order_relaxed); bucket != nullptr) {
                retired.add_array(bucket);
            }
        }
        retired.add(t);
    }

    // Publishes a new table of `bucket_count` buckets holding the current items plus `extra`
    // (if any) minus `excluded` (if any), and retires the old table.
    void rebuild(std::size_t bucket_count, Item* extra, const Item* excluded,
                 retire_list& retired) {
        table* old = table_.load(std::memory_order_relaxed);
        std::vector<Item*> items;
        items.reserve((old != nullptr ? old->count : 0) + 1);
        if (old != nullptr) {
            for (std::size_t i = 0; i <= old->mask; ++i) {
                Item** bucket = old->buckets[i].load(std::memory_order_relaxed);
                for (Item** it = bucket; it != nullptr && *it != nullptr; ++it) {
                    if (*it != excluded) {
                        items.push_back(*it);
                    }
                }
            }
        }
        if (extra != nullptr) {
            items.push_back(extra);
        }
        auto fresh = std::make_unique<table>(bucket_count);
        std::vector<std::size_t> sizes(bucket_count, 0);
        for (const Item* item : items) {
            ++sizes[item->hash & fresh->mask];
        }
        std::vector<Item**> buckets(bucket_count, nullptr);
        for (std::size_t i = 0; i < bucket_count; ++i) {
            if (sizes[i] != 0) {
                buckets[i] = new Item*[sizes[i] + 1];
                buckets[i][sizes[i]] = nullptr;
                sizes[i] = 0;  // reused as the fill position
            }
        }
        for (Item* item : items) {
            const std::size_t b = item->hash & fresh->mask;
            buckets[b][sizes[b]++] = item;
        }
        for (std::size_t i = 0; i < bucket_count; ++i) {
            fresh->buckets[i].store(buckets[i], std::memory_order_relaxed);
        }
        fresh->count = items.size();
        table_.store(fresh.release(), std::memory_order_release);
        if (old != nullptr) {
            retire_table(old, retired);
        }
    }

    std::atomic<table*> table_{nullptr};
};

// One subscription stored under a filter; immutable once published (a replace publishes a new
// entry).
struct entry {
    subscription sub;
    std::size_t hash;  // of (client_id, share_group)
};

std::size_t hash_of(std::string_view text) noexcept { return std::hash<std::string_view>{}(text); }

std::size_t entry_hash(std::string_view client_id, std::string_view share_group) noexcept {
    std::size_t h = hash_of(client_id);
    if (!share_group.empty()) {
        h ^= hash_of(share_group) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    }
    return h;
}

// The level of `text` starting at `pos`, and where the next one starts (npos after the last).
struct level {
    std::string_view segment;
    std::size_t next;
};

level level_at(std::string_view text, std::size_t pos) noexcept {
    const std::size_t slash = text.find('/', pos);
    if (slash == std::string_view::npos) {
        return {text.substr(pos), std::string_view::npos};
    }
    return {text.substr(pos, slash - pos), slash + 1};
}

// A LIFO of pending walk branches that lives on the stack while the walk needs at most
// `InlineCapacity` of them (always, for real topic trees) and spills to the heap beyond. Bounds
// the thread stack a hostile deep filter can consume, unlike recursion.
template <class T, std::size_t InlineCapacity>
class small_stack {
  public:
    bool empty() const noexcept { return size_ == 0; }
    void push(const T& value) {
        if (size_ < InlineCapacity) {
            inline_[size_] = value;
        } else {
            spill_.push_back(value);
        }
        ++size_;
    }
    T pop() noexcept {
        --size_;
        if (size_ < InlineCapacity) {
            return inline_[size_];
        }
        T value = spill_.back();
        spill_.pop_back();
        return value;
    }

  private:
    std::array<T, InlineCapacity> inline_;
    std::size_t size_ = 0;
    std::vector<T> spill_;
};

}  // namespace

// One level of one or more filters. segment, hash and parent never change, filter is written once;
// the children, the wildcard children and the entries change by RCU publication only.
//
// Publication uses std::atomic (store-release / load-acquire) rather than liburcu's
// rcu_assign_pointer / rcu_dereference macros: the same instructions on x86 (an acquire load is a
// plain load there; on ARM it is LDAR instead of a dependent LDR, a negligible difference at a
// handful of loads per level), standard C++, and visible to ThreadSanitizer.
struct subscription_trie::node {
    node(node* parent_node, std::string_view level_segment)
        : parent(parent_node), segment(level_segment), hash(hash_of(level_segment)) {}

    // Writer side: nothing hangs below and nothing is stored here.
    bool prunable() const noexcept {
        return entries.empty() && children.empty() &&
               plus_child.load(std::memory_order_relaxed) == nullptr &&
               multi_child.load(std::memory_order_relaxed) == nullptr;
    }

    node* const parent;  // nullptr for the root
    const std::string segment;
    // The filter that ends here, e.g. "a/+/c", for visitors. Only nodes that ever held an entry
    // carry it (storing it in every node would cost O(depth^2) for a deep filter). Written once,
    // before the node's first entry is published, never changed after: readers only read it
    // after reaching an entry.
    std::string filter;
    const std::size_t hash;       // of segment
    rcu_hash_set<node> children;  // exact segments (never "+" or "#")
    std::atomic<node*> plus_child{nullptr};
    std::atomic<node*> multi_child{nullptr};  // the "#" child, always a leaf
    rcu_hash_set<entry> entries;
};

namespace {

using node = subscription_trie::node;

struct pending_branch {
    const node* at;
    std::size_t pos;  // where the next topic level starts; npos once every level is consumed
};

}  // namespace

// --- rcu_reader_registration / rcu_read_guard --------------------------------------------------

rcu_reader_registration::rcu_reader_registration() {
    if (registration_depth++ == 0) {
        urcu_memb_register_thread();
    }
}

rcu_reader_registration::~rcu_reader_registration() {
    STARLING_ASSERT(registration_depth > 0);
    if (--registration_depth == 0) {
        STARLING_ASSERT(urcu_memb_read_ongoing() == 0);
        urcu_memb_unregister_thread();
    }
}

bool rcu_reader_registration::this_thread_registered() noexcept { return registration_depth > 0; }

rcu_read_guard::rcu_read_guard() noexcept {
    // A read section on an unregistered thread is invisible to grace periods: use-after-free.
    STARLING_ASSERT(registration_depth > 0);
    urcu_memb_read_lock();
}

rcu_read_guard::~rcu_read_guard() {
    tsan_reader_leaves();
    urcu_memb_read_unlock();
}

// --- subscription_trie ---------------------------------------------------------------------------

subscription_trie::subscription_trie()
    : root_(new node(nullptr, {})), reclaim_(std::make_shared<reclaim_tracker>()) {}

subscription_trie::~subscription_trie() {
    // No reader may be matching any more (class contract), so everything goes at once.
    std::vector<node*> work{root_};
    while (!work.empty()) {
        node* n = work.back();
        work.pop_back();
        n->children.destroy_unsafe([&](node* child) { work.push_back(child); });
        if (node* p = n->plus_child.exchange(nullptr, std::memory_order_relaxed); p != nullptr) {
            work.push_back(p);
        }
        if (node* m = n->multi_child.exchange(nullptr, std::memory_order_relaxed); m != nullptr) {
            work.push_back(m);
        }
        n->entries.destroy_unsafe([](entry* e) { delete e; });
        delete n;
    }
    // Wait for the versions retired earlier so that, once the trie is gone, so is its memory.
    // Inside a read-side section this would wait for ourselves.
    STARLING_ASSERT(urcu_memb_read_ongoing() == 0);
    std::unique_lock lock(reclaim_->mutex);
    reclaim_->drained.wait(lock, [&] { return reclaim_->pending == 0; });
}

bool subscription_trie::subscribe(std::string_view filter, subscription s) {
    return subscribe_impl(filter, std::move(s), false);
}

bool subscription_trie::mirror_subscribe(std::string_view filter, subscription s) {
    return subscribe_impl(filter, std::move(s), true);
}

bool subscription_trie::unsubscribe(std::string_view filter, std::string_view client_id,
                                    std::string_view share_group) {
    return unsubscribe_impl(filter, client_id, share_group, false);
}

bool subscription_trie::mirror_unsubscribe(std::string_view filter, std::string_view client_id,
                                           std::string_view share_group) {
    return unsubscribe_impl(filter, client_id, share_group, true);
}

bool subscription_trie::subscribe_impl(std::string_view filter, subscription s, bool keep_local) {
    rcu_reader_registration registration;  // outside the mutex: registering may wait
    std::lock_guard lock(write_mutex_);
    retire_list retired(reclaim_);

    node* at = root_;
    std::size_t pos = 0;
    for (;;) {
        const level l = level_at(filter, pos);
        node* child = nullptr;
        if (l.segment == "+" || l.segment == "#") {
            std::atomic<node*>& slot = l.segment == "+" ? at->plus_child : at->multi_child;
            child = slot.load(std::memory_order_relaxed);
            if (child == nullptr) {
                child = new node(at, l.segment);
                slot.store(child, std::memory_order_release);
                node_count_.fetch_add(1, std::memory_order_relaxed);
            }
        } else {
            const auto same_segment = [&](const node& n) { return n.segment == l.segment; };
            child = at->children.find(hash_of(l.segment), same_segment);
            if (child == nullptr) {
                child = new node(at, l.segment);
                at->children.upsert(child, same_segment, retired);
                node_count_.fetch_add(1, std::memory_order_relaxed);
            }
        }
        at = child;
        if (l.next == std::string_view::npos) {
            break;
        }
        pos = l.next;
    }

    if (at->filter.empty()) {
        at->filter = filter;
    }
    const std::size_t h = entry_hash(s.client_id, s.share_group);
    if (keep_local) {
        // Only reached when the path existed (new nodes hold no entry), so returning here
        // leaves no empty node behind.
        const entry* existing = at->entries.find(h, [&](const entry& e) {
            return e.sub.client_id == s.client_id && e.sub.share_group == s.share_group;
        });
        if (existing != nullptr && existing->sub.owner_node.empty()) {
            return false;
        }
    }
    auto* fresh = new entry{std::move(s), h};
    entry* replaced = at->entries.upsert(
        fresh,
        [&](const entry& e) {
            return e.sub.client_id == fresh->sub.client_id &&
                   e.sub.share_group == fresh->sub.share_group;
        },
        retired);
    if (replaced != nullptr) {
        retired.add(replaced);
        return true;
    }
    subscription_count_.fetch_add(1, std::memory_order_relaxed);
    return keep_local;  // subscribe(): nothing replaced; mirror_subscribe(): applied
}

bool subscription_trie::unsubscribe_impl(std::string_view filter, std::string_view client_id,
                                         std::string_view share_group, bool only_mirrored) {
    rcu_reader_registration registration;
    std::lock_guard lock(write_mutex_);
    retire_list retired(reclaim_);

    node* at = root_;
    std::size_t pos = 0;
    for (;;) {
        const level l = level_at(filter, pos);
        if (l.segment == "+") {
            at = at->plus_child.load(std::memory_order_relaxed);
        } else if (l.segment == "#") {
            at = at->multi_child.load(std::memory_order_relaxed);
        } else {
            at = at->children.find(hash_of(l.segment),
                                   [&](const node& n) { return n.segment == l.segment; });
        }
        if (at == nullptr) {
            return false;
        }
        if (l.next == std::string_view::npos) {
            break;
        }
        pos = l.next;
    }

    if (only_mirrored) {
        const entry* existing =
            at->entries.find(entry_hash(client_id, share_group), [&](const entry& e) {
                return e.sub.client_id == client_id && e.sub.share_group == share_group;
            });
        if (existing == nullptr || existing->sub.owner_node.empty()) {
            return false;
        }
    }
    entry* removed = at->entries.erase(
        entry_hash(client_id, share_group),
        [&](const entry& e) {
            return e.sub.client_id == client_id && e.sub.share_group == share_group;
        },
        retired);
    if (removed == nullptr) {
        return false;
    }
    retired.add(removed);
    subscription_count_.fetch_sub(1, std::memory_order_relaxed);

    // Prune upwards while the node holds nothing. Readers still on a pruned node see it intact
    // (and empty) until they leave their critical section.
    while (at != root_ && at->prunable()) {
        node* parent = at->parent;
        if (parent->plus_child.load(std::memory_order_relaxed) == at) {
            parent->plus_child.store(nullptr, std::memory_order_release);
        } else if (parent->multi_child.load(std::memory_order_relaxed) == at) {
            parent->multi_child.store(nullptr, std::memory_order_release);
        } else {
            [[maybe_unused]] node* unlinked = parent->children.erase(
                at->hash, [&](const node& n) { return &n == at; }, retired);
            STARLING_ASSERT(unlinked == at);
        }
        retired.add(at);
        node_count_.fetch_sub(1, std::memory_order_relaxed);
        at = parent;
    }
    return true;
}

void subscription_trie::match_erased(std::string_view topic, visit_fn fn, void* context) const {
    rcu_read_guard guard;
    const bool system_topic = !topic.empty() && topic.front() == '$';
    const auto visit_entries = [&](const node& n) {
        n.entries.for_each([&](const entry& e) { fn(context, n.filter, e.sub); });
    };

    small_stack<pending_branch, 32> pending;
    pending.push({root_, 0});
    while (!pending.empty()) {
        const pending_branch b = pending.pop();
        // Wildcards never match a first level starting with '$' ($SYS/...).
        const bool wildcards = !(system_topic && b.at == root_);
        if (wildcards) {
            // "x/#" matches "x" itself and everything below it.
            if (const node* m = b.at->multi_child.load(std::memory_order_acquire); m != nullptr) {
                visit_entries(*m);
            }
        }
        if (b.pos == std::string_view::npos) {
            visit_entries(*b.at);
            continue;
        }
        const level l = level_at(topic, b.pos);
        if (wildcards) {
            if (const node* p = b.at->plus_child.load(std::memory_order_acquire); p != nullptr) {
                pending.push({p, l.next});
            }
        }
        const node* exact = b.at->children.find(
            hash_of(l.segment), [&](const node& n) { return n.segment == l.segment; });
        if (exact != nullptr) {
            pending.push({exact, l.next});
        }
    }
}

}  // namespace starling::routing
