#pragma once

// broker_core: the services every client actor and router thread shares on one node — the
// ports (message log, device inbox, metadata store), the subscription trie, retained messages,
// the session registry, timers, the client dispatcher and the metrics probe — plus the few
// operations that several of them perform the same way (publishing an application message,
// writing a session or subscription record).
//
// Lifecycle: built by broker::node (src/broker/node.h) after the ports, destroyed after every
// actor and consumer thread stopped. Concurrency: every method may be called from any thread.

#include "actor/dispatcher.h"
#include "actor/timer_service.h"
#include "auth/authenticator.h"
#include "auth/blocked_clients.h"
#include "base/result.h"
#include "broker/app_shared_topics.h"
#include "broker/consumer_pool.h"
#include "broker/group_inbox.h"
#include "broker/message.h"
#include "broker/retained_store.h"
#include "broker/session_limits.h"
#include "broker/session_registry.h"
#include "broker/settings.h"
#include "broker/stats_history.h"
#include "broker/subscription_mirror.h"
#include "broker/subscription_records.h"
#include "broker/topics.h"
#include "metrics/broker_probe.h"
#include "metrics/log_probe.h"
#include "ratelimit/quota_lease.h"
#include "routing/subscription_trie.h"
#include "starling/clock.h"
#include "starling/device_inbox.h"
#include "starling/message_log.h"
#include "starling/metadata_store.h"
#include "starling/shared_counters.h"

#include "integration/matcher.h"

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace starling::proto {
class client_subscriptions;
}

namespace starling::broker {

class client_actor;
class session_coordinator;
class state_follower;

// What decides whether a client or a message gets in, built by the composition root (src/app)
// before the node and fixed for the node's life. A member left null turns its check off: a node
// built without it (unit tests, the fuzz target) lets every client in, and has no cluster-wide
// limits and no throughput quota.
struct admission_services {
    // Authentication providers (security.mqtt.*) and the blocked-client rules.
    auth::authenticator* authenticator = nullptr;
    const auth::blocked_clients* blocked = nullptr;
    // Cluster-wide rate limits and session counts: Redis in cluster mode, in-process embedded.
    starling::shared_counters* counters = nullptr;
    // mqtt.rate-limits.total; null when disabled.
    ratelimit::quota_lease* quota = nullptr;
};

class broker_core {
  public:
    broker_core(settings cfg, message_log& log, device_inbox& inbox, metadata_store& metadata,
                actor::dispatcher& dispatcher, actor::timer_service& timers,
                metrics::broker_probe& probe, metrics::log_probe& log_probe,
                const starling::clock& clock, admission_services admission);
    // Destroys the cluster-mode parts, then stops the APPLICATION consumer pool, before any
    // other member is destroyed.
    ~broker_core();
    broker_core(const broker_core&) = delete;
    broker_core& operator=(const broker_core&) = delete;

    const settings& cfg() const { return cfg_; }
    message_log& log() { return log_; }
    device_inbox& inbox() { return inbox_; }
    metadata_store& metadata() { return metadata_; }
    actor::dispatcher& dispatcher() { return dispatcher_; }
    actor::timer_service& timers() { return timers_; }
    metrics::broker_probe& probe() { return probe_; }
    metrics::log_probe& log_probe() { return log_probe_; }
    const starling::clock& clock() const { return clock_; }
    routing::subscription_trie& trie() { return trie_; }
    retained_store& retained() { return retained_; }
    session_registry& sessions() { return sessions_; }
    const topic_names& topics() const { return topics_; }
    // msg.app.shared.<filter> topics (APPLICATION shared subscriptions); blocking, see its header.
    app_shared_topics& app_shared() { return app_shared_; }
    // The threads that run every APPLICATION client's log consumers (app_consumer.h).
    consumer_pool& app_consumers() { return app_consumers_; }
    std::int64_t now_ms() const { return clock_.epoch_ms(); }
    // Shared groups whose waiting copies a local member is moving (group_inbox.h).
    group_inbox_moves& group_moves() { return group_moves_; }
    // The enabled integrations' topic filters, kept by integration::integration_service.
    integration::integration_matcher& integrations() { return integrations_; }

    // Before the first write to a topic this node did not create (another node's response,
    // disconnect or downlink topic): learn its metadata now, once per topic. Kafka's client
    // otherwise holds the first record of an unknown topic until its next one-second topic scan
    // — a CONNECT answered through another node's handler waited up to a second for that.
    // Blocking (one metadata round trip, the first time): consumer and handler threads only.
    void warm_topic(const std::string& topic);

    // Tells `owner_node` that `client_id`'s shared inbox (Redis) grew: a signal-only record on
    // its msg.downlink.persisted topic (topics.h inbox_signal_header; `passed_on` marks one a
    // node forwards after the session left it). Blocking the first time per topic
    // (warm_topic): consumer and handler threads only. `done` runs on a log thread.
    void signal_inbox(const std::string& owner_node, const std::string& client_id, bool passed_on,
                      std::function<void(status)> done);

    // The live actor of a client, created when absent.
    std::shared_ptr<client_actor> actor_for(const std::string& client_id);

    // Produces an application message to msg.all (and, when it carries the retain flag, updates
    // msg.retained and the local retained store). `done` runs once every write it needed was
    // acknowledged by the log, or with the first failure; it runs on a log thread.
    void publish(message_ptr msg, std::function<void(status)> done);

    // Deletes the message retained under `topic` for the whole cluster: a tombstone on
    // msg.retained (every node's follower drops it), and the local store forgets it once the
    // log has the record. Unlike an empty retained PUBLISH nothing is sent to subscribers (an
    // operator's delete). done(false) at once when nothing is retained under `topic`; otherwise
    // it runs on a log thread.
    void erase_retained(const std::string& topic, std::function<void(result<bool>)> done);

    // Writes the client's session record to client.session (empty value = tombstone).
    void write_session(const session_record& record, std::function<void(status)> done);
    void delete_session(const std::string& client_id, std::function<void(status)> done);
    // Writes records of the client's subscription set to client.subscriptions, in order, all to
    // the client's partition (subscription_records.h); `done` runs once all were acknowledged,
    // or with the first failure. No records: `done` runs at once.
    void write_subscription_records(const std::string& client_id,
                                    std::vector<subscription_records::record> records,
                                    std::function<void(status)> done);
    // Ends the client's subscription set: a tombstone on its base record, and on the entry
    // records named in `entry_record_keys` (the others become garbage, collected later).
    void clear_subscriptions(const std::string& client_id,
                             std::vector<std::string> entry_record_keys = {});

    // The origin-node header (topics.h) every state record of this node carries.
    std::vector<log_header> origin_headers() const;

    // Admission (admission_services above); each null when the node was built without it.
    auth::authenticator* authenticator() const { return admission_.authenticator; }
    const auth::blocked_clients* blocked() const { return admission_.blocked; }
    starling::shared_counters* shared_counters() const { return admission_.counters; }
    ratelimit::quota_lease* quota() const { return admission_.quota; }
    // mqtt.sessions-limit / mqtt.application-clients-limit over the shared counters.
    broker::session_limits& session_limits() { return session_limits_; }

    // Cluster mode: the node's session coordinator (CONNECT requests, disconnect and session-end
    // events) and its state follower, which mirrors the other nodes' subscriptions. Both are
    // built with the core when settings::cluster is set, and never otherwise, so "null" means
    // "embedded mode" and nothing else. broker::node starts and stops them.
    session_coordinator* coordinator() const { return coordinator_.get(); }
    state_follower* follower() const { return follower_.get(); }

    // The three calls below go to the state follower as the trie's mirror of the other nodes'
    // subscriptions (subscription_mirror.h); embedded mode has no mirror.
    //
    // Runs `done` once this node's mirror holds every client.subscriptions record written so
    // far for the client; at once without a mirror.
    void after_subscriptions_caught_up(const std::string& client_id,
                                       std::function<void()> done) const;
    // An actor that lost its session to another node removed its trie entries: the mirrored
    // entries of the new owner, kept out while the local ones existed, go back.
    void subscriptions_dropped(const std::string& client_id) const;
    // An actor whose session moved to `new_owner` hands its trie entries over instead of
    // removing them: each becomes a mirrored entry of the new owner in one trie operation, so a
    // message this node routes during the move still finds the session. Removing them left a
    // gap until the new owner's subscription record reached this node's mirror: the copies
    // routed meanwhile matched nobody and were lost, although acknowledged. Without a mirror
    // (embedded mode) the entries are removed.
    using handed_subscriptions = subscription_mirror::handed_subscriptions;
    void hand_over_subscriptions(const std::string& client_id, handed_subscriptions subs,
                                 const std::string& new_owner);

    // Refreshes the gauges derived from shared structures (called by the metrics scrape).
    void refresh_gauges();
    // What the statistics series samples now (stats_history.h). Thread-safe.
    stats_reading stats_now();

    // True once stop has begun: new connections are refused.
    bool stopping() const { return stopping_.load(std::memory_order_acquire); }
    void set_stopping() { stopping_.store(true, std::memory_order_release); }

  private:
    // Writes `msg` to msg.retained (an empty payload: a tombstone) and applies it to the local
    // store once acknowledged. `done` runs on a log thread.
    void write_retained(message_ptr msg, std::function<void(status)> done);

    group_inbox_moves group_moves_;
    integration::integration_matcher integrations_;
    settings cfg_;
    message_log& log_;
    device_inbox& inbox_;
    metadata_store& metadata_;
    actor::dispatcher& dispatcher_;
    actor::timer_service& timers_;
    metrics::broker_probe& probe_;
    metrics::log_probe& log_probe_;
    const starling::clock& clock_;
    topic_names topics_;
    // Destroyed after everything that holds an app_consumer; stopped first (~broker_core), so
    // no consumer's turn runs while the members below are destroyed.
    consumer_pool app_consumers_{"app-consumer", cfg_.app_consumer_threads};
    app_shared_topics app_shared_{log_, metadata_, topics_, cfg_};
    routing::subscription_trie trie_;
    retained_store retained_;
    session_registry sessions_;
    std::atomic<bool> stopping_{false};
    // client.subscriptions partition count, read once (write_subscription_records).
    std::atomic<std::int32_t> subscription_partitions_{0};
    std::mutex warm_mutex_;
    std::unordered_set<std::string> warm_topics_;
    const admission_services admission_;
    broker::session_limits session_limits_{cfg_, probe_, admission_.counters};
    // Cluster mode only. Last: they hold references to the members above (~broker_core).
    std::unique_ptr<state_follower> follower_;
    std::unique_ptr<session_coordinator> coordinator_;
};

}  // namespace starling::broker
