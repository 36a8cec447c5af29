#include "adapters/kafka/kafka_message_log.h"

#include "adapters/kafka/kafka_client.h"
#include "adapters/kafka/kafka_errc.h"
#include "adapters/kafka/kafka_log_consumer.h"

#include <librdkafka/rdkafka.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace starling::adapters::kafka {

namespace {

using clock_type = std::chrono::steady_clock;

int to_timeout_ms(std::chrono::milliseconds d) {
    return static_cast<int>(std::clamp<std::int64_t>(d.count(), 0, 24LL * 3600 * 1000));
}

std::error_code timed_out() { return make_kafka_error(RD_KAFKA_RESP_ERR__TIMED_OUT); }

}  // namespace

struct kafka_message_log::impl {
    kafka_log_config config;
    handle_ptr producer;
    queue_ptr main_queue;
    std::thread delivery_thread;
    std::thread::id delivery_thread_id;
    std::atomic<bool> stopping{false};
    bool stopped = false;  // guarded by stop_mutex
    std::mutex stop_mutex;

    // Outstanding produce() calls (librdkafka's and the immediate failures below) and the
    // immediate failures waiting for the delivery thread.
    std::mutex mutex;
    std::condition_variable idle;
    std::uint64_t in_flight = 0;
    std::deque<std::pair<std::unique_ptr<produce_callback>, std::error_code>> failures;

    std::atomic<bool> brokers_down{false};

    void complete(produce_callback& done, result<produce_ack> outcome) {
        done(outcome);
        std::lock_guard lock(mutex);
        --in_flight;
        if (in_flight == 0) {
            idle.notify_all();
        }
    }

    void drain_failures() {
        for (;;) {
            std::pair<std::unique_ptr<produce_callback>, std::error_code> next;
            {
                std::lock_guard lock(mutex);
                if (failures.empty()) {
                    return;
                }
                next = std::move(failures.front());
                failures.pop_front();
            }
            complete(*next.first, next.second);
        }
    }

    void run() {
        while (!stopping.load(std::memory_order_acquire)) {
            drain_failures();
            rd_kafka_poll(producer.get(), 100);
        }
        drain_failures();
    }

    bool wait_idle(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex);
        return idle.wait_for(lock, timeout, [&] { return in_flight == 0; });
    }

    // Metadata of one topic through the producer (which also refreshes the producer's cache,
    // so a deleted topic stops being produced to). Partition count, or the topic's error.
    result<std::int32_t> topic_partitions(const std::string& name,
                                          std::chrono::milliseconds timeout) {
        rd_kafka_topic_t* rkt = rd_kafka_topic_new(producer.get(), name.c_str(), nullptr);
        if (rkt == nullptr) {
            return make_kafka_error(rd_kafka_last_error());
        }
        const rd_kafka_metadata_t* md = nullptr;
        const rd_kafka_resp_err_t err =
            rd_kafka_metadata(producer.get(), 0, rkt, &md, to_timeout_ms(timeout));
        rd_kafka_topic_destroy(rkt);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            return make_kafka_error(err);
        }
        result<std::int32_t> out = make_kafka_error(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
        for (int i = 0; i < md->topic_cnt; ++i) {
            const auto& t = md->topics[i];
            if (name != t.topic) {
                continue;
            }
            if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                out = make_kafka_error(t.err);
            } else if (t.partition_cnt == 0) {
                out = make_kafka_error(RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
            } else {
                out = t.partition_cnt;
                for (int p = 0; p < t.partition_cnt; ++p) {
                    if (t.partitions[p].leader < 0) {
                        out = make_kafka_error(RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE);
                    }
                }
            }
        }
        rd_kafka_metadata_destroy(md);
        return out;
    }

    // Polls metadata until the topic is there with a leader for every partition (present) or
    // gone (!present): CreateTopics and DeleteTopics return before every broker knows.
    status await_topic(const std::string& name, bool present, clock_type::time_point until) {
        for (;;) {
            auto count = topic_partitions(name, std::chrono::milliseconds(2000));
            if (present && count) {
                return {};
            }
            if (!present && !count && count.error() == std::errc::no_such_file_or_directory) {
                return {};
            }
            if (clock_type::now() >= until) {
                return count ? status(timed_out()) : status(count.error());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));  // broker propagation
        }
    }

    struct options_deleter {
        void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
    };
    struct admin_call {
        queue_ptr queue;
        std::unique_ptr<rd_kafka_AdminOptions_t, options_deleter> options;
    };

    admin_call new_admin_call(rd_kafka_admin_op_t op) {
        admin_call call;
        call.queue.reset(rd_kafka_queue_new(producer.get()));
        call.options.reset(rd_kafka_AdminOptions_new(producer.get(), op));
        std::array<char, 256> err{};
        const int t = to_timeout_ms(config.admin_timeout);
        (void)rd_kafka_AdminOptions_set_request_timeout(call.options.get(), t, err.data(),
                                                        err.size());
        (void)rd_kafka_AdminOptions_set_operation_timeout(call.options.get(), t, err.data(),
                                                          err.size());
        return call;
    }

    static void on_delivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* msg, void* opaque) {
        auto* self = static_cast<impl*>(opaque);
        std::unique_ptr<produce_callback> done(static_cast<produce_callback*>(msg->_private));
        if (done == nullptr) {
            return;
        }
        if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
            self->complete(*done, make_kafka_error(msg->err));
            return;
        }
        self->brokers_down.store(false, std::memory_order_relaxed);
        self->complete(*done, produce_ack{msg->partition, msg->offset});
    }

    static void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
        auto* self = static_cast<impl*>(opaque);
        const auto code = static_cast<rd_kafka_resp_err_t>(err);
        if (code == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
            if (!self->brokers_down.exchange(true)) {
                spdlog::error("kafka: all brokers down ({}); the message log is unhealthy", reason);
            }
            return;
        }
        if (code == RD_KAFKA_RESP_ERR__FATAL) {
            std::array<char, 512> text{};
            const auto fatal = rd_kafka_fatal_error(rk, text.data(), text.size());
            spdlog::error("kafka: fatal producer error {}: {}", rd_kafka_err2name(fatal),
                          text.data());
            self->brokers_down.store(true);
            return;
        }
        spdlog::warn("kafka: {}: {}", rd_kafka_err2name(code), reason);
    }

    // Statistics are the one signal librdkafka gives that a broker is reachable again without
    // a delivery (an idle node would otherwise stay "down" until its next PUBLISH).
    static int on_stats(rd_kafka_t* /*rk*/, char* json, size_t len, void* opaque) {
        auto* self = static_cast<impl*>(opaque);
        if (!self->brokers_down.load(std::memory_order_relaxed)) {
            return 0;
        }
        auto stats = nlohmann::json::parse(json, json + len, nullptr, false);
        if (stats.is_discarded() || !stats.contains("brokers")) {
            return 0;
        }
        const auto& brokers = stats["brokers"];
        if (!brokers.is_object()) {
            return 0;
        }
        for (const auto& [name, broker] : brokers.items()) {
            // Checked field by field: json::value() throws on a type mismatch, and nothing may
            // throw through librdkafka's C frames.
            const auto nodeid = broker.find("nodeid");
            const auto state = broker.find("state");
            if (nodeid == broker.end() || state == broker.end() || !nodeid->is_number_integer() ||
                !state->is_string()) {
                continue;
            }
            if (nodeid->get<std::int64_t>() >= 0 && state->get<std::string>() == "UP") {
                spdlog::info("kafka: broker {} is up again; the message log is healthy", name);
                self->brokers_down.store(false);
                break;
            }
        }
        return 0;  // librdkafka frees the json
    }
};

result<std::unique_ptr<kafka_message_log>> kafka_message_log::open(kafka_log_config config) {
    std::string why;
    if (auto valid = validate(config, &why); !valid) {
        spdlog::error("kafka message log: invalid configuration: {}", why);
        return valid.error();
    }
    auto state = std::make_unique<impl>();
    state->config = std::move(config);
    auto conf = make_conf(producer_properties(state->config), &why);
    if (!conf) {
        spdlog::error("kafka message log: producer property {}", why);
        return conf.error();
    }
    rd_kafka_conf_set_opaque(conf->get(), state.get());
    rd_kafka_conf_set_dr_msg_cb(conf->get(), &impl::on_delivery);
    rd_kafka_conf_set_error_cb(conf->get(), &impl::on_error);
    rd_kafka_conf_set_stats_cb(conf->get(), &impl::on_stats);
    route_logs(conf->get());
    auto producer = make_handle(RD_KAFKA_PRODUCER, std::move(*conf), &why);
    if (!producer) {
        spdlog::error("kafka message log: cannot create the producer: {}", why);
        return producer.error();
    }
    state->producer = std::move(*producer);
    state->main_queue.reset(rd_kafka_queue_get_main(state->producer.get()));
    impl* raw = state.get();
    state->delivery_thread = std::thread([raw] { raw->run(); });
    state->delivery_thread_id = state->delivery_thread.get_id();
    spdlog::info("kafka message log: bootstrap {}, acks={}, idempotence={}, linger {} ms",
                 state->config.bootstrap_servers, state->config.acks, idempotent(state->config),
                 state->config.linger.count());
    return std::unique_ptr<kafka_message_log>(new kafka_message_log(std::move(state)));
}

kafka_message_log::kafka_message_log(std::unique_ptr<impl> state) : impl_(std::move(state)) {}

kafka_message_log::~kafka_message_log() { stop(); }

void kafka_message_log::stop() {
    std::lock_guard stop_lock(impl_->stop_mutex);
    if (impl_->stopped) {
        return;
    }
    impl_->stopped = true;
    // Give outstanding produces their normal chance (they end within delivery_timeout anyway),
    // then purge the rest: their callbacks report a failure rather than never running.
    if (!impl_->wait_idle(impl_->config.delivery_timeout)) {
        rd_kafka_purge(impl_->producer.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        (void)impl_->wait_idle(std::chrono::seconds(5));
    }
    impl_->stopping.store(true, std::memory_order_release);
    rd_kafka_queue_yield(impl_->main_queue.get());
    impl_->delivery_thread.join();
    impl_->main_queue.reset();
    impl_->producer.reset();
}

const kafka_log_config& kafka_message_log::config() const { return impl_->config; }

void kafka_message_log::produce(std::string_view topic, std::string key, std::string value,
                                std::vector<log_header> headers, produce_callback done,
                                std::int32_t partition) {
    if (impl_->stopping.load(std::memory_order_acquire)) {
        done(make_kafka_error(RD_KAFKA_RESP_ERR__DESTROY));
        return;
    }
    auto callback = std::make_unique<produce_callback>(std::move(done));
    {
        std::lock_guard lock(impl_->mutex);
        ++impl_->in_flight;
    }
    const std::string topic_name(topic);
    rd_kafka_headers_t* hdrs = nullptr;
    if (!headers.empty()) {
        hdrs = rd_kafka_headers_new(headers.size());
        for (const auto& h : headers) {
            rd_kafka_header_add(hdrs, h.key.data(), static_cast<ssize_t>(h.key.size()),
                                h.value.data(), static_cast<ssize_t>(h.value.size()));
        }
    }
    std::vector<rd_kafka_vu_t> vus;
    vus.reserve(7);
    auto add = [&vus](rd_kafka_vtype_t type) -> rd_kafka_vu_t& {
        vus.push_back({});
        vus.back().vtype = type;
        return vus.back();
    };
    add(RD_KAFKA_VTYPE_TOPIC).u.cstr = topic_name.c_str();
    add(RD_KAFKA_VTYPE_PARTITION).u.i32 = partition < 0 ? RD_KAFKA_PARTITION_UA : partition;
    add(RD_KAFKA_VTYPE_MSGFLAGS).u.i = RD_KAFKA_MSG_F_COPY;
    auto& k = add(RD_KAFKA_VTYPE_KEY);
    k.u.mem.ptr = key.data();
    k.u.mem.size = key.size();
    // An empty value is a tombstone (the port's rule): Kafka's tombstone is a null value.
    auto& v = add(RD_KAFKA_VTYPE_VALUE);
    v.u.mem.ptr = value.empty() ? nullptr : value.data();
    v.u.mem.size = value.size();
    if (hdrs != nullptr) {
        add(RD_KAFKA_VTYPE_HEADERS).u.headers = hdrs;
    }
    add(RD_KAFKA_VTYPE_OPAQUE).u.ptr = callback.get();
    rd_kafka_error_t* error = rd_kafka_produceva(impl_->producer.get(), vus.data(), vus.size());
    if (error == nullptr) {
        (void)callback.release();  // owned by the delivery report now
        return;
    }
    const auto code = rd_kafka_error_code(error);
    rd_kafka_error_destroy(error);
    if (hdrs != nullptr) {
        rd_kafka_headers_destroy(hdrs);  // ownership passes to librdkafka only on success
    }
    {
        std::lock_guard lock(impl_->mutex);
        impl_->failures.emplace_back(std::move(callback), make_kafka_error(code));
    }
    rd_kafka_queue_yield(impl_->main_queue.get());
}

status kafka_message_log::flush(std::chrono::milliseconds timeout) {
    if (std::this_thread::get_id() == impl_->delivery_thread_id) {
        // Waiting here would wait for this very thread to run the callbacks.
        return std::make_error_code(std::errc::resource_deadlock_would_occur);
    }
    if (!impl_->wait_idle(timeout)) {
        return timed_out();
    }
    return {};
}

bool kafka_message_log::healthy() const {
    return !impl_->brokers_down.load(std::memory_order_relaxed);
}

status kafka_message_log::create_topic(const topic_spec& spec) {
    if (spec.name.empty() || spec.partitions < 1) {
        return make_kafka_error(RD_KAFKA_RESP_ERR__INVALID_ARG);
    }
    const auto until = clock_type::now() + impl_->config.admin_timeout;
    std::array<char, 512> err{};
    rd_kafka_NewTopic_t* topic =
        rd_kafka_NewTopic_new(spec.name.c_str(), spec.partitions, impl_->config.replication_factor,
                              err.data(), err.size());
    if (topic == nullptr) {
        spdlog::error("kafka: create topic {}: {}", spec.name, err.data());
        return make_kafka_error(RD_KAFKA_RESP_ERR__INVALID_ARG);
    }
    for (const auto& [key, value] : topic_configs(impl_->config, spec)) {
        (void)rd_kafka_NewTopic_set_config(topic, key.c_str(), value.c_str());
    }
    auto call = impl_->new_admin_call(RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_CreateTopics(impl_->producer.get(), &topic, 1, call.options.get(), call.queue.get());
    rd_kafka_NewTopic_destroy(topic);
    // The admin timeout is enforced by librdkafka; the margin only covers its own latency.
    rd_kafka_event_t* ev = rd_kafka_queue_poll(
        call.queue.get(), to_timeout_ms(impl_->config.admin_timeout + std::chrono::seconds(5)));
    if (ev == nullptr) {
        spdlog::error("kafka: create topic {}: no answer within {} ms", spec.name,
                      impl_->config.admin_timeout.count());
        return timed_out();
    }
    rd_kafka_resp_err_t code = rd_kafka_event_error(ev);
    std::string reason = code != RD_KAFKA_RESP_ERR_NO_ERROR ? rd_kafka_event_error_string(ev) : "";
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        size_t count = 0;
        const rd_kafka_topic_result_t** results =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &count);
        if (count == 1) {
            code = rd_kafka_topic_result_error(results[0]);
            const char* text = rd_kafka_topic_result_error_string(results[0]);
            reason = text != nullptr ? text : "";
        }
    }
    rd_kafka_event_destroy(ev);
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR && code != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        spdlog::error("kafka: create topic {} ({} partitions, replication factor {}): {}: {}",
                      spec.name, spec.partitions, impl_->config.replication_factor,
                      rd_kafka_err2name(code), reason);
        return make_kafka_error(code);
    }
    auto ready = impl_->await_topic(spec.name, true, until);
    if (!ready) {
        spdlog::error("kafka: topic {} created but not visible in metadata: {}", spec.name,
                      ready.error().message());
    }
    return ready;
}

status kafka_message_log::delete_topic(std::string_view name) {
    const std::string topic_name(name);
    const auto until = clock_type::now() + impl_->config.admin_timeout;
    rd_kafka_DeleteTopic_t* topic = rd_kafka_DeleteTopic_new(topic_name.c_str());
    auto call = impl_->new_admin_call(RD_KAFKA_ADMIN_OP_DELETETOPICS);
    rd_kafka_DeleteTopics(impl_->producer.get(), &topic, 1, call.options.get(), call.queue.get());
    rd_kafka_DeleteTopic_destroy(topic);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(
        call.queue.get(), to_timeout_ms(impl_->config.admin_timeout + std::chrono::seconds(5)));
    if (ev == nullptr) {
        return timed_out();
    }
    rd_kafka_resp_err_t code = rd_kafka_event_error(ev);
    if (code == RD_KAFKA_RESP_ERR_NO_ERROR) {
        size_t count = 0;
        const rd_kafka_topic_result_t** results =
            rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &count);
        if (count == 1) {
            code = rd_kafka_topic_result_error(results[0]);
        }
    }
    rd_kafka_event_destroy(ev);
    if (code == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        // Deleting what is not there is routine (an APPLICATION client's first clean start):
        // the caller gets the error to decide, the log stays quiet.
        spdlog::debug("kafka: delete topic {}: it does not exist", topic_name);
        return make_kafka_error(code);
    }
    if (code != RD_KAFKA_RESP_ERR_NO_ERROR) {
        spdlog::error("kafka: delete topic {}: {}", topic_name, rd_kafka_err2str(code));
        return make_kafka_error(code);
    }
    return impl_->await_topic(topic_name, false, until);
}

result<std::int32_t> kafka_message_log::partition_count(std::string_view topic) {
    return impl_->topic_partitions(std::string(topic), impl_->config.admin_timeout);
}

result<std::vector<std::string>> kafka_message_log::list_topics(std::string_view prefix) {
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t err = rd_kafka_metadata(impl_->producer.get(), 1, nullptr, &md,
                                                      to_timeout_ms(impl_->config.admin_timeout));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return make_kafka_error(err);
    }
    std::vector<std::string> out;
    for (int i = 0; i < md->topic_cnt; ++i) {
        const std::string_view name = md->topics[i].topic;
        if (name.starts_with(prefix)) {
            out.emplace_back(name);
        }
    }
    rd_kafka_metadata_destroy(md);
    return out;
}

result<std::unique_ptr<log_consumer>> kafka_message_log::create_consumer(
    const consumer_spec& spec) {
    return make_consumer(impl_->config, spec);
}

}  // namespace starling::adapters::kafka
