#include "broker/app_shared_topics.h"

#include <spdlog/spdlog.h>

#include <future>
#include <memory>
#include <optional>
#include <system_error>

namespace starling::broker {

namespace {
// A lookup that does not answer in this time is treated as a failure: the caller retries.
constexpr std::chrono::seconds metadata_timeout{10};
}  // namespace

result<std::string> app_shared_topics::ensure(std::string_view filter) {
    {
        std::lock_guard lock(mutex_);
        if (auto it = ready_.find(filter); it != ready_.end()) {
            return it->second;
        }
    }
    std::string topic = topics_.msg_app_shared(filter);
    using lookup = result<std::optional<application_shared_subscription>>;
    auto promise = std::make_shared<std::promise<lookup>>();
    auto future = promise->get_future();
    metadata_.find_application_shared_subscription(
        std::string(filter), [promise](lookup r) { promise->set_value(std::move(r)); });
    if (future.wait_for(metadata_timeout) != std::future_status::ready) {
        spdlog::warn("APPLICATION shared topic {}: the metadata store did not answer", topic);
        return std::make_error_code(std::errc::timed_out);
    }
    auto entity = future.get();
    if (!entity) {
        spdlog::warn("APPLICATION shared topic {}: entity lookup failed: {}", topic,
                     entity.error().message());
        return entity.error();
    }
    const std::int32_t partitions =
        entity.value() ? entity.value()->partitions : cfg_.app_shared_partitions;
    const topic_spec spec{topic, partitions, cfg_.app_shared_retention_ms,
                          cfg_.app_msg_retention_bytes, false};
    if (auto st = log_.create_topic(spec); !st) {
        spdlog::warn("APPLICATION shared topic {} not created: {}", topic, st.error().message());
        return st.error();
    }
    spdlog::info("APPLICATION shared topic {} ready for filter '{}' ({} partitions{})", topic,
                 filter, partitions, entity.value() ? ", from its entity" : ", default");
    std::lock_guard lock(mutex_);
    ready_.emplace(std::string(filter), topic);
    return topic;
}

void app_shared_topics::forget_for_test() {
    std::lock_guard lock(mutex_);
    ready_.clear();
}

}  // namespace starling::broker
