#include "broker/node_drain.h"

#include <spdlog/spdlog.h>

#include <unordered_set>

namespace starling::broker {

std::string_view to_string(node_drain::state s) {
    switch (s) {
        case node_drain::state::serving:
            return "SERVING";
        case node_drain::state::draining:
            return "DRAINING";
        case node_drain::state::drained:
            return "DRAINED";
    }
    return "UNKNOWN";
}

node_drain::node_drain(hooks h) : hooks_(std::move(h)) {}

node_drain::~node_drain() { stop(); }

bool node_drain::start(options opts) {
    std::lock_guard lock(mutex_);
    if (state_ != state::serving || closed_) {
        return false;
    }
    state_ = state::draining;
    started_at_ms_ = hooks_.now_ms();
    rate_ = opts.rate;
    server_reference_ = opts.server_reference;
    thread_ = std::jthread([this, opts](const std::stop_token& stop) { run(stop, opts); });
    return true;
}

void node_drain::stop() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    if (thread_.joinable()) {
        thread_.request_stop();  // wakes the wait below (condition_variable_any + stop_token)
        thread_.join();
    }
}

node_drain::progress node_drain::current() const {
    progress p;
    {
        std::lock_guard lock(mutex_);
        p.current = state_;
        p.started_at_ms = started_at_ms_;
        p.drained_at_ms = drained_at_ms_;
        p.rate = rate_;
        p.server_reference = server_reference_;
    }
    p.disconnected = disconnected_->load(std::memory_order_relaxed);
    if (p.current != state::serving) {
        p.remaining = hooks_.connected().size();
    }
    return p;
}

void node_drain::run(const std::stop_token& stop, options opts) {
    hooks_.stop_accepting();
    spdlog::warn("drain: the node stopped accepting connections and closes its clients' at {}/s",
                 opts.rate);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    const auto slot = std::chrono::duration<double>(1.0 / opts.rate);
    std::uint64_t told = 0;  // the k-th disconnect waits for start + k * slot
    std::unordered_set<std::string> already;
    // Waits until `deadline` or stop; true when stopped.
    auto stopped_by = [&](clock::time_point deadline) {
        std::unique_lock lock(mutex_);
        return wake_.wait_until(lock, stop, deadline, [] { return false; }) ||
               stop.stop_requested();
    };
    while (!stop.stop_requested()) {
        bool any_left = false;
        for (const auto& client_id : hooks_.connected()) {
            if (already.contains(client_id)) {
                any_left = true;  // told, its close is on the way
                continue;
            }
            const auto due = start + std::chrono::duration_cast<clock::duration>(slot * told);
            if (due > clock::now() && stopped_by(due)) {
                return;
            }
            ++told;
            already.insert(client_id);
            any_left = true;
            hooks_.disconnect(client_id, opts.server_reference,
                              [counter = disconnected_](bool closed) {
                                  if (closed) {
                                      counter->fetch_add(1, std::memory_order_relaxed);
                                  }
                              });
        }
        if (!any_left) {
            break;
        }
        if (stopped_by(clock::now() + opts.recheck)) {
            return;
        }
    }
    if (stop.stop_requested()) {
        return;
    }
    std::lock_guard lock(mutex_);
    state_ = state::drained;
    drained_at_ms_ = hooks_.now_ms();
    spdlog::warn("drain: done, {} connections closed", disconnected_->load());
}

}  // namespace starling::broker
