// Recovery of the embedded log: acknowledged records survive kill -9; a torn or corrupt tail
// is cut at restart and nothing after the tear comes back; committed offsets survive; an
// interrupted compaction or topic creation is finished or undone; one process per directory.

#include "adapters/embedded/log_format.h"

#include "unit/adapters/embedded_log/embedded_log_test_support.h"
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

namespace starling::testing {
namespace {

namespace log_format = adapters::embedded::log_format;

void append_bytes(const std::filesystem::path& file, const std::string& bytes) {
    std::ofstream out(file, std::ios::binary | std::ios::app);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good());
}

std::string value_for(std::int64_t i) { return "record-" + std::to_string(i); }

// The child process: produces "record-<i>" to t/0 forever, reporting each acknowledged offset
// through the pipe from inside the callback, until the parent kills it.
[[noreturn]] void produce_until_killed(const std::filesystem::path& dir, int fd) {
    auto config = small_log_config(dir);
    config.segment_bytes = 16 * 1024;
    config.fsync = fsync_policy::none;
    auto log = embedded_message_log::open(config);
    if (!log || !(*log)->create_topic({.name = "t", .partitions = 1})) {
        _exit(2);
    }
    for (std::int64_t i = 0;; ++i) {
        (*log)->produce("t", "k", value_for(i), {}, [fd](result<produce_ack> ack) {
            if (ack) {
                const std::int64_t offset = ack->offset;
                (void)!write(fd, &offset, sizeof offset);
            }
        });
        if (i % 256 == 255) {
            (void)(*log)->flush(std::chrono::seconds(10));
        }
    }
}

TEST(embedded_log_recovery, acknowledged_records_survive_kill_9_and_a_torn_tail) {
    temp_dir dir;
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(pipe_fds[0]);
        produce_until_killed(dir.path(), pipe_fds[1]);
    }
    close(pipe_fds[1]);
    std::int64_t max_acked = -1;
    std::int64_t acks = 0;
    while (acks < 3000) {
        std::int64_t offset = 0;
        ASSERT_EQ(::read(pipe_fds[0], &offset, sizeof offset), static_cast<ssize_t>(sizeof offset));
        EXPECT_EQ(offset, max_acked + 1) << "acks come in offset order";
        max_acked = offset;
        ++acks;
    }
    ASSERT_EQ(kill(child, SIGKILL), 0);  // while it is still producing
    int wstatus = 0;
    ASSERT_EQ(waitpid(child, &wstatus, 0), child);
    ASSERT_TRUE(WIFSIGNALED(wstatus));
    for (;;) {  // acks written to the pipe before the kill count too
        std::int64_t offset = 0;
        if (::read(pipe_fds[0], &offset, sizeof offset) != static_cast<ssize_t>(sizeof offset)) {
            break;
        }
        max_acked = std::max(max_acked, offset);
    }
    close(pipe_fds[0]);

    // A torn write at the tail: a frame header promising more bytes than follow.
    const auto files = segment_files(dir.path(), "t", 0);
    ASSERT_GT(files.size(), 1u);
    std::string torn;
    log_format::append_record(torn, max_acked + 1000, 0, "k", "torn-record", {});
    torn.resize(torn.size() / 2);
    append_bytes(files.back(), torn);

    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    const auto records = read_partition(*log, {"t", 0});
    ASSERT_GE(static_cast<std::int64_t>(records.size()), max_acked + 1);
    for (std::size_t i = 0; i < records.size(); ++i) {
        ASSERT_EQ(records[i].offset, static_cast<std::int64_t>(i));
        ASSERT_EQ(records[i].value, value_for(static_cast<std::int64_t>(i)));
    }
    // The log continues right after the last whole record.
    auto next = produce_sync(*log, "t", "k", "after");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, static_cast<std::int64_t>(records.size()));
}

// Stops the log cleanly after `count` records of t/0 and returns the last segment file.
std::filesystem::path write_records(const std::filesystem::path& dir, int count) {
    auto log = open_log(small_log_config(dir));
    EXPECT_NE(log, nullptr);
    EXPECT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    for (int i = 0; i < count; ++i) {
        EXPECT_TRUE(produce_sync(*log, "t", "k", value_for(i)));
    }
    log.reset();
    return segment_files(dir, "t", 0).back();
}

TEST(embedded_log_recovery, nothing_after_a_corrupt_record_comes_back) {
    temp_dir dir;
    const auto last = write_records(dir.path(), 30);
    // A whole frame with a bad CRC, then a perfectly valid one: the valid one is after the
    // tear and must not reappear.
    std::string tail;
    log_format::append_record(tail, 30, 0, "k", "corrupt", {});
    tail[tail.size() - 1] ^= 0x01;
    log_format::append_record(tail, 31, 0, "k", "after-the-tear", {});
    append_bytes(last, tail);
    const auto size_before = std::filesystem::file_size(last);

    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    EXPECT_LT(std::filesystem::file_size(last), size_before) << "the tail was cut";
    // The active segment's bad tail is a torn write, not damage: nothing is quarantined.
    EXPECT_EQ(log->log_status().quarantined_segments, 0u);
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "log" / "quarantine"));
    auto records = read_partition(*log, {"t", 0});
    ASSERT_EQ(records.size(), 30u);
    EXPECT_EQ(records.back().value, value_for(29));
    auto next = produce_sync(*log, "t", "k", "new");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, 30);
    records = read_partition(*log, {"t", 0}, 30);
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].value, "new");
}

// Damage inside a closed segment is not a torn write: the file is moved to quarantine (kept
// for inspection), its good prefix stays readable, the records after the damage in that segment
// are lost, and every later segment is read as before. Loud and counted, never silent.
TEST(embedded_log_recovery, a_corrupt_closed_segment_is_quarantined_and_reading_goes_on) {
    temp_dir dir;
    write_records(dir.path(), 60);
    const auto files = segment_files(dir.path(), "t", 0);
    ASSERT_GE(files.size(), 3u);
    const auto damaged = files[0];
    const auto original_size = std::filesystem::file_size(damaged);
    // Flip one byte in the middle of the first (closed) segment: one record's CRC fails.
    {
        std::fstream f(damaged, std::ios::binary | std::ios::in | std::ios::out);
        f.seekg(static_cast<std::streamoff>(original_size / 2));
        char c = 0;
        f.read(&c, 1);
        f.seekp(static_cast<std::streamoff>(original_size / 2));
        c = static_cast<char>(c ^ 0x40);
        f.write(&c, 1);
        ASSERT_TRUE(f.good());
    }
    const std::int64_t second_base = std::stoll(files[1].stem().string());

    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->log_status().quarantined_segments, 1u);
    // The damaged file, whole, is in quarantine/<topic>/<partition>/.
    const auto quarantine = dir.path() / "log" / "quarantine" / "t" / "0";
    ASSERT_TRUE(std::filesystem::is_directory(quarantine));
    std::vector<std::filesystem::path> moved;
    for (const auto& entry : std::filesystem::directory_iterator(quarantine)) {
        moved.push_back(entry.path());
    }
    ASSERT_EQ(moved.size(), 1u);
    EXPECT_EQ(std::filesystem::file_size(moved[0]), original_size);
    EXPECT_TRUE(moved[0].filename().string().starts_with(files[0].stem().string()));
    // In place: the good prefix only.
    ASSERT_TRUE(std::filesystem::exists(damaged));
    EXPECT_LT(std::filesystem::file_size(damaged), original_size / 2 + 1);

    const auto records = read_partition(*log, {"t", 0});
    std::set<std::int64_t> offsets;
    for (const auto& record : records) {
        EXPECT_EQ(record.value, value_for(record.offset));
        offsets.insert(record.offset);
    }
    EXPECT_TRUE(offsets.contains(0)) << "the prefix before the damage is kept";
    for (std::int64_t i = second_base; i < 60; ++i) {
        EXPECT_TRUE(offsets.contains(i)) << "offset " << i << " of a later segment is missing";
    }
    EXPECT_LT(offsets.size(), 60u) << "the damaged record cannot have come back";
    // The log goes on at the end.
    auto next = produce_sync(*log, "t", "k", "new");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, 60);

    // The next start finds a clean log: nothing more to quarantine.
    log.reset();
    log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(log->log_status().quarantined_segments, 0u);
    EXPECT_EQ(read_partition(*log, {"t", 0}).size(), offsets.size() + 1);
}

TEST(embedded_log_recovery, a_zero_filled_tail_is_cut) {
    temp_dir dir;
    const auto last = write_records(dir.path(), 10);
    append_bytes(last, std::string(4096, '\0'));  // what a file system may show after a crash
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    EXPECT_EQ(read_partition(*log, {"t", 0}).size(), 10u);
    auto next = produce_sync(*log, "t", "k", "new");
    ASSERT_TRUE(next);
    EXPECT_EQ(next->offset, 10);
}

TEST(embedded_log_recovery, committed_offsets_survive_with_a_torn_journal_tail) {
    temp_dir dir;
    {
        auto log = open_log(small_log_config(dir.path()));
        ASSERT_NE(log, nullptr);
        ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 2}));
        for (int i = 0; i < 60; ++i) {
            ASSERT_TRUE(produce_sync(*log, "t", "k", value_for(i), 0));
            ASSERT_TRUE(produce_sync(*log, "t", "k", value_for(i), 1));
        }
        auto consumer = log->create_consumer(subscription("g", {"t"}));
        ASSERT_TRUE(consumer);
        for (int i = 1; i <= 50; ++i) {  // many commits of the same keys: the last one wins
            ASSERT_TRUE((*consumer)->commit({{{"t", 0}, i}, {{"t", 1}, 5 + i}}));
        }
    }
    append_bytes(dir.path() / "log" / "offsets.journal",
                 std::string("\x20\x00\x00\x00garbage", 11));
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    auto consumer = log->create_consumer(manual({{"t", 0}, {"t", 1}}, "g"));
    ASSERT_TRUE(consumer);
    std::map<std::int32_t, std::int64_t> first;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (first.size() < 2 && std::chrono::steady_clock::now() < until) {
        auto records = (*consumer)->poll(std::chrono::milliseconds(100));
        ASSERT_TRUE(records);
        for (const auto& record : *records) {
            first.emplace(record.partition, record.offset);
        }
    }
    EXPECT_EQ(first[0], 50);
    EXPECT_EQ(first[1], 55);
    // The journal accepts new commits after the cut.
    EXPECT_TRUE((*consumer)->commit({{{"t", 0}, 51}}));
}

TEST(embedded_log_recovery, an_interrupted_compaction_swap_is_finished) {
    temp_dir dir;
    write_records(dir.path(), 100);
    const auto files = segment_files(dir.path(), "t", 0);
    ASSERT_GE(files.size(), 3u);
    // As if compaction had merged the first two segments (keeping everything) and crashed
    // after publishing the .swap file: the merged output is the concatenation.
    std::string merged;
    for (std::size_t i = 0; i < 2; ++i) {
        std::ifstream in(files[i], std::ios::binary);
        merged.append(std::istreambuf_iterator<char>(in), {});
    }
    const std::string first = files[0].stem().string();
    const std::string end = files[2].stem().string();
    {
        std::ofstream out(files[0].parent_path() / (first + "-" + end + ".swap"), std::ios::binary);
        out << merged;
    }
    // And an unfinished output of another pass that never reached its commit point.
    { std::ofstream out(files[0].parent_path() / (end + ".cleaned"), std::ios::binary); }

    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    const auto after = segment_files(dir.path(), "t", 0);
    EXPECT_EQ(after.size(), files.size() - 1);
    EXPECT_FALSE(std::filesystem::exists(files[0].parent_path() / (end + ".cleaned")));
    const auto records = read_partition(*log, {"t", 0});
    ASSERT_EQ(records.size(), 100u);
    for (std::size_t i = 0; i < records.size(); ++i) {
        EXPECT_EQ(records[i].offset, static_cast<std::int64_t>(i));
    }
}

TEST(embedded_log_recovery, a_half_created_topic_is_dropped) {
    temp_dir dir;
    write_records(dir.path(), 1);
    std::filesystem::create_directories(dir.path() / "log" / "topics" / "half" / "0");
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    EXPECT_FALSE(log->partition_count("half"));
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "log" / "topics" / "half"));
    auto count = log->partition_count("t");
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 1);
}

TEST(embedded_log_recovery, topic_settings_and_odd_names_survive_a_restart) {
    temp_dir dir;
    const std::string odd = "msg.app.shared.a/+/#";
    {
        auto log = open_log(small_log_config(dir.path()));
        ASSERT_NE(log, nullptr);
        ASSERT_TRUE(log->create_topic({.name = odd,
                                       .partitions = 3,
                                       .retention_ms = 1234,
                                       .retention_bytes = 5678,
                                       .compacted = true}));
        ASSERT_TRUE(log->create_topic({.name = ".hidden", .partitions = 1}));
        ASSERT_TRUE(produce_sync(*log, odd, "k", "v", 2));
    }
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    auto count = log->partition_count(odd);
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 3);
    EXPECT_TRUE(log->partition_count(".hidden"));
    const auto records = read_partition(*log, {odd, 2});
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].topic, odd);
}

TEST(embedded_log_recovery, one_log_per_directory) {
    temp_dir dir;
    auto first = open_log(small_log_config(dir.path()));
    ASSERT_NE(first, nullptr);
    auto second = embedded_message_log::open(small_log_config(dir.path()));
    ASSERT_FALSE(second);
    EXPECT_EQ(second.error(), std::errc::device_or_resource_busy);
    first->stop();
    EXPECT_TRUE(embedded_message_log::open(small_log_config(dir.path())));
}

// Reading a long partition from offset 0 goes through the sparse index and pread, segment
// after segment, with a small buffer; a seek lands on the exact record.
TEST(embedded_log_recovery, a_long_partition_reads_back_from_zero_after_restart) {
    temp_dir dir;
    auto config = small_log_config(dir.path());
    config.segment_bytes = 64 * 1024;
    config.fetch_buffer_bytes = 4096;
    constexpr int count = 20000;
    {
        auto log = open_log(config);
        ASSERT_NE(log, nullptr);
        ASSERT_TRUE(log->create_topic({.name = "big", .partitions = 1}));
        for (int i = 0; i < count; ++i) {
            log->produce("big", "k", value_for(i) + std::string(80, 'x'), {},
                         [](result<produce_ack> ack) { ASSERT_TRUE(ack); });
        }
        ASSERT_TRUE(log->flush(std::chrono::seconds(60)));
    }
    EXPECT_GT(segment_files(dir.path(), "big", 0).size(), 20u);
    auto log = open_log(config);
    ASSERT_NE(log, nullptr);
    const auto records = read_partition(*log, {"big", 0});
    ASSERT_EQ(records.size(), static_cast<std::size_t>(count));
    for (int i = 0; i < count; i += 997) {
        EXPECT_EQ(records[i].offset, i);
        EXPECT_EQ(records[i].value, value_for(i) + std::string(80, 'x'));
    }
    const auto middle = read_partition(*log, {"big", 0}, 12345);
    ASSERT_EQ(middle.size(), static_cast<std::size_t>(count - 12345));
    EXPECT_EQ(middle.front().offset, 12345);
    EXPECT_EQ(middle.front().value, value_for(12345) + std::string(80, 'x'));
}

}  // namespace
}  // namespace starling::testing
