#include "broker/app_consumer.h"

#include "base/retry_pacer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <map>
#include <mutex>
#include <optional>

namespace starling::broker {

class app_consumer::task final : public pooled_task {
  public:
    task(consumer_pool& pool, message_log& log, options opts, std::function<void()> wake)
        : pool_(pool),
          log_(log),
          opts_(std::move(opts)),
          wake_(std::move(wake)),
          // A refused admin call (log unreachable, a topic still being created) is retried
          // soon: a new APPLICATION session waits on it.
          setup_pacer_(
              "APPLICATION consumer of " + opts_.topic,
              {.first_delay = opts_.poll_interval, .max_delay = std::chrono::milliseconds(1000)}),
          poll_pacer_("APPLICATION consumer of " + opts_.topic) {}

    std::vector<log_record> take(std::size_t max);
    void set_commit(std::int32_t partition, std::int64_t next_offset);
    bool owns(std::int32_t partition) const;
    std::size_t owned_count() const;

    void step() override;
    void finish() override;

  private:
    std::shared_ptr<task> self() { return std::static_pointer_cast<task>(shared_from_this()); }
    bool setup();
    void apply_commit();
    void update_pause();
    void refresh_ownership();
    std::vector<topic_partition> partitions() const;
    void retry_after(std::chrono::milliseconds delay);

    consumer_pool& pool_;
    message_log& log_;
    const options opts_;
    const std::function<void()> wake_;

    // Turns only (one at a time), and finish().
    std::unique_ptr<log_consumer> consumer_;
    base::retry_pacer setup_pacer_;
    base::retry_pacer poll_pacer_;
    std::optional<clock::time_point> retry_at_;  // no poll before it (a timer is armed)
    bool evented_ = false;                       // the log consumer calls the ready callback
    std::map<std::int32_t, std::int64_t> committed_;

    std::mutex commit_mutex_;
    std::map<std::int32_t, std::int64_t> commit_targets_;  // guarded by commit_mutex_

    mutable std::mutex mutex_;
    std::deque<log_record> buffer_;    // guarded by mutex_
    std::vector<std::int32_t> owned_;  // sorted; group-managed only; guarded by mutex_
    bool paused_ = false;              // guarded by mutex_
};

std::vector<log_record> app_consumer::task::take(std::size_t max) {
    std::vector<log_record> out;
    bool resume = false;
    {
        std::lock_guard lock(mutex_);
        const std::size_t n = std::min(max, buffer_.size());
        out.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            out.push_back(std::move(buffer_.front()));
            buffer_.pop_front();
        }
        resume = paused_ && buffer_.size() <= opts_.buffer_limit / 2;
    }
    if (resume) {
        pool_.schedule(self());  // the next turn resumes the partitions
    }
    return out;
}

void app_consumer::task::set_commit(std::int32_t partition, std::int64_t next_offset) {
    {
        std::lock_guard lock(commit_mutex_);
        commit_targets_[partition] = next_offset;
    }
    // Not a turn per acknowledgement: one commit per interval covers all of them (a Kafka
    // commit is a round trip to the group coordinator).
    pool_.schedule_at(self(), clock::now() + opts_.poll_interval);
}

bool app_consumer::task::owns(std::int32_t partition) const {
    if (!opts_.group_managed) {
        return true;
    }
    std::lock_guard lock(mutex_);
    return std::binary_search(owned_.begin(), owned_.end(), partition);
}

std::size_t app_consumer::task::owned_count() const {
    if (!opts_.group_managed) {
        return 1;
    }
    std::lock_guard lock(mutex_);
    return owned_.size();
}

bool app_consumer::task::setup() {
    const status prepared = opts_.prepare ? opts_.prepare() : log_.create_topic(opts_.spec);
    if (!prepared) {
        spdlog::warn("APPLICATION topic {} not created: {}", opts_.topic,
                     prepared.error().message());
        return false;
    }
    consumer_spec spec;
    spec.group_id = opts_.group;
    if (opts_.group_managed) {
        // No instance id: a static member that closes keeps its partitions until the session
        // times out, and a leaving member's partitions must move to the others at once.
        spec.topics = {opts_.topic};
    } else {
        spec.assignment = {topic_partition{opts_.topic, 0}};
    }
    spec.reset = offset_reset::earliest;
    spec.max_poll_records =
        std::max<std::size_t>(1, std::min<std::size_t>(500, opts_.buffer_limit));
    auto c = log_.create_consumer(spec);
    if (!c) {
        spdlog::warn("APPLICATION consumer of {} not created: {}", opts_.topic,
                     c.error().message());
        return false;
    }
    // The callback holds no reference: finish() removes it before the task can go away, and
    // removing waits for a call in progress.
    evented_ = c.value()->set_ready_callback(
        [&pool = pool_, weak = std::weak_ptr<pooled_task>(shared_from_this())] {
            if (auto t = weak.lock()) {
                pool.schedule(t);
            }
        });
    std::lock_guard lock(mutex_);
    consumer_ = std::move(c.value());
    return true;
}

std::vector<topic_partition> app_consumer::task::partitions() const {
    if (opts_.group_managed) {
        return consumer_->assignment();
    }
    return {topic_partition{opts_.topic, 0}};
}

void app_consumer::task::apply_commit() {
    std::map<std::int32_t, std::int64_t> targets;
    {
        std::lock_guard lock(commit_mutex_);
        targets = commit_targets_;
    }
    const auto owned = partitions();
    std::vector<std::pair<topic_partition, std::int64_t>> commits;
    for (const auto& [partition, target] : targets) {
        auto done = committed_.find(partition);
        if (target < 0 || (done != committed_.end() && done->second == target)) {
            continue;
        }
        const topic_partition tp{opts_.topic, partition};
        // A partition the group gave away is committed by its new owner only: a late commit
        // from here could move its position past what the new owner has not delivered yet.
        if (std::find(owned.begin(), owned.end(), tp) == owned.end()) {
            continue;
        }
        commits.emplace_back(tp, target);
    }
    if (commits.empty()) {
        return;
    }
    if (auto st = consumer_->commit(commits); st) {
        for (const auto& [tp, target] : commits) {
            committed_[tp.partition] = target;
        }
    } else {
        spdlog::warn("APPLICATION consumer of {}: commit failed: {}", opts_.topic,
                     st.error().message());
    }
}

void app_consumer::task::update_pause() {
    std::lock_guard lock(mutex_);
    const auto tps = partitions();
    if (!paused_ && buffer_.size() >= opts_.buffer_limit) {
        consumer_->pause(tps);
        paused_ = true;
    } else if (paused_ && buffer_.size() <= opts_.buffer_limit / 2) {
        consumer_->resume(tps);
        paused_ = false;
    } else if (paused_ && opts_.group_managed) {
        consumer_->pause(tps);  // partitions assigned since the pause start unpaused
    }
}

void app_consumer::task::refresh_ownership() {
    if (!opts_.group_managed) {
        return;
    }
    std::vector<std::int32_t> now;
    for (const auto& tp : consumer_->assignment()) {
        now.push_back(tp.partition);
    }
    std::sort(now.begin(), now.end());
    std::lock_guard lock(mutex_);
    if (now == owned_) {
        return;
    }
    // Buffered records of a partition that moved are delivered by its new owner (from the
    // group's committed offset); sending them here too would duplicate them.
    std::erase_if(buffer_, [&](const log_record& r) {
        return !std::binary_search(now.begin(), now.end(), r.partition);
    });
    owned_ = std::move(now);
}

void app_consumer::task::retry_after(std::chrono::milliseconds delay) {
    retry_at_ = clock::now() + delay;
    pool_.schedule_at(self(), *retry_at_);
}

void app_consumer::task::step() {
    if (retry_at_) {
        if (clock::now() < *retry_at_) {
            return;  // woken during a backoff: its timer brings the next try
        }
        retry_at_.reset();
    }
    if (!consumer_ && !setup()) {
        retry_after(setup_pacer_.record_failure("setup", "the log refused the topic or consumer"));
        return;
    }
    apply_commit();
    update_pause();
    auto polled = consumer_->poll(std::chrono::milliseconds(0));
    // Rebalances happen inside poll(): what it returned belongs to the assignment now.
    refresh_ownership();
    if (!polled) {
        retry_after(poll_pacer_.record_failure("poll", polled.error().message()));
        return;
    }
    poll_pacer_.succeeded();
    auto& records = polled.value();
    if (!records.empty()) {
        const bool more = records.size() >= std::min<std::size_t>(500, opts_.buffer_limit);
        bool was_empty = false;
        {
            std::lock_guard lock(mutex_);
            was_empty = buffer_.empty();
            for (auto& r : records) {
                buffer_.push_back(std::move(r));
            }
        }
        if (more) {
            // A full poll may have left records behind, which call no ready callback again.
            pool_.schedule(self());
        }
        if (was_empty) {
            wake_();  // may drop the last reference to the actor, and stop this consumer
        }
    }
    // Without a ready callback the interval is the only way to learn of new records.
    pool_.schedule_at(self(), clock::now() + (evented_ ? opts_.idle_tick : opts_.poll_interval));
}

void app_consumer::task::finish() {
    if (!consumer_) {
        return;
    }
    consumer_->set_ready_callback({});
    apply_commit();
    std::lock_guard lock(mutex_);
    consumer_->close();
}

// ---------------------------------------------------------------------------------------------

app_consumer::app_consumer(consumer_pool& pool, message_log& log, options opts,
                           std::function<void()> wake)
    : pool_(pool), task_(std::make_shared<task>(pool, log, std::move(opts), std::move(wake))) {}

app_consumer::~app_consumer() { stop(); }

void app_consumer::start() { pool_.schedule(task_); }

void app_consumer::stop() {
    if (stopped_) {
        return;
    }
    stopped_ = true;
    // Also before start(): a commit target set early arms a timer, which may have run a turn.
    if (pool_.retire(*task_)) {
        task_->finish();
    }
}

std::vector<log_record> app_consumer::take(std::size_t max) { return task_->take(max); }

void app_consumer::set_commit(std::int32_t partition, std::int64_t next_offset) {
    task_->set_commit(partition, next_offset);
}

bool app_consumer::owns(std::int32_t partition) const { return task_->owns(partition); }

std::size_t app_consumer::owned_count() const { return task_->owned_count(); }

}  // namespace starling::broker
