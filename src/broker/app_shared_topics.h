#pragma once

// app_shared_topics: makes the msg.app.shared.<filter> topic of an APPLICATION shared
// subscription exist before anyone writes or reads it (docs/architecture.md §5).
//
// Partitions come from the operator's application_shared_subscription entity for the filter
// (metadata store) when there is one, else from
// queue.kafka.application-persisted-msg.shared-topic.partitions. A topic that exists keeps its
// real partition count (create_topic is idempotent). A filter made ready once is remembered with
// its topic name, so the router pays the name mapping (a SHA-256 for hashed names), the metadata
// lookup and the admin call once per filter and process.
//
// Lifecycle: owned by broker_core. Concurrency: ensure() is called from the msg.all consumer
// threads and the APPLICATION consumer threads; it blocks (metadata lookup, topic admin), so it
// must never run on an I/O thread or inside an actor turn. The set of ready filters is guarded
// by a mutex; two threads racing on one new filter both create it (idempotent).

#include "base/result.h"
#include "broker/settings.h"
#include "broker/topics.h"
#include "starling/message_log.h"
#include "starling/metadata_store.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace starling::broker {

class app_shared_topics {
  public:
    app_shared_topics(message_log& log, metadata_store& metadata, const topic_names& topics,
                      const settings& cfg)
        : log_(log), metadata_(metadata), topics_(topics), cfg_(cfg) {}

    // The topic of `filter`, created if needed. An error when the metadata store cannot say
    // whether an entity exists (a topic created with the default count could never get the
    // operator's partitions back) or the log refused the admin call: the caller retries.
    result<std::string> ensure(std::string_view filter);

    // Forgets every ready filter (a test deleted topics underneath).
    void forget_for_test();

  private:
    message_log& log_;
    metadata_store& metadata_;
    const topic_names& topics_;
    const settings& cfg_;
    // Transparent hashing: the router looks a filter up by string_view without allocating.
    struct filter_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const {
            return std::hash<std::string_view>{}(s);
        }
    };
    std::mutex mutex_;
    std::unordered_map<std::string, std::string, filter_hash, std::equal_to<>> ready_;  // → topic
};

}  // namespace starling::broker
