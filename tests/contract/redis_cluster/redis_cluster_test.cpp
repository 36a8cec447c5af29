// Redis Cluster: the whole device-inbox and shared-counters contracts against a private
// three-master cluster on loopback, plus what only cluster mode does — keys spread over every
// master by their hash tag, a slot migrating under a running inbox (ASK while its keys move,
// MOVED once it has moved), a lost master failing calls until it is back. Needs the
// redis-server and redis-cli binaries (no STARLING_TEST_REDIS: the cluster is private); skips
// without them.

#include "adapters/redis/redis_connection.h"
#include "adapters/redis/redis_device_inbox.h"
#include "adapters/redis/redis_errc.h"
#include "adapters/redis/redis_shared_counters.h"

#include "contract/device_inbox/contract_support.h"
#include "contract/device_inbox/device_inbox_contract.h"
#include "contract/shared_counters/shared_counters_contract.h"
#include "support/private_redis_cluster.h"
#include <hiredis/hiredis.h>

#include <atomic>
#include <map>
#include <random>
#include <set>

namespace starling::testing {

namespace {

using adapters::redis::key_slot;
using adapters::redis::open_redis_device_inbox;
using adapters::redis::redis_connection;
using adapters::redis::redis_endpoint;
using adapters::redis::redis_errc;
using adapters::redis::redis_inbox_config;
using adapters::redis::reply_text;

// One cluster for the whole test program (creating one takes a few seconds); every inbox uses
// its own key prefix. nullptr (with the reason) when the tools are missing or it fails.
private_redis_cluster* shared_cluster(std::string* why) {
    static std::string error;
    static std::unique_ptr<private_redis_cluster> cluster = [] {
        if (!private_redis_cluster::tools_available()) {
            error = "redis-server or redis-cli is not installed";
            return std::unique_ptr<private_redis_cluster>();
        }
        auto c = std::make_unique<private_redis_cluster>();
        if (!c->start(3)) {
            error = c->error();
            return std::unique_ptr<private_redis_cluster>();
        }
        return c;
    }();
    if (why != nullptr) {
        *why = error;
    }
    return cluster.get();
}

std::string unique_prefix() {
    static std::atomic<int> counter{0};
    return "starling-test:" + std::to_string(::getpid()) + ":" + std::to_string(counter++) + ":";
}

redis_inbox_config cluster_config(const private_redis_cluster& cluster,
                                  const inbox_settings& settings) {
    redis_inbox_config config;
    config.cluster.nodes = cluster.nodes();
    config.connect_timeout = std::chrono::seconds(5);
    config.command_timeout = std::chrono::seconds(30);
    config.max_messages = settings.max_messages;
    config.default_ttl = std::chrono::milliseconds(settings.default_ttl_ms);
    config.key_prefix = unique_prefix();
    return config;
}

class redis_cluster_inbox_factory final : public device_inbox_factory {
  public:
    std::string name() const override { return "redis_cluster"; }

    std::shared_ptr<device_inbox> create(const inbox_settings& settings,
                                         const clock& clk) override {
        std::string why;
        auto* cluster = shared_cluster(&why);
        if (cluster == nullptr) {
            skip(why);
            return nullptr;
        }
        auto inbox = open_redis_device_inbox(cluster_config(*cluster, settings), clk);
        if (!inbox) {
            ADD_FAILURE() << "open: " << inbox.error().message();
            return nullptr;
        }
        return std::shared_ptr<device_inbox>(std::move(inbox.value()));
    }

  private:
    static void skip(const std::string& why) { GTEST_SKIP() << why; }
};

class redis_cluster_counters_factory final : public shared_counters_factory {
  public:
    std::string name() const override { return "redis_cluster"; }

    std::shared_ptr<shared_counters> create(const clock& clk) override {
        std::string why;
        auto* cluster = shared_cluster(&why);
        if (cluster == nullptr) {
            skip(why);
            return nullptr;
        }
        adapters::redis::redis_counters_config config;
        config.cluster.nodes = cluster->nodes();
        config.connect_timeout = std::chrono::seconds(5);
        config.command_timeout = std::chrono::seconds(30);
        config.key_prefix = unique_prefix();
        auto counters = adapters::redis::open_redis_shared_counters(config, clk);
        if (!counters) {
            ADD_FAILURE() << "open: " << counters.error().message();
            return nullptr;
        }
        return std::shared_ptr<shared_counters>(std::move(counters.value()));
    }

  private:
    static void skip(const std::string& why) { GTEST_SKIP() << why; }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(redis_cluster, device_inbox_contract,
                         ::testing::Values(std::make_shared<redis_cluster_inbox_factory>()),
                         factory_name<device_inbox_factory>);
INSTANTIATE_TEST_SUITE_P(redis_cluster, shared_counters_contract,
                         ::testing::Values(std::make_shared<redis_cluster_counters_factory>()),
                         factory_name<shared_counters_factory>);

namespace {

result<device_inbox::append_result> append(device_inbox& inbox, const std::string& client,
                                           int count) {
    std::vector<inbox_entry> batch;
    for (int i = 0; i < count; ++i) {
        batch.push_back({.record = client + "-" + std::to_string(i)});
    }
    return await<result<device_inbox::append_result>>(
        [&](auto done) { inbox.append(client, std::move(batch), std::move(done)); });
}

result<std::vector<inbox_message>> read_all(device_inbox& inbox, const std::string& client) {
    return await<result<std::vector<inbox_message>>>(
        [&](auto done) { inbox.read_pending(client, 100000, std::move(done)); });
}

std::vector<std::string> records(const std::vector<inbox_message>& messages) {
    std::vector<std::string> out;
    for (const auto& m : messages) {
        out.push_back(m.record);
    }
    return out;
}

std::vector<std::string> expected_records(const std::string& client, int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i < to; ++i) {
        out.push_back(client + "-" + std::to_string(i));
    }
    return out;
}

long long integer_of(redis_connection& conn, std::vector<std::string_view> args) {
    auto reply = conn.command(args);
    return reply && (*reply)->type == REDIS_REPLY_INTEGER ? (*reply)->integer : -1;
}

class redis_cluster_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        cluster_ = shared_cluster(&why);
        if (cluster_ == nullptr) {
            GTEST_SKIP() << why;
        }
    }

    std::unique_ptr<device_inbox> open_inbox(const redis_inbox_config& config) {
        auto inbox = open_redis_device_inbox(config, clock_);
        EXPECT_TRUE(inbox) << inbox.error().message();
        return inbox ? std::move(inbox.value()) : nullptr;
    }

    redis_inbox_config config() const { return cluster_config(*cluster_, inbox_settings{}); }

    // The node (index into the cluster) whose port serves `slot`, from node 0's view.
    std::size_t owner_of(std::uint16_t slot) const {
        auto conn = cluster_->connect_to(0);
        const std::string_view args[] = {"CLUSTER", "SLOTS"};
        auto reply = conn->command(args);
        for (std::size_t i = 0; reply && i < (*reply)->elements; ++i) {
            const redisReply& range = *(*reply)->element[i];
            if (range.element[0]->integer <= slot && slot <= range.element[1]->integer) {
                return cluster_->index_of(
                    static_cast<std::uint16_t>(range.element[2]->element[1]->integer));
            }
        }
        return cluster_->size();
    }

    std::string node_id(std::size_t i) const { return cluster_->text(i, {"CLUSTER", "MYID"}); }

    // The first half of a resharding step, as redis-cli does it: `to` imports the slot, `from`
    // migrates it, and every key of the slot moves (MIGRATE). The slot is still `from`'s, so it
    // answers ASK for it. Returns how many keys moved (0 on any failure).
    std::size_t start_migration(std::uint16_t slot, std::size_t from, std::size_t to) const {
        const auto slot_text = std::to_string(slot);
        if (cluster_->text(to, {"CLUSTER", "SETSLOT", slot_text, "IMPORTING", node_id(from)}) !=
                "OK" ||
            cluster_->text(from, {"CLUSTER", "SETSLOT", slot_text, "MIGRATING", node_id(to)}) !=
                "OK") {
            return 0;
        }
        auto conn = cluster_->connect_to(from);
        const std::string_view get_keys[] = {"CLUSTER", "GETKEYSINSLOT", slot_text, "1000"};
        auto keys = conn->command(get_keys);
        if (!keys || (*keys)->type != REDIS_REPLY_ARRAY || (*keys)->elements == 0) {
            return 0;
        }
        const auto port = std::to_string(cluster_->port(to));
        std::vector<std::string_view> migrate = {"MIGRATE", "127.0.0.1", port,  "",
                                                 "0",       "5000",      "KEYS"};
        for (std::size_t i = 0; i < (*keys)->elements; ++i) {
            migrate.push_back(reply_text(*(*keys)->element[i]));
        }
        auto moved = conn->command(migrate);
        return moved && reply_text(**moved) == "OK" ? (*keys)->elements : 0;
    }

    private_redis_cluster* cluster_ = nullptr;
    manual_clock clock_;
};

// Redis's own CLUSTER KEYSLOT is the reference: the spec's example values and 2,000 random
// keys, hash tags included, must agree with key_slot.
TEST_F(redis_cluster_test, key_slot_agrees_with_the_server) {
    EXPECT_EQ(key_slot("123456789"), 12739);  // CRC16/XMODEM check value 0x31C3
    EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
    EXPECT_EQ(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));
    EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));  // an empty tag hashes the whole key
    EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
    EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));

    auto conn = cluster_->connect_to(0);
    ASSERT_TRUE(conn);
    std::mt19937 rng(20261205);
    const std::string alphabet = "ab{}_-:x";
    for (int i = 0; i < 2000; ++i) {
        std::string key;
        const auto length = rng() % 12;
        for (std::size_t j = 0; j < length; ++j) {
            key += alphabet[rng() % alphabet.size()];
        }
        if (rng() % 4 == 0) {
            key += static_cast<char>(rng() % 256);  // binary bytes too
        }
        const auto server = integer_of(*conn, {"CLUSTER", "KEYSLOT", key});
        ASSERT_EQ(key_slot(key), server) << "key \"" << key << "\"";
    }
}

// Clients' keys land on every master, each on the master that owns its slot, and every
// client's messages come back intact.
TEST_F(redis_cluster_test, clients_spread_over_every_master) {
    auto cfg = config();
    auto inbox = open_inbox(cfg);
    ASSERT_TRUE(inbox);
    for (int c = 0; c < 60; ++c) {
        const auto client = "device-" + std::to_string(c);
        ASSERT_TRUE(append(*inbox, client, 3));
    }
    std::set<std::size_t> masters_used;
    for (int c = 0; c < 60; ++c) {
        const auto client = "device-" + std::to_string(c);
        const auto index_key = cfg.key_prefix + "{" + client + "}_messages";
        const auto owner = owner_of(key_slot(index_key));
        ASSERT_LT(owner, cluster_->size());
        auto conn = cluster_->connect_to(owner);
        EXPECT_EQ(integer_of(*conn, {"ZCARD", index_key}), 3) << client;
        masters_used.insert(owner);
        auto read = read_all(*inbox, client);
        ASSERT_TRUE(read) << read.error().message();
        EXPECT_EQ(records(*read), expected_records(client, 0, 3));
    }
    EXPECT_EQ(masters_used.size(), 3U);
}

// A slot moves from one master to another under a running inbox, as `redis-cli --cluster
// reshard` does it: while its keys are on the importing node the old owner answers ASK; after
// the move it answers MOVED. Nothing is lost either way and other clients are untouched.
TEST_F(redis_cluster_test, follows_a_slot_through_migration) {
    auto cfg = config();
    auto inbox = open_inbox(cfg);
    ASSERT_TRUE(inbox);
    const std::string client = "migrating-device";
    const std::string bystander = "steady-device";
    const auto slot = key_slot(cfg.key_prefix + "{" + client + "}_messages");
    const auto source = owner_of(slot);
    ASSERT_LT(source, cluster_->size());
    const auto target = (source + 1) % cluster_->size();
    ASSERT_TRUE(append(*inbox, client, 5));
    ASSERT_TRUE(append(*inbox, bystander, 2));

    const auto slot_text = std::to_string(slot);
    const auto source_id = node_id(source);
    const auto target_id = node_id(target);
    ASSERT_GE(start_migration(slot, source, target), 7U);  // index, counter, five messages
    // Mid-migration: the source no longer has the keys and answers ASK.
    auto during = read_all(*inbox, client);
    ASSERT_TRUE(during) << during.error().message();
    EXPECT_EQ(records(*during), expected_records(client, 0, 5));

    // Finish the move on every master, as redis-cli does; the source now answers MOVED.
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
        ASSERT_EQ(cluster_->text(i, {"CLUSTER", "SETSLOT", slot_text, "NODE", target_id}), "OK");
    }
    ASSERT_TRUE(append(*inbox, client, 8));
    auto after = read_all(*inbox, client);
    ASSERT_TRUE(after) << after.error().message();
    ASSERT_EQ(after->size(), 13U);
    auto target_conn = cluster_->connect_to(target);
    EXPECT_EQ(integer_of(*target_conn, {"ZCARD", cfg.key_prefix + "{" + client + "}_messages"}),
              13);
    auto bystander_read = read_all(*inbox, bystander);
    ASSERT_TRUE(bystander_read);
    EXPECT_EQ(records(*bystander_read), expected_records(bystander, 0, 2));

    // Put the slot back so the shared cluster keeps its layout for other tests.
    ASSERT_GE(start_migration(slot, target, source), 13U);
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
        ASSERT_EQ(cluster_->text(i, {"CLUSTER", "SETSLOT", slot_text, "NODE", source_id}), "OK");
    }
    auto back = read_all(*inbox, client);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(back->size(), 13U);
}

// The cluster connection itself: SCRIPT reaches every master, keys go straight to their owner
// (no redirect when the map is right), and a keyless WAIT goes where the last write went.
TEST_F(redis_cluster_test, connection_routes_scripts_and_keys) {
    redis_connection conn(redis_endpoint{.cluster = {.nodes = {cluster_->nodes().front()}}});
    ASSERT_TRUE(conn.connect()) << conn.last_error();
    EXPECT_EQ(conn.cluster_masters().size(), 3U);

    const std::string_view load[] = {"SCRIPT", "LOAD", "return 7"};
    auto sha = conn.command(load);
    ASSERT_TRUE(sha);
    const std::string sha_text(reply_text(**sha));
    for (std::size_t i = 0; i < cluster_->size(); ++i) {
        auto node = cluster_->connect_to(i);
        const std::string_view exists[] = {"SCRIPT", "EXISTS", sha_text};
        auto reply = node->command(exists);
        ASSERT_TRUE(reply);
        EXPECT_EQ((*reply)->element[0]->integer, 1) << "node " << i;
    }
    const auto prefix = unique_prefix();
    for (int i = 0; i < 30; ++i) {
        const auto key = prefix + std::to_string(i);
        const std::string_view set[] = {"INCRBY", key, "5"};
        auto reply = conn.command(set);
        ASSERT_TRUE(reply);
        ASSERT_EQ((*reply)->type, REDIS_REPLY_INTEGER) << reply_text(**reply);
        const std::string_view eval[] = {"EVALSHA", sha_text, "1", key};
        auto evaluated = conn.command(eval);
        ASSERT_TRUE(evaluated);
        EXPECT_EQ((*evaluated)->integer, 7);
        const std::string_view wait[] = {"WAIT", "0", "100"};
        auto waited = conn.command(wait);
        ASSERT_TRUE(waited);
        EXPECT_EQ((*waited)->type, REDIS_REPLY_INTEGER) << reply_text(**waited);
    }
    EXPECT_EQ(conn.redirects(), 0U);  // the map was right: no redirect needed
}

// A master that dies takes its slots down (no replica here): calls for them fail — never a
// false success — and health says so; once it is back the same inbox works again by itself.
// It hangs the node with SIGSTOP and lets it go, so the shared cluster is whole again after.
TEST_F(redis_cluster_test, lost_master_fails_calls_until_it_returns) {
    auto cfg = config();
    cfg.connections = 1;
    cfg.connect_timeout = std::chrono::seconds(1);
    cfg.command_timeout = std::chrono::seconds(1);
    cfg.reconnect_min = std::chrono::milliseconds(20);
    cfg.reconnect_max = std::chrono::milliseconds(200);
    auto inbox = open_inbox(cfg);
    ASSERT_TRUE(inbox);
    const std::string client = "device-on-lost-master";
    ASSERT_TRUE(append(*inbox, client, 2));
    const auto owner = owner_of(key_slot(cfg.key_prefix + "{" + client + "}_messages"));
    ASSERT_LT(owner, cluster_->size());

    cluster_->pause(owner);  // hung: the cluster bus and clients get no answer
    auto failed = append(*inbox, client, 1);
    ASSERT_FALSE(failed);
    EXPECT_TRUE(failed.error() == redis_errc::timed_out || failed.error() == redis_errc::io_error ||
                failed.error() == redis_errc::not_connected)
        << failed.error().message();
    EXPECT_FALSE(dynamic_cast<adapters::redis::redis_device_inbox&>(*inbox).healthy());

    cluster_->resume(owner);
    ASSERT_TRUE(cluster_->wait_until_ok(std::chrono::seconds(30)));
    // The worker reconnects in the background; the next calls succeed once it has.
    result<std::vector<inbox_message>> read = make_error_code(redis_errc::not_connected);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!read && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polls the reconnect
        read = read_all(*inbox, client);
    }
    ASSERT_TRUE(read) << read.error().message();
    // The failed append may or may not have run before the node hung (at-least-once); the two
    // acknowledged messages are there either way.
    ASSERT_GE(read->size(), 2U);
    EXPECT_EQ(records(*read)[0], client + "-0");
    EXPECT_EQ(records(*read)[1], client + "-1");
}

}  // namespace

}  // namespace starling::testing
