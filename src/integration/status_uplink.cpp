#include "integration/status_uplink.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace starling::integration {
namespace {

using json = nlohmann::json;

// A report older than this many of its writer's periods is stale.
constexpr std::int64_t missed_reports = 3;

}  // namespace

std::string encode_status(const reported_status& s) {
    return json{{"reporter", s.reporter},
                {"reportedAt", s.reported_at_ms},
                {"periodMs", s.period_ms},
                {"sent", s.status.sent},
                {"failed", s.status.failed},
                {"retried", s.status.retried},
                {"lag", s.status.lag},
                {"failing", s.status.failing},
                {"lastError", s.status.last_error},
                {"lastErrorTime", s.status.last_error_ms}}
        .dump();
}

std::optional<reported_status> decode_status(const std::string& value) {
    auto j = json::parse(value, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) {
        return std::nullopt;
    }
    try {
        reported_status s;
        s.reporter = j.at("reporter").get<std::string>();
        s.reported_at_ms = j.at("reportedAt").get<std::int64_t>();
        s.period_ms = j.at("periodMs").get<std::int64_t>();
        s.status.polled = true;
        s.status.owner = true;
        s.status.sent = j.at("sent").get<std::uint64_t>();
        s.status.failed = j.at("failed").get<std::uint64_t>();
        s.status.retried = j.at("retried").get<std::uint64_t>();
        s.status.lag = j.at("lag").get<std::int64_t>();
        s.status.failing = j.at("failing").get<bool>();
        s.status.last_error = j.at("lastError").get<std::string>();
        s.status.last_error_ms = j.at("lastErrorTime").get<std::int64_t>();
        if (s.period_ms <= 0) {
            return std::nullopt;
        }
        return s;
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

status_uplink::status_uplink(message_log& log, std::string topic, std::string group,
                             std::string reporter, owned_fn owned, std::chrono::milliseconds period,
                             std::function<std::int64_t()> now_ms)
    : log_(log),
      topic_(std::move(topic)),
      reporter_(std::move(reporter)),
      owned_(std::move(owned)),
      period_(period),
      now_ms_(std::move(now_ms)),
      follower_(
          log, "integration status", {topic_}, std::move(group),
          /*retention_ms=*/7LL * 24 * 3600 * 1000, period,
          {.tick = [this] { report(); }, .apply = [this](const log_record& rec) { apply(rec); }}) {}

status_uplink::~status_uplink() { stop(); }

status status_uplink::start() { return follower_.start(); }

void status_uplink::stop() { follower_.stop(); }

void status_uplink::report() {
    const auto now = now_ms_();
    for (auto& [id, st] : owned_()) {
        reported_status r{.status = std::move(st),
                          .reporter = reporter_,
                          .reported_at_ms = now,
                          .period_ms = period_.count()};
        // The callback may run after this uplink is gone: it holds what it needs.
        log_.produce(topic_, id, encode_status(r), {},
                     [failing = write_failing_, id, topic = topic_](result<produce_ack> done) {
                         if (done) {
                             failing->store(false);
                         } else if (!failing->exchange(true)) {
                             spdlog::warn("integration {}: status report not written to {}: {}", id,
                                          topic, done.error().message());
                         }
                     });
    }
}

void status_uplink::apply(const log_record& rec) {
    std::lock_guard lock(mutex_);
    if (rec.value.empty()) {
        latest_.erase(rec.key);
        return;
    }
    auto s = decode_status(rec.value);
    if (!s) {
        spdlog::warn("integration status: unreadable report for '{}' at offset {} ignored", rec.key,
                     rec.offset);
        return;
    }
    auto& slot = latest_[rec.key];
    if (s->reported_at_ms >= slot.reported_at_ms) {
        slot = std::move(*s);
    }
}

std::optional<reported_status> status_uplink::latest(const std::string& id) const {
    const auto now = now_ms_();
    std::lock_guard lock(mutex_);
    auto it = latest_.find(id);
    if (it == latest_.end() ||
        now - it->second.reported_at_ms > missed_reports * it->second.period_ms) {
        return std::nullopt;
    }
    return it->second;
}

}  // namespace starling::integration
