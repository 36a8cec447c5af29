#include "adapters/embedded/embedded_log_consumer.h"

#include "adapters/embedded/log_engine.h"
#include "adapters/embedded/log_errc.h"
#include "adapters/embedded/log_partition.h"

#include <algorithm>

namespace starling::adapters::embedded {

embedded_log_consumer::embedded_log_consumer(std::shared_ptr<log_engine> engine, consumer_spec spec,
                                             std::string member_key, std::size_t fetch_buffer_bytes)
    : engine_(std::move(engine)), spec_(std::move(spec)), member_key_(std::move(member_key)) {
    buffer_.resize(fetch_buffer_bytes);
}

embedded_log_consumer::~embedded_log_consumer() { close(); }

bool embedded_log_consumer::subscribes_to(std::string_view topic) const {
    return std::find(spec_.topics.begin(), spec_.topics.end(), topic) != spec_.topics.end();
}

embedded_log_consumer::partition_state* embedded_log_consumer::find(const topic_partition& tp) {
    auto it = std::find_if(parts_.begin(), parts_.end(),
                           [&](const partition_state& state) { return state.tp == tp; });
    return it == parts_.end() ? nullptr : &*it;
}

std::int64_t embedded_log_consumer::reset_position(const log_partition& partition) const {
    return spec_.reset == offset_reset::earliest ? partition.log_start_offset()
                                                 : partition.end_offset();
}

void embedded_log_consumer::assign(std::vector<assigned_partition> next) {
    {
        std::lock_guard lock(mutex_);
        std::vector<partition_state> updated;
        updated.reserve(next.size());
        for (auto& entry : next) {
            partition_state* kept = find(entry.tp);
            if (kept != nullptr && kept->partition == entry.partition) {
                updated.push_back(std::move(*kept));  // leaves kept->partition null
                continue;
            }
            const std::int64_t position =
                entry.committed ? *entry.committed : reset_position(*entry.partition);
            entry.partition->add_listener(&waiter_);
            updated.push_back({std::move(entry.tp), std::move(entry.partition), position, false});
        }
        for (const auto& old : parts_) {
            if (old.partition != nullptr) {
                old.partition->remove_listener(&waiter_);
            }
        }
        std::sort(updated.begin(), updated.end(),
                  [](const auto& a, const auto& b) { return a.tp < b.tp; });
        parts_ = std::move(updated);
    }
    waiter_.notify();
}

result<std::vector<log_record>> embedded_log_consumer::fetch() {
    std::vector<log_record> out;
    const std::size_t count = parts_.size();
    for (std::size_t i = 0; i < count && out.size() < spec_.max_poll_records; ++i) {
        partition_state& state = parts_[(rotation_ + i) % count];
        if (state.paused) {
            continue;
        }
        const std::size_t room = spec_.max_poll_records - out.size();
        auto read = state.partition->read(state.position, room, buffer_, out);
        if (read && read->out_of_range) {
            // Kafka's auto.offset.reset: the position fell off the log (retention) or was
            // sought past its end.
            state.position = reset_position(*state.partition);
            read = state.partition->read(state.position, room, buffer_, out);
        }
        if (!read) {
            if (out.empty()) {
                return read.error();
            }
            break;  // hand over what was read; the error comes back on the next poll
        }
        if (!read->out_of_range) {
            state.position = read->next_position;
        }
    }
    if (count > 0) {
        rotation_ = (rotation_ + 1) % count;
    }
    return out;
}

result<std::vector<log_record>> embedded_log_consumer::poll(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        {
            std::lock_guard lock(waiter_.mutex);
            waiter_.signaled = false;
            if (waiter_.woken) {
                waiter_.woken = false;
                return std::vector<log_record>{};
            }
        }
        {
            std::lock_guard lock(mutex_);
            if (closed_) {
                return make_error_code(log_errc::consumer_closed);
            }
            if (engine_->stopped()) {
                return make_error_code(log_errc::stopped);
            }
            auto records = fetch();
            if (!records || !records->empty()) {
                return records;
            }
        }
        std::unique_lock lock(waiter_.mutex);
        if (!waiter_.cv.wait_until(lock, deadline,
                                   [&] { return waiter_.signaled || waiter_.woken; })) {
            return std::vector<log_record>{};
        }
    }
}

status embedded_log_consumer::commit(
    const std::vector<std::pair<topic_partition, std::int64_t>>& next) {
    if (spec_.group_id.empty()) {
        return make_error_code(log_errc::invalid_argument);
    }
    std::lock_guard lock(mutex_);
    if (closed_) {
        return make_error_code(log_errc::consumer_closed);
    }
    if (engine_->stopped()) {
        return make_error_code(log_errc::stopped);
    }
    // A group member may only commit what it owns (Kafka fails such commits too): after a
    // rebalance the partition's new owner has already started from the old commit.
    if (group_managed()) {
        for (const auto& [tp, offset] : next) {
            if (find(tp) == nullptr) {
                return make_error_code(log_errc::not_assigned);
            }
        }
    }
    return engine_->offsets().commit(spec_.group_id, next);
}

status embedded_log_consumer::seek(const topic_partition& tp, std::int64_t offset) {
    if (offset < 0) {
        return make_error_code(log_errc::invalid_argument);
    }
    std::lock_guard lock(mutex_);
    partition_state* state = find(tp);
    if (state == nullptr) {
        return make_error_code(log_errc::not_assigned);
    }
    state->position = offset;
    return {};
}

void embedded_log_consumer::pause(const std::vector<topic_partition>& tps) {
    std::lock_guard lock(mutex_);
    for (const auto& tp : tps) {
        if (partition_state* state = find(tp); state != nullptr) {
            state->paused = true;
        }
    }
}

void embedded_log_consumer::resume(const std::vector<topic_partition>& tps) {
    std::lock_guard lock(mutex_);
    for (const auto& tp : tps) {
        if (partition_state* state = find(tp); state != nullptr) {
            state->paused = false;
        }
    }
}

std::vector<topic_partition> embedded_log_consumer::assignment() const {
    std::lock_guard lock(mutex_);
    std::vector<topic_partition> out;
    out.reserve(parts_.size());
    for (const auto& state : parts_) {
        out.push_back(state.tp);
    }
    return out;
}

result<std::int64_t> embedded_log_consumer::end_offset(const topic_partition& tp) {
    auto partition = engine_->find_partition(tp);
    if (!partition) {
        return partition.error();
    }
    return (*partition)->end_offset();
}

void embedded_log_consumer::wakeup() {
    {
        std::lock_guard lock(waiter_.mutex);
        waiter_.woken = true;
        if (waiter_.ready) {
            waiter_.ready();
        }
    }
    waiter_.cv.notify_one();
}

bool embedded_log_consumer::set_ready_callback(std::function<void()> ready) {
    std::lock_guard lock(waiter_.mutex);
    waiter_.ready = std::move(ready);
    return true;
}

void embedded_log_consumer::close() {
    {
        std::lock_guard lock(mutex_);
        if (closed_) {
            return;
        }
        closed_ = true;
    }
    engine_->leave(this);
    waiter_.notify();
    std::lock_guard lock(waiter_.mutex);
    waiter_.ready = nullptr;
}

}  // namespace starling::adapters::embedded
