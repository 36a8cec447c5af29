#include "integration/executor.h"

#include "base/retry_pacer.h"
#include "broker/lifecycle_events.h"
#include "broker/message.h"
#include "starling/clock.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <future>
#include <map>

namespace starling::integration {
namespace {

constexpr std::chrono::milliseconds poll_timeout{200};
constexpr std::size_t max_poll_records = 50;  // TBMQ's integration consumer default

}  // namespace

executor::executor(definition def, std::unique_ptr<target> to, message_log& log,
                   std::string log_topic, std::string group,
                   metrics::integration_probe::series series)
    : def_(std::move(def)),
      target_(std::move(to)),
      log_(log),
      log_topic_(std::move(log_topic)),
      group_(std::move(group)),
      series_(series) {}

executor::~executor() { stop(); }

status executor::start() {
    if (auto st = target_->start(); !st) {
        return st;
    }
    consumer_spec spec;
    spec.group_id = group_;
    spec.topics = {log_topic_};
    spec.reset = offset_reset::earliest;
    spec.max_poll_records = max_poll_records;
    auto consumer = log_.create_consumer(spec);
    if (!consumer) {
        target_->stop();
        return consumer.error();
    }
    consumer_ = std::move(consumer.value());
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
    return {};
}

void executor::stop() {
    if (!thread_.joinable()) {
        return;
    }
    thread_.request_stop();
    consumer_->wakeup();
    target_->stop();
    thread_.join();
    consumer_->close();
    owner_.store(false);
}

void executor::run(std::stop_token stop) {
    base::retry_pacer poll_pacer("integration " + def_.id);
    spdlog::info("integration {} ('{}'): executor started for {}", def_.id, def_.name,
                 target_->describe());
    while (!stop.stop_requested()) {
        auto polled = consumer_->poll(poll_timeout);
        if (!polled) {
            if (!poll_pacer.failed("poll", polled.error().message(), stop)) {
                break;
            }
            continue;
        }
        poll_pacer.succeeded();
        const bool owner = !consumer_->assignment().empty();
        if (owner_.exchange(owner, std::memory_order_relaxed) != owner) {
            target_->owner_changed(owner);
        }
        polled_.store(true, std::memory_order_relaxed);
        auto& records = polled.value();
        if (records.empty()) {
            update_lag(records);
            continue;
        }
        if (!deliver_batch(records, stop)) {
            break;  // not committed: the next owner (or this node, restarted) sends it again
        }
        std::map<topic_partition, std::int64_t> next;
        for (const auto& r : records) {
            auto& n = next[{r.topic, r.partition}];
            n = std::max(n, r.offset + 1);
        }
        if (auto st = consumer_->commit({next.begin(), next.end()}); !st) {
            spdlog::warn("integration {}: commit failed ({}); the batch may be sent again", def_.id,
                         st.error().message());
        }
        update_lag(records);
    }
    spdlog::info("integration {}: executor stopped", def_.id);
}

namespace {

// One record of msg.ie.<id>: a message, or a client lifecycle event (its header says so).
struct work_item {
    std::string event;  // empty: a message
    broker::app_message msg;
    const log_record* source = nullptr;
};

std::string_view event_of(const log_record& r) {
    for (const auto& h : r.headers) {
        if (h.key == broker::lifecycle_event_header) {
            return h.value;
        }
    }
    return {};
}

}  // namespace

bool executor::deliver_batch(const std::vector<log_record>& records, std::stop_token stop) {
    const auto& pacing = def_.delivery;
    base::retry_pacer retry_pacer("integration " + def_.id, {.first_delay = pacing.retry_first,
                                                             .max_delay = pacing.retry_max});
    std::vector<work_item> items;
    items.reserve(records.size());
    for (const auto& r : records) {
        if (auto event = event_of(r); !event.empty()) {
            items.push_back({std::string(event), {}, &r});
            continue;
        }
        auto msg = broker::parse_message(r.value);
        if (!msg) {
            spdlog::error("integration {}: unreadable record {}/{}@{} skipped", def_.id, r.topic,
                          r.partition, r.offset);
            failed_.fetch_add(1, std::memory_order_relaxed);
            series_.failed.Increment();
            continue;
        }
        items.push_back({{}, std::move(msg.value()), &r});
    }
    const auto attempt = [this](const work_item& item, std::function<void(send_outcome)> done) {
        if (item.event.empty()) {
            target_->send(item.msg, std::move(done));
        } else {
            target_->send_event(item.event, item.source->key, item.source->value, std::move(done));
        }
    };
    // Windows of max_in_flight: first attempts go out together; a failed one is then retried
    // on its own, in order, before the next window.
    for (std::size_t first = 0; first < items.size(); first += pacing.max_in_flight) {
        const std::size_t last = std::min(items.size(), first + pacing.max_in_flight);
        std::vector<std::promise<send_outcome>> promises(last - first);
        for (std::size_t i = first; i < last; ++i) {
            attempt(items[i],
                    [p = &promises[i - first]](send_outcome o) { p->set_value(std::move(o)); });
        }
        std::vector<send_outcome> results;
        for (auto& p : promises) {
            results.push_back(p.get_future().get());
        }
        for (std::size_t i = first; i < last; ++i) {
            send_outcome result = std::move(results[i - first]);
            std::uint32_t retries = 0;
            const log_record& source = *items[i].source;
            while (!result.ok) {
                note_failure(result.error);
                // Stuck on this record: everything from it on waits (what integrationLag shows).
                update_lag(source.topic, source.partition, source.offset);
                if (retries == pacing.max_retries) {
                    spdlog::warn("integration {}: message given up after {} retries: {}", def_.id,
                                 retries, result.error);
                    failed_.fetch_add(1, std::memory_order_relaxed);
                    series_.failed.Increment();
                    break;
                }
                if (!retry_pacer.failed("send", result.error, stop)) {
                    return false;
                }
                ++retries;
                retried_.fetch_add(1, std::memory_order_relaxed);
                series_.retried.Increment();
                std::promise<send_outcome> again;
                auto future = again.get_future();
                attempt(items[i], [&again](send_outcome o) { again.set_value(std::move(o)); });
                result = future.get();
            }
            if (result.ok) {
                retry_pacer.succeeded();
                note_success();
            }
        }
        if (stop.stop_requested()) {
            return false;
        }
    }
    return true;
}

void executor::note_failure(const std::string& error) {
    failing_.store(true, std::memory_order_relaxed);
    series_.up.Set(0);
    std::lock_guard lock(error_mutex_);
    last_error_ = error;
    last_error_ms_ = system_clock::instance().epoch_ms();
}

void executor::note_success() {
    sent_.fetch_add(1, std::memory_order_relaxed);
    series_.sent.Increment();
    if (failing_.exchange(false, std::memory_order_relaxed)) {
        series_.up.Set(1);
        spdlog::info("integration {}: target accepts messages again", def_.id);
    }
}

void executor::update_lag(const std::vector<log_record>& records) {
    // An empty poll read everything there was; otherwise what the log holds past the batch.
    if (records.empty()) {
        lag_.store(0, std::memory_order_relaxed);
        series_.lag.Set(0);
        return;
    }
    const auto& last = records.back();
    update_lag(last.topic, last.partition, last.offset + 1);
}

void executor::update_lag(const std::string& topic, std::int32_t partition,
                          std::int64_t next_unhandled) {
    auto end = consumer_->end_offset({topic, partition});
    if (!end) {
        return;  // keep the last figure
    }
    const std::int64_t lag = std::max<std::int64_t>(0, end.value() - next_unhandled);
    lag_.store(lag, std::memory_order_relaxed);
    series_.lag.Set(static_cast<double>(lag));
}

executor_status executor::status_snapshot() const {
    executor_status s;
    s.polled = polled_.load(std::memory_order_relaxed);
    s.owner = owner_.load(std::memory_order_relaxed);
    s.sent = sent_.load(std::memory_order_relaxed);
    s.failed = failed_.load(std::memory_order_relaxed);
    s.retried = retried_.load(std::memory_order_relaxed);
    s.lag = lag_.load(std::memory_order_relaxed);
    s.failing = failing_.load(std::memory_order_relaxed);
    std::lock_guard lock(error_mutex_);
    s.last_error = last_error_;
    s.last_error_ms = last_error_ms_;
    return s;
}

}  // namespace starling::integration
