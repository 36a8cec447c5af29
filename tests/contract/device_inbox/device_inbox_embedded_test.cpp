// The device-inbox contract against the embedded adapter, plus what only the embedded adapter
// promises: data survives a restart and kill -9, one process per data_dir, bounded queue.

#include "adapters/embedded/device_inbox.h"

#include "contract/device_inbox/device_inbox_embedded_factory.h"
#include <sqlite3.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(embedded, device_inbox_contract,
                         ::testing::Values(std::make_shared<embedded_inbox_factory>()),
                         factory_name<device_inbox_factory>);

namespace {

using adapters::embedded::embedded_device_inbox;
using ids = std::vector<std::uint16_t>;

std::unique_ptr<embedded_device_inbox> open_inbox(const std::filesystem::path& dir,
                                                  const clock& clk) {
    auto inbox = embedded_device_inbox::open({.data_dir = dir}, clk);
    EXPECT_TRUE(inbox) << inbox.error().message();
    return inbox ? std::move(*inbox) : nullptr;
}

result<device_inbox::append_result> append(device_inbox& inbox, const std::string& client,
                                           std::vector<inbox_entry> batch) {
    return await<result<device_inbox::append_result>>(
        [&](auto done) { inbox.append(client, std::move(batch), std::move(done)); });
}

result<std::vector<inbox_message>> read_all(device_inbox& inbox, const std::string& client) {
    return await<result<std::vector<inbox_message>>>(
        [&](auto done) { inbox.read_pending(client, 1000, std::move(done)); });
}

}  // namespace

TEST(embedded_device_inbox, reopen_finds_messages_markers_and_counter) {
    manual_clock clk;
    temp_dir dir;
    {
        auto inbox = open_inbox(dir.path(), clk);
        ASSERT_TRUE(inbox);
        ASSERT_TRUE(append(*inbox, "c1", {{"a", 0}, {"b", 0}, {"c", 0}}));
        ASSERT_TRUE(await<status>([&](auto done) { inbox->remove("c1", 1, done); }));
        ASSERT_TRUE(await<status>([&](auto done) { inbox->mark_pubrel("c1", 2, done); }));
        ASSERT_TRUE(append(*inbox, "c2", {{"x", 0}}));
        ASSERT_TRUE(await<status>([&](auto done) { inbox->remove("c2", 1, done); }));
    }
    auto inbox = open_inbox(dir.path(), clk);
    ASSERT_TRUE(inbox);
    auto pending = read_all(*inbox, "c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 2u);
    EXPECT_EQ((*pending)[0].packet_id, 2);
    EXPECT_TRUE((*pending)[0].pubrel);
    EXPECT_EQ((*pending)[0].record, "b");
    EXPECT_EQ((*pending)[1].packet_id, 3);
    // The counter of an emptied inbox survives the restart too.
    auto next = append(*inbox, "c2", {{"y", 0}});
    ASSERT_TRUE(next);
    EXPECT_EQ(next->packet_ids, (ids{2}));
}

// A data directory written by the first schema (before log positions) opens as the current
// one: its messages and counter stay, and log positions work from then on.
TEST(embedded_device_inbox, a_version_1_file_is_upgraded_in_place) {
    manual_clock clk;
    temp_dir dir;
    {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((dir.path() / "device_inbox.db").c_str(), &db), SQLITE_OK);
        const char* v1 =
            "CREATE TABLE inbox_client (client_id TEXT NOT NULL PRIMARY KEY,"
            " last_packet_id INTEGER NOT NULL, message_count INTEGER NOT NULL) WITHOUT ROWID;"
            "CREATE TABLE inbox_message (seq INTEGER PRIMARY KEY, client_id TEXT NOT NULL,"
            " packet_id INTEGER NOT NULL, pubrel INTEGER NOT NULL,"
            " expires_at_ms INTEGER NOT NULL, record BLOB NOT NULL);"
            "CREATE INDEX inbox_message_client ON inbox_message (client_id);"
            "CREATE UNIQUE INDEX inbox_message_packet_id ON inbox_message (client_id, packet_id);"
            "INSERT INTO inbox_client VALUES ('c1', 7, 1);"
            "INSERT INTO inbox_message VALUES (1, 'c1', 7, 0, 9999999999999, 'old');"
            "PRAGMA user_version = 1;";
        ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK);
        sqlite3_close(db);
    }
    auto inbox = open_inbox(dir.path(), clk);
    ASSERT_TRUE(inbox);
    const auto from_log = [](std::int64_t offset) {
        return inbox_entry{"new", 0, log_position{"t/0", offset, 1000 + offset}};
    };
    auto first = append(*inbox, "c1", {from_log(0)});
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_EQ(first->packet_ids, (ids{8}));
    auto repeat = append(*inbox, "c1", {from_log(0)});
    ASSERT_TRUE(repeat) << repeat.error().message();
    EXPECT_EQ(repeat->packet_ids, (ids{0}));
    auto pending = read_all(*inbox, "c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 2u);
    EXPECT_EQ((*pending)[0].record, "old");
    EXPECT_EQ((*pending)[1].record, "new");
}

// What an append's callback reported survives SIGKILL of the process right after it: the child
// appends, tells the parent through a pipe from inside the success callback, and is killed
// while its inbox is still open (no destructor, no checkpoint, no clean close).
TEST(embedded_device_inbox, acknowledged_appends_survive_kill_9) {
    manual_clock clk;
    temp_dir dir;
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(pipe_fds[0]);
        auto inbox = embedded_device_inbox::open({.data_dir = dir.path()}, clk);
        if (!inbox) {
            _exit(2);
        }
        std::vector<inbox_entry> batch;
        for (int i = 0; i < 100; ++i) {
            batch.push_back({"record-" + std::to_string(i), 0});
        }
        const int fd = pipe_fds[1];
        (*inbox)->append("c1", std::move(batch), [fd](result<device_inbox::append_result> r) {
            const char ok = r ? 'y' : 'n';
            (void)!write(fd, &ok, 1);
        });
        for (;;) {
            pause();  // killed here, inbox open
        }
    }
    close(pipe_fds[1]);
    char ack = 0;
    ASSERT_EQ(::read(pipe_fds[0], &ack, 1), 1);
    close(pipe_fds[0]);
    ASSERT_EQ(kill(child, SIGKILL), 0);
    int wstatus = 0;
    ASSERT_EQ(waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wstatus));
    ASSERT_EQ(ack, 'y');

    auto inbox = open_inbox(dir.path(), clk);
    ASSERT_TRUE(inbox);
    auto pending = read_all(*inbox, "c1");
    ASSERT_TRUE(pending) << pending.error().message();
    ASSERT_EQ(pending->size(), 100u);
    EXPECT_EQ(pending->back().record, "record-99");
    EXPECT_EQ(pending->back().packet_id, 100);
}

TEST(embedded_device_inbox, second_open_of_the_same_directory_fails) {
    manual_clock clk;
    temp_dir dir;
    auto first = open_inbox(dir.path(), clk);
    ASSERT_TRUE(first);
    auto second = embedded_device_inbox::open({.data_dir = dir.path()}, clk);
    EXPECT_FALSE(second);
}

TEST(embedded_device_inbox, rejects_settings_outside_the_port_limits) {
    manual_clock clk;
    temp_dir dir;
    for (const std::uint32_t max : {0u, 65536u}) {
        auto inbox = embedded_device_inbox::open(
            {.data_dir = dir.path(), .settings = {.max_messages = max}}, clk);
        ASSERT_FALSE(inbox);
        EXPECT_EQ(inbox.error(), std::errc::invalid_argument);
    }
    auto no_ttl = embedded_device_inbox::open(
        {.data_dir = dir.path(), .settings = {.default_ttl_ms = 0}}, clk);
    EXPECT_FALSE(no_ttl);
}

// With the worker held inside a callback, one call fills the queue (capacity 1) and the next
// is rejected at once, on the caller's thread, with queue_full; the queued one still runs.
TEST(embedded_device_inbox, full_queue_rejects_inline) {
    manual_clock clk;
    temp_dir dir;
    auto opened = embedded_device_inbox::open({.data_dir = dir.path(), .queue_capacity = 1}, clk);
    ASSERT_TRUE(opened);
    auto& inbox = **opened;

    std::promise<void> entered;
    std::promise<void> release;
    auto released = release.get_future().share();
    inbox.clear("c1", [&entered, released](status) {
        entered.set_value();
        released.wait();  // holds the worker thread until the test lets go
    });
    entered.get_future().wait();

    std::promise<status> queued;
    inbox.mark_pubrel("c1", 1, [&queued](status st) { queued.set_value(st); });

    bool ran_inline = false;
    status rejected;
    inbox.remove("c1", 1, [&](status st) {
        ran_inline = true;
        rejected = st;
    });
    EXPECT_TRUE(ran_inline);
    ASSERT_FALSE(rejected);
    EXPECT_EQ(rejected.error(), std::errc::resource_unavailable_try_again);
    EXPECT_EQ(inbox.queue_depth(), 1u);

    release.set_value();
    EXPECT_TRUE(queued.get_future().get());
}

TEST(embedded_device_inbox, stopped_inbox_rejects_calls_and_is_unhealthy) {
    manual_clock clk;
    temp_dir dir;
    auto inbox = open_inbox(dir.path(), clk);
    ASSERT_TRUE(inbox);
    EXPECT_TRUE(inbox->healthy());
    inbox->stop();
    EXPECT_FALSE(inbox->healthy());
    bool ran_inline = false;
    inbox->clear("c1", [&](status st) {
        ran_inline = true;
        ASSERT_FALSE(st);
        EXPECT_EQ(st.error(), std::errc::operation_canceled);
    });
    EXPECT_TRUE(ran_inline);
}

}  // namespace starling::testing
