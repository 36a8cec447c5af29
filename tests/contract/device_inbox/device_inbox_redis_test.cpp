// The device-inbox contract against the Redis adapter, plus what only the Redis adapter
// promises: TBMQ's key layout, PUBREL keeping the TTL, NOSCRIPT recovery, trim accounting,
// failing (never succeeding) while Redis is gone and recovering when it returns.
// Needs STARLING_TEST_REDIS (host:port); skips without it.

#include "adapters/redis/redis_errc.h"

#include "contract/device_inbox/device_inbox_redis_factory.h"
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(redis, device_inbox_contract,
                         ::testing::Values(std::make_shared<redis_inbox_factory>()),
                         factory_name<device_inbox_factory>);

namespace {

using adapters::redis::open_redis_device_inbox;
using adapters::redis::redis_connection;
using adapters::redis::redis_device_inbox;
using adapters::redis::redis_errc;
using adapters::redis::redis_inbox_config;
using ids = std::vector<std::uint16_t>;
using std::chrono::milliseconds;
using std::chrono::steady_clock;

result<device_inbox::append_result> append(device_inbox& inbox, const std::string& client,
                                           std::vector<inbox_entry> batch) {
    return await<result<device_inbox::append_result>>(
        [&](auto done) { inbox.append(client, std::move(batch), std::move(done)); });
}

result<std::vector<inbox_message>> read_all(device_inbox& inbox, const std::string& client) {
    return await<result<std::vector<inbox_message>>>(
        [&](auto done) { inbox.read_pending(client, 100000, std::move(done)); });
}

status remove(device_inbox& inbox, const std::string& client, std::uint16_t id) {
    return await<status>([&](auto done) { inbox.remove(client, id, std::move(done)); });
}

status mark_pubrel(device_inbox& inbox, const std::string& client, std::uint16_t id) {
    return await<status>([&](auto done) { inbox.mark_pubrel(client, id, std::move(done)); });
}

status clear(device_inbox& inbox, const std::string& client) {
    return await<status>([&](auto done) { inbox.clear(client, std::move(done)); });
}

// One command on the test's own connection; the reply's integer (or -1000 on failure).
long long integer_command(redis_connection& conn, std::vector<std::string_view> args) {
    auto reply = conn.command(args);
    if (!reply || (*reply)->type != REDIS_REPLY_INTEGER) {
        return -1000;
    }
    return (*reply)->integer;
}

std::string string_command(redis_connection& conn, std::vector<std::string_view> args) {
    auto reply = conn.command(args);
    if (!reply) {
        return "<transport error>";
    }
    return std::string(adapters::redis::reply_text(**reply));
}

// A TCP port nothing listens on right now (bound to port 0, then released).
std::uint16_t free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        ::close(fd);
        return 0;
    }
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

// A throwaway redis-server on a private port (no persistence), killed with SIGKILL on stop().
class private_redis {
  public:
    // `replica_of`: a port on 127.0.0.1 this server replicates (0: a master).
    explicit private_redis(std::uint16_t port, std::uint16_t replica_of = 0)
        : port_(port), replica_of_(replica_of) {}
    ~private_redis() { kill(); }

    // Starts the server and waits (bounded) until it answers PING.
    bool start() {
        const auto port = std::to_string(port_);
        pid_ = ::fork();
        if (pid_ == 0) {
            const int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, 1);
            ::dup2(devnull, 2);
            const auto master = std::to_string(replica_of_);
            if (replica_of_ != 0) {
                ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind",
                         "127.0.0.1", "--save", "", "--appendonly", "no", "--logfile", "",
                         "--replicaof", "127.0.0.1", master.c_str(), static_cast<char*>(nullptr));
            }
            ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no", "--logfile", "",
                     static_cast<char*>(nullptr));
            ::_exit(127);
        }
        if (pid_ < 0) {
            return false;
        }
        // Polls a condition with a deadline: the server gives no other sign of readiness.
        const auto deadline = steady_clock::now() + std::chrono::seconds(10);
        while (steady_clock::now() < deadline) {
            if (auto conn = test_connection({"127.0.0.1", port_})) {
                if (string_command(*conn, {"PING"}) == "PONG") {
                    return true;
                }
            }
            std::this_thread::sleep_for(milliseconds(20));
        }
        return false;
    }

    // SIGSTOP / SIGCONT: the server keeps its sockets but answers nothing (a hung Redis).
    void pause() const { ::kill(pid_, SIGSTOP); }
    void resume() const { ::kill(pid_, SIGCONT); }

    void kill() {
        if (pid_ > 0) {
            ::kill(pid_, SIGKILL);
            int wstatus = 0;
            ::waitpid(pid_, &wstatus, 0);
            pid_ = -1;
        }
    }

  private:
    std::uint16_t port_;
    std::uint16_t replica_of_;
    pid_t pid_ = -1;
};

// Polls `condition` until it holds or `limit` passes; for states with no event to wait on.
template <class Condition>
bool eventually(Condition condition, std::chrono::seconds limit = std::chrono::seconds(20)) {
    const auto deadline = steady_clock::now() + limit;
    while (steady_clock::now() < deadline) {
        if (condition()) {
            return true;
        }
        std::this_thread::sleep_for(milliseconds(10));
    }
    return condition();
}

redis_inbox_config private_config(std::uint16_t port) {
    redis_inbox_config config;
    config.host = "127.0.0.1";
    config.port = port;
    config.connections = 1;
    config.connect_timeout = std::chrono::seconds(2);
    config.command_timeout = std::chrono::seconds(2);
    config.reconnect_min = milliseconds(20);
    config.reconnect_max = milliseconds(200);
    return config;
}

bool have_redis_server() { return ::system("command -v redis-server >/dev/null 2>&1") == 0; }

class redis_device_inbox_test : public ::testing::Test {
  protected:
    void SetUp() override {
        auto address = test_redis_address();
        if (!address) {
            GTEST_SKIP() << no_redis_message;
        }
        address_ = *address;
        conn_ = test_connection(address_);
        ASSERT_TRUE(conn_) << "cannot connect to " << address_.host << ":" << address_.port;
    }

    void TearDown() override {
        inbox_.reset();
        if (conn_) {
            delete_keys_with_prefix(address_, prefix_);
        }
    }

    redis_device_inbox& open(std::uint32_t max_messages = 100) {
        auto config = test_inbox_config(
            address_, {.max_messages = max_messages, .default_ttl_ms = 60000}, prefix_);
        auto inbox = open_redis_device_inbox(config, clock_);
        EXPECT_TRUE(inbox) << inbox.error().message();
        inbox_ = inbox ? std::move(*inbox) : nullptr;
        return *inbox_;
    }

    manual_clock clock_;
    redis_address address_;
    std::string prefix_ = unique_key_prefix();
    std::unique_ptr<redis_connection> conn_;
    std::unique_ptr<redis_device_inbox> inbox_;
};

}  // namespace

TEST_F(redis_device_inbox_test, uses_tbmq_key_layout_with_hash_tags) {
    auto& inbox = open();
    ASSERT_TRUE(
        append(inbox, "dev-1", {{"a", 0}, {"b", 0, log_position{"msg.persisted/3", 41, 7}}}));
    EXPECT_EQ(inbox.messages_key("dev-1"), prefix_ + "{dev-1}_messages");
    EXPECT_EQ(inbox.last_packet_id_key("dev-1"), prefix_ + "{dev-1}_last_packet_id");
    EXPECT_EQ(inbox.log_positions_key("dev-1"), prefix_ + "{dev-1}_log_positions");
    EXPECT_EQ(string_command(*conn_, {"HGET", inbox.log_positions_key("dev-1"), "msg.persisted/3"}),
              "41:7");
    EXPECT_EQ(inbox.message_key("dev-1", 2), prefix_ + "{dev-1}_messages_2");

    const auto index = inbox.messages_key("dev-1");
    EXPECT_EQ(integer_command(*conn_, {"ZCARD", index}), 2);
    EXPECT_EQ(string_command(*conn_, {"GET", inbox.last_packet_id_key("dev-1")}), "2");
    // Members are the message key names, oldest first.
    auto members = conn_->command(std::vector<std::string_view>{"ZRANGE", index, "0", "-1"});
    ASSERT_TRUE(members);
    ASSERT_EQ((*members)->elements, 2u);
    EXPECT_EQ(adapters::redis::reply_text(*(*members)->element[0]), inbox.message_key("dev-1", 1));
    EXPECT_EQ(adapters::redis::reply_text(*(*members)->element[1]), inbox.message_key("dev-1", 2));

    ASSERT_TRUE(clear(inbox, "dev-1"));
    EXPECT_EQ(
        integer_command(*conn_, {"EXISTS", index, inbox.last_packet_id_key("dev-1"),
                                 inbox.log_positions_key("dev-1"), inbox.message_key("dev-1", 1),
                                 inbox.message_key("dev-1", 2)}),
        0);
}

// TBMQ's UPDATE_PACKET_TYPE rewrote the message with a plain SET and dropped its TTL, so PUBREL
// markers lived forever. Here the marker keeps the expiry it had.
TEST_F(redis_device_inbox_test, mark_pubrel_keeps_the_redis_ttl) {
    auto& inbox = open();
    const std::int64_t expires = clock_.epoch_ms() + 3'600'000;
    ASSERT_TRUE(append(inbox, "c1", {{"q2", expires}}));
    const auto key = inbox.message_key("c1", 1);
    const auto before = integer_command(*conn_, {"PTTL", key});
    ASSERT_GT(before, 3'500'000);

    ASSERT_TRUE(mark_pubrel(inbox, "c1", 1));
    const auto after = integer_command(*conn_, {"PTTL", key});
    EXPECT_GT(after, 3'500'000);  // -1 would mean "no TTL": TBMQ's bug
    EXPECT_LE(after, before);
    // The Redis TTL is the expiry plus the one-minute slack of inbox_scripts.h.
    EXPECT_EQ(integer_command(*conn_, {"PEXPIRETIME", key}), expires + 60'000);
    auto pending = read_all(inbox, "c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_TRUE((*pending)[0].pubrel);
    EXPECT_EQ((*pending)[0].record, "q2");
}

// SCRIPT FLUSH (or a Redis restart) empties the script cache: the next EVALSHA gets NOSCRIPT,
// the adapter loads the script again and the operation still succeeds.
TEST_F(redis_device_inbox_test, recovers_from_noscript) {
    auto& inbox = open();
    ASSERT_TRUE(append(inbox, "c1", {{"a", 0}, {"b", 0}}));
    ASSERT_EQ(string_command(*conn_, {"SCRIPT", "FLUSH"}), "OK");

    ASSERT_TRUE(remove(inbox, "c1", 1));
    EXPECT_GE(inbox.script_reloads(), 1u);
    auto more = append(inbox, "c1", {{"c", 0}});
    ASSERT_TRUE(more) << more.error().message();
    EXPECT_EQ(more->packet_ids, (ids{3}));
    auto pending = read_all(inbox, "c1");
    ASSERT_TRUE(pending) << pending.error().message();
    ASSERT_EQ(pending->size(), 2u);
    EXPECT_EQ((*pending)[0].record, "b");
    EXPECT_EQ((*pending)[1].record, "c");
}

TEST_F(redis_device_inbox_test, trim_reports_count_and_deletes_the_keys) {
    auto& inbox = open(5);
    ASSERT_TRUE(append(inbox, "c1", {{"a", 0}, {"b", 0}, {"c", 0}}));
    auto r = append(inbox, "c1", {{"d", 0}, {"e", 0}, {"f", 0}, {"g", 0}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->trimmed, 2u);
    EXPECT_EQ(integer_command(*conn_, {"ZCARD", inbox.messages_key("c1")}), 5);
    EXPECT_EQ(
        integer_command(*conn_, {"EXISTS", inbox.message_key("c1", 1), inbox.message_key("c1", 2)}),
        0);
    EXPECT_EQ(integer_command(*conn_, {"EXISTS", inbox.message_key("c1", 3)}), 1);
}

// A message key Redis expired on its own leaves a stale index entry; the next read repairs it.
TEST_F(redis_device_inbox_test, read_repairs_index_entries_of_vanished_keys) {
    auto& inbox = open();
    ASSERT_TRUE(append(inbox, "c1", {{"a", 0}, {"b", 0}}));
    ASSERT_EQ(integer_command(*conn_, {"DEL", inbox.message_key("c1", 1)}), 1);
    auto pending = read_all(inbox, "c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_EQ((*pending)[0].packet_id, 2);
    EXPECT_EQ(integer_command(*conn_, {"ZCARD", inbox.messages_key("c1")}), 1);
}

TEST(redis_device_inbox_config, limit_above_65535_fails_naming_the_key) {
    redis_inbox_config config;
    config.max_messages = 65536;
    const auto why = adapters::redis::validate(config);
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("mqtt.persistent-session.device.persisted-messages.limit"),
              std::string::npos);
    manual_clock clk;
    auto inbox = open_redis_device_inbox(config, clk);
    ASSERT_FALSE(inbox);
    EXPECT_EQ(inbox.error(), std::errc::invalid_argument);
    config.max_messages = 65535;
    EXPECT_FALSE(adapters::redis::validate(config));
}

TEST(redis_device_inbox_unreachable, open_fails_promptly_when_nothing_listens) {
    redis_inbox_config config;
    config.host = "127.0.0.1";
    config.port = free_port();
    ASSERT_NE(config.port, 0);
    manual_clock clk;
    const auto start = steady_clock::now();
    auto inbox = open_redis_device_inbox(config, clk);
    ASSERT_FALSE(inbox);
    EXPECT_EQ(inbox.error(), std::errc::not_connected);
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(2));
}

// A private redis-server: the adapter works, the server is SIGKILLed, calls fail (never a
// false success) promptly and healthy() turns false; the server comes back on the same port
// and the adapter reconnects on its own (scripts loaded again) and serves calls.
TEST(redis_device_inbox_outage, fails_while_redis_is_gone_and_recovers) {
    if (!have_redis_server()) {
        GTEST_SKIP() << "redis-server is not installed";
    }
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    private_redis server(port);
    ASSERT_TRUE(server.start());

    manual_clock clk;
    auto opened = open_redis_device_inbox(private_config(port), clk);
    ASSERT_TRUE(opened) << opened.error().message();
    auto& inbox = **opened;
    ASSERT_TRUE(append(inbox, "c1", {{"a", 0}}));
    EXPECT_TRUE(inbox.healthy());

    server.kill();
    const auto start = steady_clock::now();
    auto failed = append(inbox, "c1", {{"b", 0}});
    ASSERT_FALSE(failed);
    EXPECT_FALSE(inbox.healthy());
    auto again = read_all(inbox, "c1");
    ASSERT_FALSE(again);
    EXPECT_TRUE(again.error() == std::errc::not_connected || again.error() == std::errc::io_error)
        << again.error().message();
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(2));

    ASSERT_TRUE(server.start());
    // Retries a real operation until the adapter's own reconnect lets it through; bounded.
    result<device_inbox::append_result> recovered = make_error_code(redis_errc::not_connected);
    EXPECT_TRUE(eventually([&] {
        recovered = append(inbox, "c1", {{"c", 0}});
        return recovered.has_value();
    }));
    ASSERT_TRUE(recovered) << recovered.error().message();
    EXPECT_EQ(recovered->packet_ids, (ids{1}));  // a fresh server: nothing survived
    EXPECT_TRUE(inbox.healthy());
    auto pending = read_all(inbox, "c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_EQ((*pending)[0].record, "c");
}

// redis.wait.replicas: a write no replica acknowledged within the wait is a failure (the
// caller retries it), never a stored message; without the wait the same write succeeds.
TEST_F(redis_device_inbox_test, a_write_without_the_replicas_asked_for_fails) {
    auto config =
        test_inbox_config(address_, {.max_messages = 100, .default_ttl_ms = 60000}, prefix_);
    config.wait_replicas = 1;
    config.wait_timeout = milliseconds(50);  // the test server has no replica
    auto opened = open_redis_device_inbox(config, clock_);
    ASSERT_TRUE(opened) << opened.error().message();
    auto failed = append(**opened, "c1", {{"a", 0}});
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error(), make_error_code(redis_errc::not_replicated));
    EXPECT_TRUE(failed.error() == std::errc::io_error);
    EXPECT_TRUE((*opened)->healthy());  // the connection stays: Redis itself is fine

    auto& plain = open();
    EXPECT_TRUE(append(plain, "c2", {{"b", 0}}));
}

// A server that turned replica (a failover demoted it) refuses writes with READONLY: the call
// fails as a lost connection, so the adapter reconnects (through the sentinels, when used)
// instead of reporting a server error for every call.
TEST(redis_device_inbox_failover, a_demoted_master_counts_as_a_lost_connection) {
    if (!have_redis_server()) {
        GTEST_SKIP() << "redis-server is not installed";
    }
    const std::uint16_t master_port = free_port();
    const std::uint16_t replica_port = free_port();
    ASSERT_NE(master_port, 0);
    ASSERT_NE(replica_port, 0);
    private_redis master(master_port);
    private_redis replica(replica_port, master_port);
    ASSERT_TRUE(master.start());
    ASSERT_TRUE(replica.start());

    manual_clock clk;
    auto opened = open_redis_device_inbox(private_config(replica_port), clk);
    ASSERT_TRUE(opened) << opened.error().message();  // reads work on a replica: it opens
    auto failed = append(**opened, "c1", {{"a", 0}});
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error(), make_error_code(redis_errc::io_error)) << failed.error().message();
    // Nothing was written: the replica holds no key of the client.
    auto conn = test_connection({"127.0.0.1", replica_port});
    ASSERT_TRUE(conn);
    EXPECT_EQ(integer_command(*conn, {"DBSIZE"}), 0);
}

// With no calls at all, the idle PING notices the server is gone (healthy() false) and the
// background reconnect notices it is back (healthy() true again).
TEST(redis_device_inbox_outage, healthy_follows_the_server_without_traffic) {
    if (!have_redis_server()) {
        GTEST_SKIP() << "redis-server is not installed";
    }
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    private_redis server(port);
    ASSERT_TRUE(server.start());
    manual_clock clk;
    auto config = private_config(port);
    config.ping_interval = milliseconds(50);
    auto opened = open_redis_device_inbox(config, clk);
    ASSERT_TRUE(opened) << opened.error().message();
    auto& inbox = **opened;
    EXPECT_TRUE(inbox.healthy());

    server.kill();
    EXPECT_TRUE(eventually([&] { return !inbox.healthy(); }));
    ASSERT_TRUE(server.start());
    EXPECT_TRUE(eventually([&] { return inbox.healthy(); }));
    EXPECT_TRUE(read_all(inbox, "c1"));
}

// A server that stops answering (SIGSTOP): the call fails with timed_out after
// command_timeout instead of hanging, and once the server answers again calls succeed.
TEST(redis_device_inbox_outage, hung_server_times_out_and_recovers) {
    if (!have_redis_server()) {
        GTEST_SKIP() << "redis-server is not installed";
    }
    const std::uint16_t port = free_port();
    ASSERT_NE(port, 0);
    private_redis server(port);
    ASSERT_TRUE(server.start());
    manual_clock clk;
    auto config = private_config(port);
    config.command_timeout = milliseconds(300);
    config.connect_timeout = milliseconds(300);
    config.ping_interval = milliseconds(0);
    auto opened = open_redis_device_inbox(config, clk);
    ASSERT_TRUE(opened) << opened.error().message();
    auto& inbox = **opened;
    ASSERT_TRUE(append(inbox, "c1", {{"a", 0}}));

    server.pause();
    const auto start = steady_clock::now();
    auto stuck = append(inbox, "c1", {{"b", 0}});
    server.resume();  // before any assertion can return early
    ASSERT_FALSE(stuck);
    EXPECT_EQ(stuck.error(), std::errc::timed_out) << stuck.error().message();
    EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_FALSE(inbox.healthy());

    result<std::vector<inbox_message>> pending = make_error_code(redis_errc::not_connected);
    EXPECT_TRUE(eventually([&] {
        pending = read_all(inbox, "c1");
        return pending.has_value();
    }));
    ASSERT_TRUE(pending) << pending.error().message();
    EXPECT_TRUE(inbox.healthy());
    // The timed-out append may or may not have run inside Redis (at-least-once): "a" is there.
    ASSERT_GE(pending->size(), 1u);
    EXPECT_EQ((*pending)[0].record, "a");
}

}  // namespace starling::testing
