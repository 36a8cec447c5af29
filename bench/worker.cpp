#include "bench/worker.h"

#include "bench/payload.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <utility>

namespace starling::bench {

namespace asio = boost::asio;

namespace {

// A paced publisher never wakes more often than this: below it, messages go out in bursts of
// whatever is due, which costs fewer wake-ups and syscalls than one timer per message.
constexpr std::uint64_t min_wake_gap_ns = 200'000;
// A QoS 0 publisher running flat out stops filling its write buffer at this size and resumes
// when it drains below: the socket, not the memory of this process, sets its pace.
constexpr std::size_t qos0_high_mark = 64 * 1024;
// At most this many messages per publisher per wake-up (a late wake-up catches up in bursts).
constexpr std::uint64_t max_burst = 1000;
constexpr std::size_t max_errors_kept = 8;
constexpr std::uint64_t tick_ns = 250'000'000;

asio::steady_timer::time_point at(std::uint64_t ns) {
    return asio::steady_timer::time_point(std::chrono::nanoseconds(ns));
}

}  // namespace

void worker_counters::add(const worker_counters& o) {
    launched += o.launched;
    connected += o.connected;
    connect_failed += o.connect_failed;
    connecting += o.connecting;
    subscribed += o.subscribed;
    subscribe_failed += o.subscribe_failed;
    closed_unexpectedly += o.closed_unexpectedly;
    closed += o.closed;
    last_connected_ns = std::max(last_connected_ns, o.last_connected_ns);
    sessions_present += o.sessions_present;
    sent += o.sent;
    sent_in_window += o.sent_in_window;
    acked += o.acked;
    publish_failed += o.publish_failed;
    inflight += o.inflight;
    window_waits += o.window_waits;
    received += o.received;
    unique += o.unique;
    received_in_window += o.received_in_window;
    stale += o.stale;
    foreign += o.foreign;
    publishers_active += o.publishers_active;
    domains_complete += o.domains_complete;
}

// Sockets and timers of a worker are only ever touched by its own thread, so the reactor's
// per-descriptor locking is skipped; call() still posts from the runner's thread, which the
// scheduler's (kept) lock makes safe.
worker::worker(unsigned index)
    : index_(index),
      io_(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO),
      connect_timer_(io_),
      tick_timer_(io_) {}

worker::~worker() { stop(); }

void worker::start() {
    guard_.emplace(io_.get_executor());
    thread_ = std::thread([this] { io_.run(); });
    call([this] { tick(); });
}

void worker::stop() {
    if (!thread_.joinable()) {
        return;
    }
    call([this] {
        next_launch_ = slots_.size();  // launch nothing more
        connect_timer_.cancel();
        tick_timer_.cancel();
        for (auto& p : publishers_) {
            if (p.timer) {
                p.timer->cancel();
            }
        }
        for (auto& s : slots_) {
            s.closing = true;
            s.conn->abort("benchmark finished");
        }
    });
    guard_.reset();
    io_.stop();
    thread_.join();
    // Clients (and their sockets and timers) go before the io_context they were made with.
    publishers_.clear();
    slots_.clear();
    retired_.clear();
}

std::uint32_t worker::add_domain(domain_spec spec) {
    domain_state d;
    d.spec = std::move(spec);
    domains_.push_back(std::move(d));
    return static_cast<std::uint32_t>(domains_.size() - 1);
}

void worker::add_publisher(publisher_spec spec) {
    slot s;
    s.kind = role::publisher;
    s.ref = static_cast<std::uint32_t>(publishers_.size());
    s.conn = std::make_unique<client>(io_, *this, static_cast<std::uint32_t>(slots_.size()),
                                      spec.settings);
    publisher_state p;
    p.conn = s.conn.get();
    p.spec = std::move(spec);
    p.timer = std::make_unique<asio::steady_timer>(io_);
    publishers_.push_back(std::move(p));
    slots_.push_back(std::move(s));
}

void worker::add_subscriber(subscriber_spec spec) {
    slot s;
    s.kind = role::subscriber;
    s.ref = static_cast<std::uint32_t>(subscribers_.size());
    s.conn = std::make_unique<client>(io_, *this, static_cast<std::uint32_t>(slots_.size()),
                                      spec.settings);
    subscribers_.push_back(std::move(spec));
    slots_.push_back(std::move(s));
}

void worker::add_plain(client_settings settings) {
    slot s;
    s.kind = role::plain;
    s.conn = std::make_unique<client>(io_, *this, static_cast<std::uint32_t>(slots_.size()),
                                      std::move(settings));
    slots_.push_back(std::move(s));
}

// --- connecting ---

void worker::start_connecting(asio::ip::tcp::endpoint server,
                              std::vector<asio::ip::address> local_addresses, double rate,
                              std::size_t max_pending, std::uint64_t timeout_ns) {
    server_ = server;
    local_addresses_ = std::move(local_addresses);
    connect_rate_ = rate;
    max_pending_ = std::max<std::size_t>(1, max_pending);
    connect_timeout_ns_ = timeout_ns;
    connect_start_ns_ = monotonic_ns();
    launched_since_start_ = 0;
    pump_connects();
}

void worker::pump_connects() {
    const std::uint64_t now = monotonic_ns();
    std::uint64_t allowed = UINT64_MAX;
    if (connect_rate_ > 0) {
        const auto due = static_cast<std::uint64_t>(static_cast<double>(now - connect_start_ns_) *
                                                    connect_rate_ / 1e9) +
                         1;
        allowed = due > launched_since_start_ ? due - launched_since_start_ : 0;
    }
    while (next_launch_ < slots_.size() && counters_.connecting < max_pending_ && allowed > 0) {
        slot& s = slots_[next_launch_++];
        if (s.launched) {
            continue;
        }
        launch(s);
        --allowed;
    }
    if (next_launch_ < slots_.size() && connect_rate_ > 0 && !connect_timer_armed_ &&
        counters_.connecting < max_pending_) {
        const auto next = connect_start_ns_ +
                          static_cast<std::uint64_t>(static_cast<double>(launched_since_start_) *
                                                     1e9 / connect_rate_);
        connect_timer_armed_ = true;
        connect_timer_.expires_at(at(std::max(next, now + min_wake_gap_ns)));
        connect_timer_.async_wait([this](const boost::system::error_code& ec) {
            connect_timer_armed_ = false;
            if (!ec) {
                pump_connects();
            }
        });
    }
}

void worker::launch(slot& s) {
    s.launched = true;
    ++counters_.launched;
    ++counters_.connecting;
    ++launched_since_start_;
    std::optional<asio::ip::address> local;
    if (!local_addresses_.empty()) {
        local = local_addresses_[s.conn->index() % local_addresses_.size()];
    }
    s.conn->connect(server_, local);
}

void worker::on_connected(client& c, const mqtt::connack& ack) {
    const std::uint64_t now = monotonic_ns();
    slots_[c.index()].got_connack = true;
    --counters_.connecting;
    ++counters_.connected;
    if (ack.session_present) {
        ++counters_.sessions_present;
    }
    counters_.last_connected_ns = std::max(counters_.last_connected_ns, now);
    connect_.record(now - c.connect_started_ns());
    pump_connects();
}

void worker::start_subscribing() {
    for (auto& s : slots_) {
        if (s.kind != role::subscriber || !s.conn->connected()) {
            continue;
        }
        const auto& spec = subscribers_[s.ref];
        auto& domain = domains_[spec.domain];
        s.conn->subscribe(spec.subscriptions);
        if (domain.subscribe_ns == 0) {
            domain.subscribe_ns = s.conn->subscribe_sent_ns();
        }
    }
}

void worker::on_subscribed(client& c, const mqtt::suback& ack) {
    suback_.record(monotonic_ns() - c.subscribe_sent_ns());
    for (auto code : ack.reason_codes) {
        if (static_cast<std::uint8_t>(code) >= 0x80) {
            ++counters_.subscribe_failed;
            note_error("SUBSCRIBE refused: " + std::string(mqtt::to_string(code)));
            return;
        }
    }
    ++counters_.subscribed;
}

// --- publishing ---

void worker::begin_step(const step_plan& plan) {
    plan_ = plan;
    payload_.assign(std::max(plan.payload_size, header_size), 'x');
    // Connection counters carry over; everything about messages starts again.
    worker_counters fresh;
    fresh.launched = counters_.launched;
    fresh.connected = counters_.connected;
    fresh.connect_failed = counters_.connect_failed;
    fresh.connecting = counters_.connecting;
    fresh.subscribed = counters_.subscribed;
    fresh.subscribe_failed = counters_.subscribe_failed;
    fresh.closed_unexpectedly = counters_.closed_unexpectedly;
    fresh.closed = counters_.closed;
    fresh.last_connected_ns = counters_.last_connected_ns;
    fresh.sessions_present = counters_.sessions_present;
    counters_ = fresh;
    e2e_.reset();
    puback_.reset();
    for (auto& d : domains_) {
        d.streams.clear();
        d.received = 0;
        d.unique = 0;
        d.expect_total = 0;
        d.first_ns = 0;
        d.last_ns = 0;
        d.complete_ns = 0;
    }
    const double interval_ns = plan.rate_per_publisher > 0 ? 1e9 / plan.rate_per_publisher : 0;
    for (auto& p : publishers_) {
        p.seq = 0;
        p.blocked = false;
        p.active = p.conn->connected();
        p.first_ns = plan.start_ns + static_cast<std::uint64_t>(p.spec.phase * interval_ns);
        if (p.active) {
            arm(p, p.first_ns);
        }
    }
}

void worker::arm(publisher_state& p, std::uint64_t at_ns) {
    if (p.timer_armed) {
        return;
    }
    p.timer_armed = true;
    p.timer->expires_at(at(at_ns));
    p.timer->async_wait([this, &p](const boost::system::error_code& ec) {
        p.timer_armed = false;
        if (!ec) {
            pump_publisher(p);
        }
    });
}

bool worker::send_one(publisher_state& p, std::uint64_t now) {
    payload_header header{.run_id = plan_.run_id,
                          .step = plan_.step,
                          .publisher = p.spec.id,
                          .sequence = p.seq,
                          .send_ns = now};
    write_header(payload_.data(), header);
    std::string_view topic = p.spec.topic;
    if (plan_.topic_per_message) {
        topic_scratch_.assign(p.spec.topic);
        topic_scratch_.push_back('/');
        topic_scratch_.append(std::to_string(p.seq));
        topic = topic_scratch_;
    }
    if (!p.conn->publish(topic, p.spec.qos, plan_.retain, payload_, now)) {
        return false;
    }
    ++p.seq;
    ++counters_.sent;
    if (now >= plan_.measure_ns && now < plan_.end_ns) {
        ++counters_.sent_in_window;
    }
    return true;
}

void worker::pump_publisher(publisher_state& p) {
    if (!p.active) {
        return;
    }
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t limit = plan_.messages_per_publisher;
    if (!p.conn->connected() || (plan_.end_ns != 0 && now >= plan_.end_ns) ||
        (limit != 0 && p.seq >= limit)) {
        p.active = false;
        return;
    }
    if (now < p.first_ns) {
        arm(p, p.first_ns);
        return;
    }
    const bool qos0 = p.spec.qos == mqtt::qos::at_most_once;
    std::uint64_t due = 0;
    if (plan_.rate_per_publisher > 0) {
        due = static_cast<std::uint64_t>(static_cast<double>(now - p.first_ns) *
                                         plan_.rate_per_publisher / 1e9) +
              1;
        due = std::min(due, p.seq + max_burst);
    } else {
        due = p.seq + (qos0 ? 256 : p.conn->window());
    }
    if (limit != 0) {
        due = std::min(due, limit);
    }
    while (p.seq < due) {
        if (qos0 && p.conn->pending_write_bytes() >= qos0_high_mark) {
            p.blocked = true;
            p.conn->want_writable(qos0_high_mark / 2);
            return;
        }
        if (!send_one(p, now)) {
            // Window full: the next acknowledgement resumes this publisher.
            p.blocked = true;
            ++counters_.window_waits;
            return;
        }
    }
    if (limit != 0 && p.seq >= limit) {
        p.active = false;
        return;
    }
    if (plan_.rate_per_publisher > 0) {
        const auto next =
            p.first_ns + static_cast<std::uint64_t>(std::ceil(static_cast<double>(p.seq) * 1e9 /
                                                              plan_.rate_per_publisher));
        arm(p, std::max(next, now + min_wake_gap_ns));
    } else if (!p.pump_posted) {
        // Flat out: yield to the other clients of this thread, then continue.
        p.pump_posted = true;
        asio::post(io_, [this, &p] {
            p.pump_posted = false;
            pump_publisher(p);
        });
    }
}

void worker::on_publish_done(client& c, std::uint64_t send_ns, bool ok) {
    const std::uint64_t now = monotonic_ns();
    ++counters_.acked;
    if (!ok) {
        ++counters_.publish_failed;
    }
    if (send_ns >= plan_.measure_ns && send_ns < plan_.end_ns) {
        puback_.record(now - send_ns);
    }
    slot& s = slots_[c.index()];
    if (s.kind == role::publisher) {
        auto& p = publishers_[s.ref];
        if (p.blocked) {
            p.blocked = false;
            pump_publisher(p);
        }
    }
}

void worker::on_writable(client& c) {
    slot& s = slots_[c.index()];
    if (s.kind == role::publisher) {
        auto& p = publishers_[s.ref];
        if (p.blocked) {
            p.blocked = false;
            pump_publisher(p);
        }
    }
}

// --- receiving ---

void worker::on_message(client& c, const mqtt::publish& message) {
    const std::uint64_t now = monotonic_ns();
    const slot& s = slots_[c.index()];
    if (s.kind != role::subscriber) {
        ++counters_.foreign;
        return;
    }
    auto header = read_header(message.payload.data(), message.payload.size());
    if (!header) {
        ++counters_.foreign;
        return;
    }
    if (plan_.strict && (header->run_id != plan_.run_id || header->step != plan_.step)) {
        ++counters_.stale;
        return;
    }
    auto& domain = domains_[subscribers_[s.ref].domain];
    const std::uint64_t key =
        plan_.strict ? header->publisher
                     : (static_cast<std::uint64_t>(header->run_id) << 32) | header->publisher;
    auto it = domain.streams.find(key);
    if (it == domain.streams.end()) {
        it = domain.streams.emplace(key, sequence_tracker(plan_.strict ? 0 : header->sequence))
                 .first;
    }
    const arrival a = it->second.on_message(header->sequence);
    ++counters_.received;
    ++domain.received;
    if (domain.first_ns == 0) {
        domain.first_ns = now;
    }
    if (a != arrival::duplicate) {
        ++counters_.unique;
        ++domain.unique;
        domain.last_ns = now;
        if (domain.expect_total != 0 && domain.unique == domain.expect_total) {
            domain.complete_ns = now;
            ++counters_.domains_complete;
        }
    }
    if (now >= plan_.measure_ns && now < plan_.end_ns) {
        ++counters_.received_in_window;
    }
    if (header->send_ns >= plan_.measure_ns && header->send_ns < plan_.end_ns &&
        now >= header->send_ns) {
        e2e_.record(now - header->send_ns);
    }
}

void worker::set_expectations(const std::vector<std::uint64_t>& sent) {
    for (auto& d : domains_) {
        d.expect_total = 0;
        if (!d.spec.expected) {
            continue;
        }
        for (auto id : *d.spec.expected) {
            d.expect_total += id < sent.size() ? sent[id] : 0;
        }
        if (d.expect_total != 0 && d.unique >= d.expect_total && d.complete_ns == 0) {
            d.complete_ns = monotonic_ns();
            ++counters_.domains_complete;
        }
    }
}

// --- closing ---

void worker::on_closed(client& c, std::error_code, std::string_view why) {
    slot& s = slots_[c.index()];
    ++counters_.closed;
    if (s.launched && !s.got_connack) {
        // Closed before CONNACK: a failed connect.
        --counters_.connecting;
        ++counters_.connect_failed;
        note_error(std::string(why));
        pump_connects();
        return;
    }
    if (!s.closing) {
        ++counters_.closed_unexpectedly;
        note_error(std::string(why));
    }
    if (s.kind == role::publisher) {
        publishers_[s.ref].active = false;
    }
}

void worker::disconnect_all() {
    next_launch_ = slots_.size();  // launch nothing more
    for (auto& s : slots_) {
        s.closing = true;
        s.conn->disconnect();
    }
}

void worker::disconnect_subscribers() {
    for (auto& s : slots_) {
        if (s.kind == role::subscriber) {
            s.closing = true;
            s.conn->disconnect();
        }
    }
}

std::size_t worker::open_subscribers() const {
    std::size_t open = 0;
    for (const auto& s : slots_) {
        if (s.kind == role::subscriber && s.conn->current_state() != client::state::closed &&
            s.conn->current_state() != client::state::idle) {
            ++open;
        }
    }
    return open;
}

void worker::abort_subscribers(std::string_view why) {
    for (auto& s : slots_) {
        if (s.kind == role::subscriber) {
            s.closing = true;
            s.conn->abort(why);
        }
    }
}

void worker::renew_subscribers() {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
        slot& s = slots_[i];
        if (s.kind != role::subscriber) {
            continue;
        }
        // The old client is closed (the runner waited, or aborted it): no more events from it,
        // but its cancelled handlers may still be queued, so it lives on in retired_.
        auto fresh = std::make_unique<client>(io_, *this, static_cast<std::uint32_t>(i),
                                              subscribers_[s.ref].settings);
        retired_.push_back(std::exchange(s.conn, std::move(fresh)));
        s.launched = false;
        s.got_connack = false;
        s.closing = false;
    }
    next_launch_ = 0;  // start_connecting() launches every slot not launched yet
}

std::size_t worker::open_clients() const {
    std::size_t open = 0;
    for (const auto& s : slots_) {
        if (s.conn->current_state() != client::state::closed &&
            s.conn->current_state() != client::state::idle) {
            ++open;
        }
    }
    return open;
}

// --- reporting ---

std::vector<std::pair<std::uint32_t, std::uint64_t>> worker::sent_counts() const {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> out;
    out.reserve(publishers_.size());
    for (const auto& p : publishers_) {
        out.emplace_back(p.spec.id, p.seq);
    }
    return out;
}

worker_counters worker::progress() const {
    worker_counters c = counters_;
    c.inflight = 0;
    c.publishers_active = 0;
    for (const auto& p : publishers_) {
        c.inflight += p.conn->inflight();
        c.publishers_active += p.active ? 1 : 0;
    }
    return c;
}

worker_report worker::report(const std::vector<std::uint64_t>& sent) const {
    worker_report r;
    r.counters = progress();
    r.e2e = e2e_;
    r.puback = puback_;
    r.connect = connect_;
    r.suback = suback_;
    r.errors = errors_;
    r.domains.reserve(domains_.size());
    for (const auto& d : domains_) {
        domain_summary sum;
        sum.name = d.spec.name;
        sum.received = d.received;
        sum.unique = d.unique;
        sum.subscribe_ns = d.subscribe_ns;
        sum.first_ns = d.first_ns;
        sum.last_ns = d.last_ns;
        sum.complete_ns = d.complete_ns;
        for (const auto& [key, tracker] : d.streams) {
            sum.duplicates += tracker.duplicates();
            sum.out_of_order += tracker.out_of_order();
        }
        if (d.spec.expected) {
            const auto& expected = *d.spec.expected;
            for (auto id : expected) {
                const std::uint64_t s = id < sent.size() ? sent[id] : 0;
                sum.expected += s;
                auto it = d.streams.find(id);
                sum.lost += it == d.streams.end() ? s : it->second.lost(s);
            }
            for (const auto& [key, tracker] : d.streams) {
                if (!std::binary_search(expected.begin(), expected.end(),
                                        static_cast<std::uint32_t>(key))) {
                    sum.unexpected += tracker.received();
                }
            }
        } else {
            // Standalone subscriber: only gaps below the highest number seen are known losses.
            for (const auto& [key, tracker] : d.streams) {
                sum.lost += tracker.missing();
                sum.expected += tracker.next_expected();
            }
        }
        r.domains.push_back(std::move(sum));
    }
    return r;
}

void worker::reset_connection_histograms() {
    connect_.reset();
    suback_.reset();
}

// --- housekeeping ---

void worker::tick() {
    const std::uint64_t now = monotonic_ns();
    for (auto& s : slots_) {
        client& c = *s.conn;
        if (c.current_state() == client::state::connecting &&
            now - c.connect_started_ns() > connect_timeout_ns_) {
            c.abort("connect timed out");
            continue;
        }
        const std::uint64_t keep_alive_ns =
            static_cast<std::uint64_t>(c.settings().keep_alive) * 1'000'000'000ULL;
        if (c.connected() && keep_alive_ns != 0 && now - c.last_send_ns() > keep_alive_ns / 2) {
            c.ping();
        }
    }
    tick_timer_.expires_at(at(now + tick_ns));
    tick_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec) {
            tick();
        }
    });
}

void worker::note_error(std::string why) {
    if (errors_.size() < max_errors_kept) {
        errors_.push_back(std::move(why));
    }
}

}  // namespace starling::bench
