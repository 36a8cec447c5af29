#include "adapters/kafka/kafka_log_consumer.h"

#include "adapters/kafka/kafka_client.h"
#include "adapters/kafka/kafka_errc.h"

#include <librdkafka/rdkafka.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace starling::adapters::kafka {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int query_timeout_ms = 10000;

// rd_kafka_header_get_all() hands out the name as a C string, so a name with a NUL byte would
// be cut. librdkafka stores each header as name, NUL, value, NUL in one allocation (since
// 0.11.4, rd_kafka_header_add), so the value pointer tells the real name length; the checks
// fall back to strlen() wherever that layout does not hold (null values included).
std::string header_name(const char* name, const void* value) {
    const std::size_t shown = std::strlen(name);
    if (value == nullptr) {
        return {name, shown};
    }
    const auto* v = static_cast<const char*>(value);
    if (v <= name + shown) {
        return {name, shown};
    }
    const auto full = static_cast<std::size_t>(v - name - 1);
    if (full > shown && full - shown < 4096 && name[full] == '\0') {
        return {name, full};
    }
    return {name, shown};
}

log_record to_record(const rd_kafka_message_t& msg) {
    log_record record;
    record.topic = rd_kafka_topic_name(msg.rkt);
    record.partition = msg.partition;
    record.offset = msg.offset;
    rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    record.timestamp_ms = rd_kafka_message_timestamp(&msg, &type);
    if (msg.key != nullptr) {
        record.key.assign(static_cast<const char*>(msg.key), msg.key_len);
    }
    if (msg.payload != nullptr) {
        record.value.assign(static_cast<const char*>(msg.payload), msg.len);
    }
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(&msg, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* value = nullptr;
        size_t size = 0;
        for (size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
            log_header h;
            h.key = header_name(name, value);
            if (value != nullptr) {
                h.value.assign(static_cast<const char*>(value), size);
            }
            record.headers.push_back(std::move(h));
        }
    }
    return record;
}

void on_consumer_error(rd_kafka_t* /*rk*/, int err, const char* reason, void* /*opaque*/) {
    spdlog::warn("kafka consumer: {}: {}", rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err)),
                 reason);
}

// Shared between the consumer and its rebalance callback (served inside poll() and close()).
struct group_progress {
    // Set once the group handed this member its first assignment, possibly empty; read by close().
    std::atomic<bool> assigned_once{false};

    std::mutex mutex;
    // Partitions revoked since poll() last looked: records of theirs that poll() holds but has
    // not returned yet are dropped, since the next owner reads them from the committed offset
    // (returning them too would deliver them twice).
    std::vector<topic_partition> revoked;
    // Commits the group refused (REBALANCE_IN_PROGRESS while it rebalances), per partition still
    // owned: made again in the revoke callback, before the next owner reads the group's commit.
    std::map<topic_partition, std::int64_t> uncommitted;
};

// Commits, before a revoke takes effect, what commit() could not commit for those partitions.
void commit_before_revoke(rd_kafka_t* rk, group_progress& progress,
                          const rd_kafka_topic_partition_list_t* partitions) {
    std::lock_guard lock(progress.mutex);
    partition_list_ptr pending(rd_kafka_topic_partition_list_new(partitions->cnt));
    for (int i = 0; i < partitions->cnt; ++i) {
        topic_partition tp{partitions->elems[i].topic, partitions->elems[i].partition};
        if (auto it = progress.uncommitted.find(tp); it != progress.uncommitted.end()) {
            rd_kafka_topic_partition_list_add(pending.get(), tp.topic.c_str(), tp.partition)
                ->offset = it->second;
            progress.uncommitted.erase(it);
        }
        progress.revoked.push_back(std::move(tp));
    }
    if (pending->cnt > 0) {
        const auto code = rd_kafka_commit(rk, pending.get(), 0 /* synchronous */);
        if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
            spdlog::warn(
                "kafka consumer: commit before revoke failed ({}): the next owner reads "
                "some records again",
                rd_kafka_err2str(code));
        }
    }
}

// The members use the eager protocol (kafka_log_config.cpp says why): a revoke takes every
// partition at the start of a rebalance, while this member's generation is still valid, so the
// commits made here succeed and the next owner starts where this one stopped. The cooperative
// branch serves an operator who overrides the strategy (an assign adds partitions, a revoke
// removes only those named).
void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                  rd_kafka_topic_partition_list_t* partitions, void* opaque) {
    auto* progress = static_cast<group_progress*>(opaque);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && progress != nullptr) {
        progress->assigned_once.store(true, std::memory_order_release);
    }
    if (err != RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && progress != nullptr) {
        commit_before_revoke(rk, *progress, partitions);
    }
    const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    rd_kafka_error_t* error = nullptr;
    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (cooperative) {
            error = rd_kafka_incremental_assign(rk, partitions);
        } else {
            code = rd_kafka_assign(rk, partitions);
        }
    } else {
        if (err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
            spdlog::warn("kafka consumer: rebalance error {}", rd_kafka_err2str(err));
        }
        if (cooperative) {
            error = rd_kafka_incremental_unassign(rk, partitions);
        } else {
            code = rd_kafka_assign(rk, nullptr);
        }
    }
    if (error != nullptr) {
        spdlog::error("kafka consumer: rebalance: {}", rd_kafka_error_string(error));
        rd_kafka_error_destroy(error);
    } else if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::error("kafka consumer: rebalance: {}", rd_kafka_err2str(code));
    }
}

}  // namespace

struct kafka_log_consumer::impl {
    group_progress progress;  // before client: the callbacks use it until the client is gone
    handle_ptr client;
    queue_ptr queue;
    // set_ready_callback(): called by librdkafka (queue event callback, under the queue's lock)
    // when an element lands on the empty consumer queue. Changed only while the event is off.
    std::function<void()> ready;
    std::size_t max_records = 500;
    std::atomic<bool> woken{false};
    bool closed = false;
    bool manual = false;  // assign() of named partitions, no group management
};

result<std::unique_ptr<log_consumer>> make_consumer(const kafka_log_config& config,
                                                    const consumer_spec& spec) {
    if (spec.group_id.empty() || spec.topics.empty() == spec.assignment.empty() ||
        spec.max_poll_records == 0) {
        spdlog::error(
            "kafka consumer: a consumer needs a group id and either topics or an "
            "assignment (group \"{}\")",
            spec.group_id);
        return make_kafka_error(RD_KAFKA_RESP_ERR__INVALID_ARG);
    }
    std::string why;
    auto conf = make_conf(consumer_properties(config, spec), &why);
    if (!conf) {
        spdlog::error("kafka consumer (group {}): property {}", spec.group_id, why);
        return conf.error();
    }
    auto state = std::make_unique<kafka_log_consumer::impl>();
    rd_kafka_conf_set_opaque(conf->get(), &state->progress);
    rd_kafka_conf_set_error_cb(conf->get(), &on_consumer_error);
    route_logs(conf->get());
    if (!spec.topics.empty()) {
        rd_kafka_conf_set_rebalance_cb(conf->get(), &on_rebalance);
    }
    auto client = make_handle(RD_KAFKA_CONSUMER, std::move(*conf), &why);
    if (!client) {
        spdlog::error("kafka consumer (group {}): {}", spec.group_id, why);
        return client.error();
    }
    state->client = std::move(*client);
    state->max_records = spec.max_poll_records;
    state->manual = spec.topics.empty();
    // One queue for messages, rebalances and errors, so poll() serves them all.
    (void)rd_kafka_poll_set_consumer(state->client.get());
    state->queue.reset(rd_kafka_queue_get_consumer(state->client.get()));

    rd_kafka_resp_err_t code = RD_KAFKA_RESP_ERR_NO_ERROR;
    if (!spec.topics.empty()) {
        partition_list_ptr topics(
            rd_kafka_topic_partition_list_new(static_cast<int>(spec.topics.size())));
        for (const auto& topic : spec.topics) {
            rd_kafka_topic_partition_list_add(topics.get(), topic.c_str(), RD_KAFKA_PARTITION_UA);
        }
        code = rd_kafka_subscribe(state->client.get(), topics.get());
    } else {
        auto list = to_list(spec.assignment);
        for (int i = 0; i < list->cnt; ++i) {
            list->elems[i].offset = RD_KAFKA_OFFSET_STORED;  // the group's commit, else reset
        }
        code = rd_kafka_assign(state->client.get(), list.get());
    }
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::error("kafka consumer (group {}): {}: {}", spec.group_id,
                      spec.topics.empty() ? "assign" : "subscribe", rd_kafka_err2str(code));
        return make_kafka_error(code);
    }
    return std::unique_ptr<log_consumer>(new kafka_log_consumer(std::move(state)));
}

kafka_log_consumer::kafka_log_consumer(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

kafka_log_consumer::~kafka_log_consumer() {
    close();
    impl_->queue.reset();
    impl_->client.reset();
}

result<std::vector<log_record>> kafka_log_consumer::poll(std::chrono::milliseconds timeout) {
    if (impl_->closed) {
        return make_kafka_error(RD_KAFKA_RESP_ERR__DESTROY);
    }
    std::vector<log_record> out;
    const auto deadline = clock_type::now() + timeout;
    while (out.size() < impl_->max_records) {
        if (impl_->woken.exchange(false)) {
            break;
        }
        int wait_ms = 0;
        if (out.empty()) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
            wait_ms = static_cast<int>(std::clamp<std::int64_t>(left.count(), 0, 1000000));
        }
        rd_kafka_message_t* msg = rd_kafka_consumer_poll(impl_->client.get(), wait_ms);
        drop_revoked(out);
        if (msg == nullptr) {
            if (!out.empty() || clock_type::now() >= deadline) {
                break;
            }
            continue;  // a rebalance or a yield; the woken flag decides
        }
        if (msg->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            out.push_back(to_record(*msg));
            rd_kafka_message_destroy(msg);
            continue;
        }
        const auto err = msg->err;
        if (err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            // Consumer errors are informational in librdkafka (it retries), e.g. a subscribed
            // topic that does not exist yet; only a fatal one ends the consumer.
            spdlog::debug("kafka consumer: {}", rd_kafka_message_errstr(msg));
        }
        rd_kafka_message_destroy(msg);
        if (err == RD_KAFKA_RESP_ERR__FATAL) {
            return make_kafka_error(err);
        }
        if (!out.empty() || clock_type::now() >= deadline) {
            break;
        }
    }
    return out;
}

status kafka_log_consumer::commit(
    const std::vector<std::pair<topic_partition, std::int64_t>>& next) {
    if (impl_->closed) {
        return make_kafka_error(RD_KAFKA_RESP_ERR__DESTROY);
    }
    if (next.empty()) {
        return {};
    }
    partition_list_ptr list(rd_kafka_topic_partition_list_new(static_cast<int>(next.size())));
    for (const auto& [tp, offset] : next) {
        rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset =
            offset;
    }
    auto code = rd_kafka_commit(impl_->client.get(), list.get(), 0 /* synchronous */);
    for (int i = 0; code == RD_KAFKA_RESP_ERR_NO_ERROR && i < list->cnt; ++i) {
        code = list->elems[i].err;
    }
    {
        std::lock_guard lock(impl_->progress.mutex);
        for (const auto& [tp, offset] : next) {
            if (code == RD_KAFKA_RESP_ERR_NO_ERROR || impl_->manual) {
                impl_->progress.uncommitted.erase(tp);
            } else {
                impl_->progress.uncommitted[tp] = offset;
            }
        }
    }
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::warn("kafka consumer: commit failed: {}", rd_kafka_err2str(code));
        return make_kafka_error(code);
    }
    return {};
}

void kafka_log_consumer::drop_revoked(std::vector<log_record>& records) {
    std::vector<topic_partition> revoked;
    {
        std::lock_guard lock(impl_->progress.mutex);
        if (impl_->progress.revoked.empty()) {
            return;
        }
        revoked.swap(impl_->progress.revoked);
    }
    std::sort(revoked.begin(), revoked.end());
    std::erase_if(records, [&](const log_record& r) {
        return std::binary_search(revoked.begin(), revoked.end(),
                                  topic_partition{r.topic, r.partition});
    });
}

status kafka_log_consumer::seek(const topic_partition& tp, std::int64_t offset) {
    if (impl_->closed) {
        return make_kafka_error(RD_KAFKA_RESP_ERR__DESTROY);
    }
    // librdkafka applies an assignment on its own thread shortly after assign() / the
    // rebalance callback returns; until then a seek fails with __STATE ("erroneous state").
    // The port allows seek right after the assignment shows, so retry for a bounded moment.
    const auto until = clock_type::now() + std::chrono::seconds(5);
    for (;;) {
        partition_list_ptr list(rd_kafka_topic_partition_list_new(1));
        rd_kafka_topic_partition_list_add(list.get(), tp.topic.c_str(), tp.partition)->offset =
            offset;
        rd_kafka_error_t* error =
            rd_kafka_seek_partitions(impl_->client.get(), list.get(), query_timeout_ms);
        rd_kafka_resp_err_t code = list->elems[0].err;
        std::string text = code != RD_KAFKA_RESP_ERR_NO_ERROR ? rd_kafka_err2str(code) : "";
        if (error != nullptr) {
            code = rd_kafka_error_code(error);
            text = rd_kafka_error_string(error);
            rd_kafka_error_destroy(error);
        }
        if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
            return {};
        }
        if (code == RD_KAFKA_RESP_ERR__STATE && impl_->manual) {
            // A manually assigned partition whose fetcher has not started yet (a topic just
            // created, a leader not yet elected) cannot be seeked; assigning it again at the
            // offset starts it there, without touching the other partitions' positions.
            partition_list_ptr one(rd_kafka_topic_partition_list_new(1));
            rd_kafka_topic_partition_list_add(one.get(), tp.topic.c_str(), tp.partition)->offset =
                offset;
            rd_kafka_error_t* unassign =
                rd_kafka_incremental_unassign(impl_->client.get(), one.get());
            if (unassign != nullptr) {
                rd_kafka_error_destroy(unassign);
            }
            rd_kafka_error_t* assign = rd_kafka_incremental_assign(impl_->client.get(), one.get());
            if (assign == nullptr) {
                return {};
            }
            code = rd_kafka_error_code(assign);
            text = rd_kafka_error_string(assign);
            rd_kafka_error_destroy(assign);
        }
        // __OUTDATED: the partition's fetch state changed under the seek (the assignment was
        // still being applied); seen once as a node failing to start. Retried like __STATE.
        // __TIMED_OUT ("Timed out waiting for 1 remaining partition seek(s)"): librdkafka gave
        // up on a seek of a partition whose fetcher was still starting, half a second into a
        // node's start-up on a loaded machine — also seen failing a start. Retried the same way.
        const bool transient = code == RD_KAFKA_RESP_ERR__STATE ||
                               code == RD_KAFKA_RESP_ERR__OUTDATED ||
                               code == RD_KAFKA_RESP_ERR__TIMED_OUT;
        if (!transient || clock_type::now() >= until) {
            spdlog::warn("kafka consumer: seek {}[{}] to {}: {}", tp.topic, tp.partition, offset,
                         text);
            return make_kafka_error(code);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void kafka_log_consumer::pause(const std::vector<topic_partition>& tps) {
    if (impl_->closed || tps.empty()) {
        return;
    }
    auto list = to_list(tps);
    (void)rd_kafka_pause_partitions(impl_->client.get(), list.get());
}

void kafka_log_consumer::resume(const std::vector<topic_partition>& tps) {
    if (impl_->closed || tps.empty()) {
        return;
    }
    auto list = to_list(tps);
    (void)rd_kafka_resume_partitions(impl_->client.get(), list.get());
}

std::vector<topic_partition> kafka_log_consumer::assignment() const {
    if (impl_->closed) {
        return {};
    }
    rd_kafka_topic_partition_list_t* raw = nullptr;
    if (rd_kafka_assignment(impl_->client.get(), &raw) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return {};
    }
    partition_list_ptr list(raw);
    auto out = from_list(list.get());
    std::sort(out.begin(), out.end());
    return out;
}

result<std::int64_t> kafka_log_consumer::end_offset(const topic_partition& tp) {
    if (impl_->closed) {
        return make_kafka_error(RD_KAFKA_RESP_ERR__DESTROY);
    }
    // Right after a topic is created, its leader is in the metadata before the broker serves as
    // leader (NOT_LEADER_FOR_PARTITION / LEADER_NOT_AVAILABLE for a moment); Java's
    // endOffsets() retries these too, within the same kind of bound.
    const auto until = clock_type::now() + std::chrono::milliseconds(query_timeout_ms);
    for (;;) {
        std::int64_t low = 0;
        std::int64_t high = 0;
        const auto code = rd_kafka_query_watermark_offsets(
            impl_->client.get(), tp.topic.c_str(), tp.partition, &low, &high, query_timeout_ms);
        if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
            return high;
        }
        const bool transient = code == RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION ||
                               code == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE;
        if (!transient || clock_type::now() >= until) {
            spdlog::warn("kafka consumer: end offset of {}[{}]: {}", tp.topic, tp.partition,
                         rd_kafka_err2name(code));
            return make_kafka_error(code);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // leader election
    }
}

void kafka_log_consumer::wakeup() {
    impl_->woken.store(true);
    if (impl_->queue) {
        rd_kafka_queue_yield(impl_->queue.get());
    }
}

namespace {

void on_queue_event(rd_kafka_t* /*client*/, void* opaque) {
    (*static_cast<std::function<void()>*>(opaque))();
}

}  // namespace

bool kafka_log_consumer::set_ready_callback(std::function<void()> ready) {
    if (!impl_->queue) {
        return false;
    }
    // Turning the event off takes the queue's lock, which a running callback holds: once it
    // returns, no call is in progress and the function can be replaced.
    rd_kafka_queue_cb_event_enable(impl_->queue.get(), nullptr, nullptr);
    impl_->ready = std::move(ready);
    if (impl_->ready) {
        rd_kafka_queue_cb_event_enable(impl_->queue.get(), &on_queue_event, &impl_->ready);
    }
    return true;
}

void kafka_log_consumer::close() {
    if (impl_->closed) {
        return;
    }
    impl_->closed = true;
    if (impl_->queue && impl_->ready) {
        rd_kafka_queue_cb_event_enable(impl_->queue.get(), nullptr, nullptr);
        impl_->ready = nullptr;
    }
    // Leaves the group (a dynamic member's partitions move at once) and serves the final
    // revoke on this thread.
    const auto code = rd_kafka_consumer_close(impl_->client.get());
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::warn("kafka consumer: close: {}", rd_kafka_err2str(code));
    }
    if (!impl_->manual && !impl_->progress.assigned_once.load(std::memory_order_acquire)) {
        // librdkafka before 2.3.0 (Debian 12 ships 2.0.2) aborts in rd_kafka_destroy() of a
        // cooperative-sticky member that never received an assignment
        // (rd_kafka_sticky_assignor_state_destroy: Assertion `assignor_state' failed;
        // librdkafka issue 4312). Such a member has left the group above; its handle is kept,
        // reachable, until the process exits instead of being destroyed. Rare (a consumer
        // stopped before its group settled) and bounded by the consumers created.
        static auto* kept = new std::vector<handle_ptr>();
        static std::mutex kept_mutex;
        std::lock_guard lock(kept_mutex);
        kept->push_back(std::move(impl_->client));
        impl_->queue.reset();
    }
}

}  // namespace starling::adapters::kafka
