#include "broker/node_directory.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <utility>

namespace starling::broker {
namespace {

// A heartbeat older than this many intervals means the node is gone or cut off.
constexpr int missed_heartbeats = 3;

}  // namespace

node_directory::node_directory(message_log& log, std::string topic, std::string group,
                               status_fn self, std::chrono::milliseconds interval,
                               std::function<std::int64_t()> now_ms)
    : log_(log),
      topic_(std::move(topic)),
      self_(std::move(self)),
      interval_(interval),
      now_ms_(std::move(now_ms)),
      follower_(
          log, "node directory", {topic_}, std::move(group), /*retention_ms=*/-1, interval,
          {.tick = [this] { beat(); }, .apply = [this](const log_record& rec) { apply(rec); }}) {}

node_directory::~node_directory() { stop(); }

status node_directory::start() {
    if (auto st = follower_.start(); !st) {
        return st;
    }
    started_.store(true, std::memory_order_release);
    return {};
}

void node_directory::stop() {
    if (!started_.exchange(false, std::memory_order_acq_rel)) {
        return;
    }
    follower_.stop();
    // Leave the list: a tombstone, so the other nodes stop showing this one. Bounded, as the
    // log may be the reason the node stops.
    auto written = std::make_shared<std::promise<void>>();
    auto done = written->get_future();
    const auto self = self_();
    log_.produce(topic_, self.node_id, std::string(), {},
                 [written](result<produce_ack>) { written->set_value(); });
    if (done.wait_for(std::chrono::seconds(2)) != std::future_status::ready) {
        spdlog::warn("node directory: the tombstone of node {} was not acknowledged in 2 s",
                     self.node_id);
    }
}

void node_directory::beat() {
    const auto s = self_();
    proto::node_info info;
    info.set_node_id(s.node_id);
    info.set_version(s.version);
    info.set_started_at_ms(s.started_at_ms);
    info.set_heartbeat_at_ms(now_ms_());
    info.set_connected_sessions(
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, s.connected_sessions)));
    info.set_health(s.health);
    info.set_heartbeat_interval_ms(static_cast<std::uint32_t>(interval_.count()));
    log_.produce(topic_, s.node_id, info.SerializeAsString(), {},
                 [node = s.node_id](result<produce_ack> r) {
                     if (!r) {
                         spdlog::warn("node directory: heartbeat of node {} not written: {}", node,
                                      r.error().message());
                     }
                 });
}

void node_directory::apply(const log_record& rec) {
    std::lock_guard lock(mutex_);
    if (rec.value.empty()) {
        others_.erase(rec.key);
        return;
    }
    proto::node_info info;
    if (!info.ParseFromString(rec.value) || info.node_id() != rec.key) {
        spdlog::warn("node directory: unreadable heartbeat for '{}' at offset {} ignored", rec.key,
                     rec.offset);
        return;
    }
    others_[rec.key] =
        node_status{.node_id = info.node_id(),
                    .version = info.version(),
                    .started_at_ms = info.started_at_ms(),
                    .heartbeat_at_ms = info.heartbeat_at_ms(),
                    .connected_sessions = static_cast<std::int64_t>(info.connected_sessions()),
                    .health = info.health(),
                    .heartbeat_interval = std::chrono::milliseconds(info.heartbeat_interval_ms())};
}

std::vector<node_status> node_directory::nodes() const {
    std::vector<node_status> out;
    auto self = self_();
    self.self = true;
    self.heartbeat_at_ms = now_ms_();
    self.heartbeat_interval = interval_;
    const std::int64_t now = self.heartbeat_at_ms;
    out.push_back(self);
    std::lock_guard lock(mutex_);
    for (const auto& [id, node] : others_) {
        if (id == self.node_id) {
            continue;  // this node's own heartbeats, read back: `self` is fresher
        }
        auto n = node;
        const auto interval = n.heartbeat_interval.count() > 0 ? n.heartbeat_interval : interval_;
        n.reachable = now - n.heartbeat_at_ms <= missed_heartbeats * interval.count();
        out.push_back(std::move(n));
    }
    return out;
}

}  // namespace starling::broker
