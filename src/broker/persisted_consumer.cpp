#include "broker/persisted_consumer.h"

#include "base/retry_pacer.h"
#include "broker/batch_offsets.h"
#include "broker/broker_core.h"
#include "broker/client_actor.h"
#include "ratelimit/bandwidth_spec.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>

namespace starling::broker {

persisted_consumer::persisted_consumer(broker_core& core)
    : persisted_consumer(
          core, options{.topic = core.topics().msg_persisted(),
                        .group_id = core.topics().group("device-persisted-msg-consumer-group"),
                        .consumers = core.cfg().msg_persisted_consumers,
                        .forward = core.cfg().cluster,
                        .device_limit = true}) {}

persisted_consumer::persisted_consumer(broker_core& core, options opts)
    : core_(core), opts_(std::move(opts)) {}

persisted_consumer::~persisted_consumer() { stop(); }

status persisted_consumer::start() {
    const auto& cfg = core_.cfg();
    if (opts_.device_limit && !cfg.device_persisted_limit.empty() &&
        core_.shared_counters() != nullptr) {
        // TBMQ's Redis key. The timeout bounds how long a batch waits on an unreachable store
        // before its copies are let through.
        device_limit_ = std::make_unique<ratelimit::shared_limit>(
            *core_.shared_counters(), "devicePersistedMsgsLimit::bucket",
            cfg.device_persisted_limit, std::chrono::milliseconds(1000));
        spdlog::info("{}: device-persisted-messages limit {} (cluster-wide)", opts_.topic,
                     ratelimit::to_string(cfg.device_persisted_limit));
    }
    stop_ = std::stop_source();
    running_.store(true);
    for (std::int32_t i = 0; i < opts_.consumers; ++i) {
        consumer_spec spec;
        spec.group_id = opts_.group_id;
        spec.instance_id = cfg.node_id + "-" + opts_.instance_name + "-" + std::to_string(i);
        spec.topics = {opts_.topic};
        spec.reset = offset_reset::earliest;
        spec.max_poll_records = 1000;
        auto consumer = core_.log().create_consumer(spec);
        if (!consumer) {
            stop();
            return consumer.error();
        }
        consumers_.push_back(std::move(consumer.value()));
        threads_.emplace_back(&persisted_consumer::run, this, static_cast<std::size_t>(i),
                              consumers_.back().get());
    }
    return {};
}

void persisted_consumer::stop() {
    if (!running_.exchange(false)) {
        return;
    }
    stop_.request_stop();
    for (auto& c : consumers_) {
        c->wakeup();
    }
    for (auto& t : threads_) {
        t.join();
    }
    threads_.clear();
    for (auto& c : consumers_) {
        c->close();
    }
    consumers_.clear();
}

void persisted_consumer::run(std::size_t index, log_consumer* consumer) {
    // Poll failures and store failures are separate runs: a poll that works between two
    // refused writes must not reset the write backoff.
    const auto name = fmt::format("{} consumer {}", opts_.topic, index);
    base::retry_pacer poll_pacer(name);
    base::retry_pacer write_pacer(name);
    const auto stop = stop_.get_token();
    while (running_.load(std::memory_order_acquire)) {
        auto polled = consumer->poll(core_.cfg().poll_interval);
        if (!polled) {
            if (!poll_pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        poll_pacer.succeeded();
        auto& records = polled.value();
        if (records.empty()) {
            continue;
        }
        if (!write_batch(records)) {
            // The store is down: re-read the batch once it may be back.
            rewind_batch(*consumer, records);
            if (!write_pacer.failed("inbox write", "the device inbox refused the batch", stop)) {
                break;
            }
            continue;
        }
        write_pacer.succeeded();
        if (auto st = commit_batch(*consumer, records); !st) {
            spdlog::warn("{} consumer {}: commit failed: {}", opts_.topic, index,
                         st.error().message());
        }
        records_handled_.fetch_add(records.size(), std::memory_order_acq_rel);
    }
}

namespace {

bool is_inbox_signal(const log_record& rec) {
    return std::any_of(rec.headers.begin(), rec.headers.end(),
                       [](const log_header& h) { return h.key == inbox_signal_header; });
}

// Waits for `n` acknowledgements of writes this thread started (the log acknowledges every
// write, failed or not, so the wait ends); ok when all succeeded.
class ack_join {
  public:
    explicit ack_join(std::size_t n) : outstanding_(n) {}
    void complete(bool ok) {
        std::lock_guard lock(mutex_);
        ok_ = ok_ && ok;
        if (--outstanding_ == 0) {
            cv_.notify_all();
        }
    }
    bool wait() {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return outstanding_ == 0; });
        return ok_;
    }

  private:
    std::mutex mutex_;
    std::condition_variable cv_;
    std::size_t outstanding_;
    bool ok_ = true;
};

// A signal one node already passed on (inbox_signal_forwarded): never passed on again, so two
// nodes with opposite stale views cannot bounce it between them.
bool is_forwarded_signal(const log_record& rec) {
    return std::any_of(rec.headers.begin(), rec.headers.end(), [](const log_header& h) {
        return h.key == inbox_signal_header && h.value == inbox_signal_forwarded;
    });
}

}  // namespace

const log_record* persisted_consumer::over_device_limit(const std::vector<log_record>& records) {
    if (!device_limit_) {
        return nullptr;
    }
    std::vector<const log_record*> copies;
    for (const auto& rec : records) {
        if (!is_inbox_signal(rec)) {
            copies.push_back(&rec);
        }
    }
    const auto g = device_limit_->acquire(static_cast<std::int64_t>(copies.size()));
    if (g.failed_open) {
        core_.probe().rate_limit_store_failed();
        // One warning per outage, not per batch: it is cleared by the next answered call.
        if (!store_failure_logged_.exchange(true)) {
            spdlog::warn(
                "{}: device-persisted-messages limit store unreachable ({}); letting "
                "copies through until it answers",
                opts_.topic, g.error.message());
        }
    } else if (store_failure_logged_.exchange(false)) {
        spdlog::info("{}: device-persisted-messages limit store answers again", opts_.topic);
    }
    const auto granted = static_cast<std::size_t>(std::max<std::int64_t>(g.granted, 0));
    if (granted >= copies.size()) {
        return nullptr;
    }
    const auto over = copies.size() - granted;
    for (std::size_t i = granted; i < copies.size(); ++i) {
        // Key = client id; the topic is inside the record (parsed only on this drop path).
        proto::persisted_msg pm;
        const bool readable = pm.ParseFromString(copies[i]->value);
        core_.probe().message_dropped(metrics::drop_reason::device_persisted_limit, copies[i]->key,
                                      readable ? pm.msg().topic_name() : "");
    }
    spdlog::debug("{}: {} of {} copies over the device-persisted-messages limit {}, dropped",
                  opts_.topic, over, copies.size(), ratelimit::to_string(device_limit_->limits()));
    return copies[granted];
}

bool persisted_consumer::write_batch(std::vector<log_record>& records) {
    // Copies over the cluster-wide device-persisted-messages limit are neither appended nor
    // forwarded; they still commit with the batch (dropped, counted).
    // The batch's last copies are the ones dropped: every copy from the first limited on.
    const log_record* first_limited = over_device_limit(records);
    const auto is_limited = [&](const log_record& rec) {
        return first_limited != nullptr && &rec >= first_limited && !is_inbox_signal(rec);
    };
    // Copies of sessions that live on another node: with node-local inboxes they go there (the
    // owner appends them); with a shared inbox this consumer appends them and only tells the
    // owner (below, after the append). A connected local actor wins over the mirror (its
    // session record may still be in flight).
    const bool shared = core_.cfg().shared_inbox;
    std::vector<std::pair<log_record*, std::string>> remote;  // record, owner node
    if (opts_.forward && !shared) {
        const auto& self = core_.cfg().node_id;
        for (auto& rec : records) {
            if (is_limited(rec)) {
                continue;
            }
            auto session = core_.sessions().find_session(rec.key);
            if (!session || session->node_id.empty() || session->node_id == self) {
                continue;
            }
            auto actor = core_.sessions().find_actor(rec.key);
            if (!actor || !actor->connected()) {
                remote.emplace_back(&rec, session->node_id);
            }
        }
    }
    bool forwarded = shared || forward(remote);
    // Group by client, keeping each client's order (one partition per client id).
    std::map<std::string, std::vector<inbox_entry>> by_client;
    // Signal-only records from another node's consumer: (client id, already forwarded once).
    std::vector<std::pair<std::string, bool>> signalled;
    std::map<topic_partition, std::string> log_names;  // "<topic>/<partition>", once per batch
    for (auto& rec : records) {
        if (is_inbox_signal(rec)) {
            signalled.emplace_back(rec.key, is_forwarded_signal(rec));
            continue;
        }
        if (is_limited(rec)) {
            continue;
        }
        if (!shared && std::any_of(remote.begin(), remote.end(),
                                   [&](const auto& r) { return r.first == &rec; })) {
            continue;  // forwarded above: the owner appends it
        }
        proto::persisted_msg pm;
        if (!pm.ParseFromString(rec.value)) {
            spdlog::error("msg.persisted: unreadable record at offset {}", rec.offset);
            continue;
        }
        std::int64_t expires = 0;
        if (pm.msg().has_properties() && pm.msg().properties().has_expires_at_ms()) {
            expires = pm.msg().properties().expires_at_ms();
        }
        // The log position lets the inbox skip this copy when the batch is read again (a
        // retry after another client's append failed, or a restart before the commit).
        auto& log_name = log_names[{rec.topic, rec.partition}];
        if (log_name.empty()) {
            log_name = fmt::format("{}/{}", rec.topic, rec.partition);
        }
        by_client[rec.key].push_back(inbox_entry{
            std::move(rec.value), expires, log_position{log_name, rec.offset, rec.timestamp_ms}});
    }
    ack_join join(by_client.size());
    std::mutex appended_mutex;
    std::vector<std::string> appended;
    for (auto& [client_id, entries] : by_client) {
        core_.inbox().append(client_id, std::move(entries),
                             [&, id = client_id](result<device_inbox::append_result> r) {
                                 if (r) {
                                     if (r.value().repeats != 0) {
                                         spdlog::debug(
                                             "{}: {} copies for {} were in its inbox "
                                             "already",
                                             opts_.topic, r.value().repeats, id);
                                     }
                                     if (r.value().trimmed != 0) {
                                         // The trimmed messages were the oldest ones, of
                                         // whatever topics: only the client is known.
                                         core_.probe().message_dropped(
                                             metrics::drop_reason::queue_trim, id, {},
                                             r.value().trimmed);
                                     }
                                     std::lock_guard lock(appended_mutex);
                                     appended.push_back(id);
                                 }
                                 join.complete(r.has_value());
                             });
    }
    const bool ok = join.wait();
    // Tell each grown inbox's owner — looked up only now, after the append: a session that
    // moved to another node while the copies were written is signalled there. Were the owner
    // looked up before the append, a move in between left the copies in the inbox with nobody
    // told (this node's actor gone, the new owner's read already done): the new owner's drain
    // stalled until the client reconnected. A view of the owner that is still stale after the
    // append is covered by the node the session left: it signals the new owner once it learns
    // of the move (session_coordinator), which is after this append.
    std::vector<std::pair<std::string, std::string>> to_signal;  // client id, owner node
    for (const auto& id : appended) {
        notify_owner(id, /*may_pass_on=*/shared, to_signal);
    }
    // A signal for a session that left this node (the sender's view was stale) goes on to the
    // session's owner, once.
    for (const auto& [id, already_passed_on] : signalled) {
        notify_owner(id, /*may_pass_on=*/shared && !already_passed_on, to_signal);
    }
    if (!to_signal.empty()) {
        forwarded = signal_owners(to_signal) && forwarded;
    }
    return ok && forwarded;
}

void persisted_consumer::notify_owner(const std::string& client_id, bool may_pass_on,
                                      std::vector<std::pair<std::string, std::string>>& to_signal) {
    auto actor = core_.sessions().find_actor(client_id);
    if (actor && actor->connected()) {
        actor->tell_control(client_msg::inbox_signal{});
        return;
    }
    if (may_pass_on) {
        auto session = core_.sessions().find_session(client_id);
        if (session && !session->node_id.empty() && session->node_id != core_.cfg().node_id) {
            to_signal.emplace_back(client_id, session->node_id);
            return;
        }
    }
    if (actor) {
        actor->tell_control(client_msg::inbox_signal{});  // it delivers once connected
    }
}

bool persisted_consumer::signal_owners(
    const std::vector<std::pair<std::string, std::string>>& client_owner) {
    // The msg.persisted consumers signal what they appended; this node's downlink consumer
    // passes on a signal that reached it after the session left (marked, never passed again).
    const bool passed_on = !opts_.forward;
    ack_join join(client_owner.size());
    for (const auto& [client_id, owner] : client_owner) {
        core_.signal_inbox(owner, client_id, passed_on,
                           [&join](status st) { join.complete(st.has_value()); });
    }
    const bool ok = join.wait();
    if (!ok) {
        spdlog::warn("{}: telling the owner node of a grown inbox failed", opts_.topic);
    }
    return ok;
}

bool persisted_consumer::forward(const std::vector<std::pair<log_record*, std::string>>& records) {
    if (records.empty()) {
        return true;
    }
    ack_join join(records.size());
    for (const auto& [rec, owner] : records) {
        const std::string downlink = core_.topics().downlink_persisted(owner);
        core_.warm_topic(downlink);
        core_.log().produce(downlink, rec->key, rec->value, {},
                            [&join](result<produce_ack> r) { join.complete(r.has_value()); });
    }
    const bool ok = join.wait();
    if (!ok) {
        spdlog::warn("{}: forwarding to the owner node failed", opts_.topic);
    }
    return ok;
}

}  // namespace starling::broker
