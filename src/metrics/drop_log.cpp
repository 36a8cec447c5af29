#include "metrics/drop_log.h"

#include "base/assert.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace starling::metrics {
namespace {

// Per-slot counters are 32-bit to halve an entry's size; they saturate rather than wrap (4e9
// drops of one reason for one key within one bucket is already "everything").
using slot_counts = std::array<std::uint32_t, drop_reason_count>;

struct slot {
    std::int64_t bucket = std::numeric_limits<std::int64_t>::min();
    slot_counts counts{};
};

// The time ring of one key (see the header's block comment).
class ring {
  public:
    explicit ring(std::size_t buckets) : slots_(buckets) {}

    void add(std::int64_t bucket, drop_reason reason, std::uint64_t count) {
        auto& s = slots_[index_of(bucket)];
        if (s.bucket != bucket) {
            s.bucket = bucket;
            s.counts.fill(0);
        }
        auto& c = s.counts[static_cast<std::size_t>(reason)];
        const std::uint64_t sum = std::uint64_t{c} + count;
        c = static_cast<std::uint32_t>(
            std::min<std::uint64_t>(sum, std::numeric_limits<std::uint32_t>::max()));
        last_bucket_ = bucket;
    }

    // Adds the counts of the slots inside the window ending at `now` to `out`.
    void sum_into(std::int64_t now, drop_counts& out) const {
        for (const auto& s : slots_) {
            if (in_window(s.bucket, now)) {
                for (std::size_t i = 0; i < drop_reason_count; ++i) {
                    out[i] += s.counts[i];
                }
            }
        }
    }

    bool live(std::int64_t now) const { return in_window(last_bucket_, now); }

  private:
    std::vector<slot> slots_;
    std::int64_t last_bucket_ = std::numeric_limits<std::int64_t>::min();

    std::size_t index_of(std::int64_t bucket) const {
        const auto n = static_cast<std::int64_t>(slots_.size());
        return static_cast<std::size_t>(((bucket % n) + n) % n);
    }
    bool in_window(std::int64_t bucket, std::int64_t now) const {
        return bucket <= now && bucket > now - static_cast<std::int64_t>(slots_.size());
    }
};

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::uint64_t sum(const drop_counts& c) {
    std::uint64_t total = 0;
    for (auto v : c) {
        total += v;
    }
    return total;
}

}  // namespace

// One window keyed by client id or by topic: shards of (map, recency list, totals ring).
class drop_log::keyed_window {
  public:
    keyed_window(const drop_log_options& options)
        : buckets_(options.buckets),
          per_shard_cap_(std::max<std::size_t>(1, options.max_keys / options.shards)) {
        shards_.reserve(options.shards);
        for (std::size_t i = 0; i < options.shards; ++i) {
            shards_.push_back(std::make_unique<shard>(options.buckets));
        }
    }

    // Adds to the key's ring (an empty key: to no key) and, when `count_total`, to the
    // shard's totals.
    void record(std::string_view key, std::int64_t bucket, drop_reason reason, std::uint64_t count,
                bool count_total) {
        auto& sh = shard_of(key);
        std::lock_guard lock(sh.mutex);
        if (count_total) {
            sh.totals.add(bucket, reason, count);
        }
        if (key.empty()) {
            return;
        }
        if (auto it = sh.entries.find(key); it != sh.entries.end()) {
            it->second.r.add(bucket, reason, count);
            sh.recency.splice(sh.recency.begin(), sh.recency, it->second.pos);
            return;
        }
        // A new key: first forget keys whose drops all left the window, then make room.
        while (!sh.recency.empty() && !sh.entries.find(*sh.recency.back())->second.r.live(bucket)) {
            erase_oldest(sh);
        }
        if (sh.entries.size() >= per_shard_cap_) {
            ++sh.evictions;
            erase_oldest(sh);
        }
        auto [it, inserted] = sh.entries.try_emplace(std::string(key), buckets_);
        STARLING_ASSERT(inserted);
        (void)inserted;
        it->second.r.add(bucket, reason, count);
        sh.recency.push_front(&it->first);
        it->second.pos = sh.recency.begin();
    }

    void query(const drop_query& q, std::int64_t now, drop_report& out) const {
        const auto rank = [&q](const drop_row& r) {
            return q.reason ? r.counts[static_cast<std::size_t>(*q.reason)] : r.total;
        };
        for (const auto& sh_ptr : shards_) {
            const auto& sh = *sh_ptr;
            std::lock_guard lock(sh.mutex);
            out.keys += sh.entries.size();
            out.evictions += sh.evictions;
            sh.totals.sum_into(now, out.totals);
            const auto add_row = [&](const std::string& key, const entry& e) {
                drop_row row;
                e.r.sum_into(now, row.counts);
                row.total = sum(row.counts);
                if (rank(row) == 0) {
                    return;
                }
                row.key = key;
                out.rows.push_back(std::move(row));
            };
            if (q.key) {
                if (&shard_of(*q.key) != &sh) {
                    continue;
                }
                if (auto it = sh.entries.find(*q.key); it != sh.entries.end()) {
                    add_row(it->first, it->second);
                }
                continue;
            }
            for (const auto& [key, e] : sh.entries) {
                add_row(key, e);
            }
        }
        out.matching += out.rows.size();
        const std::size_t keep = std::min(q.limit, out.rows.size());
        std::partial_sort(out.rows.begin(), out.rows.begin() + static_cast<std::ptrdiff_t>(keep),
                          out.rows.end(), [&rank](const drop_row& a, const drop_row& b) {
                              const auto ra = rank(a);
                              const auto rb = rank(b);
                              return ra != rb ? ra > rb : a.key < b.key;
                          });
        out.rows.resize(keep);
    }

    void add_totals(std::int64_t now, drop_counts& out) const {
        for (const auto& sh : shards_) {
            std::lock_guard lock(sh->mutex);
            sh->totals.sum_into(now, out);
        }
    }

    std::size_t keys() const {
        std::size_t n = 0;
        for (const auto& sh : shards_) {
            std::lock_guard lock(sh->mutex);
            n += sh->entries.size();
        }
        return n;
    }

    std::uint64_t evictions() const {
        std::uint64_t n = 0;
        for (const auto& sh : shards_) {
            std::lock_guard lock(sh->mutex);
            n += sh->evictions;
        }
        return n;
    }

  private:
    struct entry {
        explicit entry(std::size_t buckets) : r(buckets) {}
        ring r;
        std::list<const std::string*>::iterator pos;
    };
    struct shard {
        explicit shard(std::size_t buckets) : totals(buckets) {}
        mutable std::mutex mutex;
        // Node-based map: the key strings the recency list points at never move.
        std::unordered_map<std::string, entry, string_hash, std::equal_to<>> entries;
        std::list<const std::string*> recency;  // most recently updated first
        ring totals;
        std::uint64_t evictions = 0;
    };

    std::size_t buckets_;
    std::size_t per_shard_cap_;
    std::vector<std::unique_ptr<shard>> shards_;

    shard& shard_of(std::string_view key) const {
        return *shards_[string_hash{}(key) % shards_.size()];
    }

    static void erase_oldest(shard& sh) {
        const std::string* key = sh.recency.back();
        sh.recency.pop_back();
        sh.entries.erase(sh.entries.find(*key));
    }
};

drop_log::drop_log(const starling::clock& clock, drop_log_options options)
    : clock_(clock), options_(options) {
    options_.buckets = std::max<std::size_t>(1, options_.buckets);
    options_.shards = std::max<std::size_t>(1, options_.shards);
    if (options_.bucket_length.count() <= 0) {
        options_.bucket_length = std::chrono::seconds(1);
    }
    clients_ = std::make_unique<keyed_window>(options_);
    topics_ = std::make_unique<keyed_window>(options_);
}

drop_log::~drop_log() = default;

std::int64_t drop_log::bucket_now() const {
    const auto since = clock_.steady_now().time_since_epoch();
    return std::chrono::duration_cast<std::chrono::seconds>(since).count() /
           options_.bucket_length.count();
}

void drop_log::record(drop_reason reason, std::string_view client_id, std::string_view topic,
                      std::uint64_t count) {
    if (count == 0) {
        return;
    }
    const auto bucket = bucket_now();
    // The totals count each drop once: in the client window when there is a client id, else in
    // the topic window.
    if (!client_id.empty()) {
        clients_->record(client_id, bucket, reason, count, true);
    }
    if (!topic.empty() || client_id.empty()) {
        topics_->record(topic, bucket, reason, count, client_id.empty());
    }
}

drop_report drop_log::query(const drop_query& q) const {
    const auto now = bucket_now();
    drop_report out;
    const auto& window = q.by == drop_key_kind::client ? *clients_ : *topics_;
    const auto& other = q.by == drop_key_kind::client ? *topics_ : *clients_;
    window.query(q, now, out);
    other.add_totals(now, out.totals);
    out.total = sum(out.totals);
    return out;
}

std::chrono::seconds drop_log::window() const {
    return options_.bucket_length * static_cast<std::int64_t>(options_.buckets);
}

std::size_t drop_log::keys(drop_key_kind kind) const {
    return (kind == drop_key_kind::client ? *clients_ : *topics_).keys();
}

std::uint64_t drop_log::evictions(drop_key_kind kind) const {
    return (kind == drop_key_kind::client ? *clients_ : *topics_).evictions();
}

}  // namespace starling::metrics
