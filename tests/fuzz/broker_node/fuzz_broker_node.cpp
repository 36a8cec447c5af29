// libFuzzer target: a stateful harness that drives one broker node (embedded adapters, real
// actors and consumers) with packet sequences from several clients at once, as the network
// would, and checks what must hold whatever they send.
//
// Input: frames of [client (1 byte, 0..3)] [length (1 byte)] [bytes]; each client's bytes go
// through its own server-role decoder, as mqtt_connection does, and the packets to that
// client's actor (CONNECT on the control lane, the rest on the normal lane, a decode error as a
// protocol-error close). Client ids are replaced by per-input ones so inputs do not share
// sessions. At the end of an input every client hangs up and the harness waits for every actor
// to have handled everything.
//
// Checked (an abort is a finding, besides ASan/UBSan/LSan reports): every actor answers
// (nothing deadlocks); no session holds more subscriptions than the limit; the node keeps at
// most the retained-message limit; nothing is written to a channel after the actor closed it.
//
// The node is small on purpose (window 4, limits of a few) so inputs reach the limits.

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/shared_counters.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "broker/client_actor.h"
#include "broker/client_channel.h"
#include "broker/node.h"
#include "metrics/registry.h"
#include "mqtt/decoder.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <string>

namespace {

using namespace starling;
using namespace std::chrono_literals;

constexpr std::size_t clients = 4;
constexpr std::uint32_t max_subscriptions = 5;
constexpr std::uint64_t max_retained = 10;

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_broker_node invariant violated: %s\n", what);
        std::abort();
    }
}

// The actor's side of a connection: counts what it is sent, notes a send after close.
class sink_channel final : public broker::client_channel {
  public:
    explicit sink_channel(std::uint64_t id) : id_(id) {}
    void send(std::string bytes) override {
        std::lock_guard lock(mutex_);
        check(!closed_, "a packet written to a channel after the actor closed it");
        bytes_ += bytes.size();
    }
    void close() override {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    bool writable() const override { return true; }
    void resume_reading() override {}
    bool reading_paused() const override { return false; }
    void hold_reading(bool) override {}
    const std::string& remote_address() const override { return address_; }
    std::uint64_t id() const override { return id_; }

  private:
    std::uint64_t id_;
    std::string address_ = "127.0.0.1:1";
    std::mutex mutex_;
    bool closed_ = false;
    std::size_t bytes_ = 0;
};

// One node for the whole run (a node per input would cost most of the time in start-up).
struct harness {
    std::filesystem::path dir;
    metrics::registry metrics;
    std::unique_ptr<adapters::embedded::embedded_message_log> log;
    std::unique_ptr<adapters::embedded::embedded_device_inbox> inbox;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> metadata;
    adapters::embedded::embedded_shared_counters counters{system_clock::instance()};
    std::unique_ptr<broker::node> node;
    std::uint64_t inputs = 0;
    std::uint64_t channels = 0;

    harness() {
        spdlog::set_level(spdlog::level::off);
        char pattern[] = "/tmp/fuzz_broker_node.XXXXXX";
        check(::mkdtemp(pattern) != nullptr, "mkdtemp");
        dir = pattern;
        adapters::embedded::embedded_log_config log_cfg;
        log_cfg.data_dir = dir;
        log = std::move(adapters::embedded::embedded_message_log::open(log_cfg).value());
        adapters::embedded::embedded_device_inbox::options inbox_opts;
        inbox_opts.data_dir = dir;
        inbox = std::move(
            adapters::embedded::embedded_device_inbox::open(inbox_opts, system_clock::instance())
                .value());
        adapters::embedded::sqlite_metadata_store::options meta_opts;
        meta_opts.data_dir = dir;
        metadata = std::move(
            adapters::embedded::sqlite_metadata_store::open(meta_opts, system_clock::instance())
                .value());
        broker::settings s;
        s.msg_all_partitions = 2;
        s.msg_all_consumers = 1;
        s.msg_persisted_partitions = 1;
        s.msg_persisted_consumers = 1;
        s.poll_interval = 10ms;
        s.max_in_flight = 4;
        s.mailbox_capacity = 256;
        s.max_packet_size = 4096;
        s.max_subscriptions_per_client = max_subscriptions;
        s.max_retained_messages = max_retained;
        s.max_topic_segments = 8;
        s.max_user_properties = 8;
        s.named_actor_grace = 0s;
        s.generated_actor_grace = 0s;
        node = std::make_unique<broker::node>(s, *log, *inbox, *metadata, metrics, 1,
                                              system_clock::instance(),
                                              broker::admission_services{.counters = &counters});
        node->start();
    }
    ~harness() {
        node->stop(2s);
        node.reset();
        log->stop();
        inbox->stop();
        metadata->stop();
        std::filesystem::remove_all(dir);
    }
};

harness& the_harness() {
    static harness h;
    return h;
}

struct client_state {
    std::string id;
    std::shared_ptr<sink_channel> channel;
    mqtt::decoder decoder{mqtt::decoder_limits{.max_packet_size = 4096, .max_user_properties = 8},
                          mqtt::decoder_role::server};
    bool connected = false;
    bool done = false;  // closed: nothing more is read
};

// Every message told before this has been handled by the actor (bounded: a stuck actor is a
// finding); returns its session's subscriptions then.
std::size_t sync(broker::client_actor& actor) {
    auto done = std::make_shared<std::promise<std::size_t>>();
    auto f = done->get_future();
    if (!actor.tell_control(broker::client_msg::call{[done](broker::client_actor& a) {
            done->set_value(a.subscription_count_for_test());
        }})) {
        return 0;  // stopped: its session ended
    }
    check(f.wait_for(10s) == std::future_status::ready, "an actor did not answer in 10 s");
    return f.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    harness& h = the_harness();
    auto& core = h.node->core();
    const std::uint64_t input = ++h.inputs;
    std::array<client_state, clients> cs;
    for (std::size_t i = 0; i < clients; ++i) {
        cs[i].id = "f" + std::to_string(input) + "-" + std::to_string(i);
    }

    std::size_t pos = 0;
    while (pos + 2 <= size) {
        client_state& c = cs[data[pos] % clients];
        const std::size_t length = std::min<std::size_t>(data[pos + 1], size - pos - 2);
        std::string_view bytes(reinterpret_cast<const char*>(data + pos + 2), length);
        pos += 2 + length;
        if (c.done) {
            continue;
        }
        c.decoder.feed(bytes);
        for (;;) {
            auto r = c.decoder.next();
            if (std::holds_alternative<mqtt::need_more>(r)) {
                break;
            }
            auto actor = core.actor_for(c.id);
            if (auto* err = std::get_if<mqtt::decode_error>(&r)) {
                if (c.connected) {
                    actor->tell(broker::client_msg::closed{.channel_id = c.channel->id(),
                                                           .reason = "fuzz: malformed",
                                                           .protocol_error = err->code});
                }
                c.done = true;
                break;
            }
            auto& packet = std::get<mqtt::packet>(r);
            if (auto* connect = std::get_if<mqtt::connect>(&packet)) {
                connect->client_id = c.id;
                c.channel = std::make_shared<sink_channel>(++h.channels);
                c.connected = true;
                actor->tell_control(broker::client_msg::connect{.channel = c.channel,
                                                                .packet = std::move(*connect)});
                continue;
            }
            if (!c.connected) {
                c.done = true;  // the first packet must be CONNECT: the connection closes
                break;
            }
            if (!actor->tell(broker::client_msg::packet{c.channel->id(), std::move(packet)})) {
                break;  // mailbox full: a connection would stop reading
            }
        }
    }

    // Everyone hangs up; then every actor must have handled everything.
    for (auto& c : cs) {
        if (c.connected) {
            core.actor_for(c.id)->tell(broker::client_msg::closed{
                .channel_id = c.channel->id(), .reason = "fuzz: end", .protocol_error = {}});
        }
    }
    for (auto& c : cs) {
        if (auto actor = core.sessions().find_actor(c.id)) {
            check(sync(*actor) <= max_subscriptions,
                  "a session holds more subscriptions than allowed");
        }
    }
    check(core.retained().size() <= max_retained + clients,  // admission races: see admits()
          "more retained messages than the limit");
    return 0;
}
