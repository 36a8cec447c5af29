#include "broker/group_inbox.h"

#include "broker/broker_core.h"
#include "broker/client_actor.h"

#include "proto/starling.pb.h"
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace starling::broker {

namespace {

// Copies moved per read; each batch is one read, one append and one remove per copy.
constexpr std::size_t move_batch = 100;

// One move in progress: reads a batch, appends it to the member, removes it from the group,
// and goes on until a read comes back short. Owned by the callbacks in flight.
class group_mover : public std::enable_shared_from_this<group_mover> {
  public:
    group_mover(broker_core& core, std::string client_id, stored_subscription sub, std::string key,
                std::function<void(std::size_t)> done)
        : core_(core),
          client_id_(std::move(client_id)),
          sub_(std::move(sub)),
          key_(std::move(key)),
          done_(std::move(done)) {}

    void read_next() {
        core_.inbox().read_pending(
            key_, move_batch, [self = shared_from_this()](result<std::vector<inbox_message>> r) {
                self->on_read(std::move(r));
            });
    }

  private:
    void on_read(result<std::vector<inbox_message>> r) {
        if (!r) {
            finish("read", r.error().message());
            return;
        }
        batch_ = std::move(r.value());
        if (batch_.empty()) {
            finish({}, {});
            return;
        }
        std::vector<inbox_entry> entries;
        entries.reserve(batch_.size());
        for (const auto& m : batch_) {
            entries.push_back(inbox_entry{adapt(m.record), m.expires_at_ms});
        }
        core_.inbox().append(client_id_, std::move(entries),
                             [self = shared_from_this()](result<device_inbox::append_result> a) {
                                 self->on_appended(std::move(a));
                             });
    }

    // The copy as this member's subscription delivers it.
    std::string adapt(const std::string& record) const {
        proto::persisted_msg pm;
        if (!pm.ParseFromString(record)) {
            return record;  // the member's actor logs and drops an unreadable record
        }
        pm.set_qos(std::min<std::uint32_t>(pm.qos(), static_cast<std::uint32_t>(sub_.options.qos)));
        pm.set_retain(pm.retain() && sub_.options.retain_as_published);
        pm.clear_subscription_ids();
        if (sub_.subscription_id) {
            pm.add_subscription_ids(*sub_.subscription_id);
        }
        pm.set_client_id(client_id_);
        return pm.SerializeAsString();
    }

    void on_appended(result<device_inbox::append_result> a) {
        if (!a) {
            finish("append", a.error().message());
            return;
        }
        if (a.value().trimmed != 0) {
            core_.probe().message_dropped(metrics::drop_reason::queue_trim, client_id_, {},
                                          a.value().trimmed);
        }
        moved_ += batch_.size();
        std::vector<std::uint16_t> ids;
        ids.reserve(batch_.size());
        for (const auto& m : batch_) {
            ids.push_back(m.packet_id);
        }
        core_.inbox().remove_batch(key_, std::move(ids), [self = shared_from_this()](status st) {
            if (!st) {
                self->finish("remove", "the moved copies may be delivered again");
            } else if (self->batch_.size() < move_batch) {
                self->finish({}, {});
            } else {
                self->read_next();
            }
        });
    }

    void finish(std::string_view step, std::string_view error) {
        if (!step.empty()) {
            spdlog::warn(
                "client {}: moving the waiting copies of shared group {}/{} failed at "
                "{}: {}",
                client_id_, sub_.share_group, sub_.filter, step, error);
        } else if (moved_ != 0) {
            spdlog::debug("client {}: took {} waiting copies of shared group {}/{}", client_id_,
                          moved_, sub_.share_group, sub_.filter);
        }
        core_.group_moves().end(key_);
        done_(moved_);
    }

    broker_core& core_;
    const std::string client_id_;
    const stored_subscription sub_;
    const std::string key_;
    std::function<void(std::size_t)> done_;
    std::vector<inbox_message> batch_;
    std::size_t moved_ = 0;
};

}  // namespace

std::string group_inbox_key(std::string_view share, std::string_view filter) {
    std::string key;
    key.reserve(share.size() + filter.size() + 9);
    key.push_back('\xff');
    key.append("$share/").append(share).push_back('/');
    key.append(filter);
    return key;
}

bool group_inbox_moves::try_begin(const std::string& key) {
    std::lock_guard lock(mutex_);
    return active_.insert(key).second;
}

void group_inbox_moves::end(const std::string& key) {
    std::lock_guard lock(mutex_);
    active_.erase(key);
}

void move_group_inbox(broker_core& core, const std::string& client_id,
                      const stored_subscription& sub, std::function<void(std::size_t)> done) {
    auto key = group_inbox_key(sub.share_group, sub.filter);
    if (!core.group_moves().try_begin(key)) {
        done(0);
        return;
    }
    std::make_shared<group_mover>(core, client_id, sub, std::move(key), std::move(done))
        ->read_next();
}

}  // namespace starling::broker
