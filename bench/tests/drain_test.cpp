#include "bench/drain.h"

#include "bench/report.h"
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace starling::bench {
namespace {

constexpr std::uint64_t ms = 1'000'000;  // ns

drain_subscriber complete_subscriber(std::string name, std::uint64_t n, std::uint64_t done_ns) {
    return drain_subscriber{.name = std::move(name),
                            .expected = n,
                            .received = n,
                            .unique = n,
                            .first_ns = 1000 * ms + 1 * ms,
                            .last_ns = done_ns,
                            .complete_ns = done_ns};
}

TEST(drain, stall_watch_fires_only_after_the_limit_without_change) {
    stall_watch watch(100 * ms, 0);
    EXPECT_FALSE(watch.stalled(0, 10 * ms));   // first sample starts the clock
    EXPECT_FALSE(watch.stalled(0, 110 * ms));  // exactly the limit: not yet
    EXPECT_TRUE(watch.stalled(0, 111 * ms));
    EXPECT_FALSE(watch.stalled(5, 120 * ms));  // progress resets it
    EXPECT_EQ(watch.last_change_ns(), 120 * ms);
    EXPECT_FALSE(watch.stalled(5, 220 * ms));
    EXPECT_TRUE(watch.stalled(5, 221 * ms));
    EXPECT_FALSE(watch.stalled(4, 222 * ms));  // any change is movement, even downwards
}

TEST(drain, tally_of_a_complete_drain_times_the_slowest_subscriber) {
    const std::uint64_t reconnect = 1000 * ms;
    std::vector<drain_subscriber> subs = {
        complete_subscriber("s0", 1000, reconnect + 200 * ms),
        complete_subscriber("s1", 1000, reconnect + 500 * ms),
        complete_subscriber("s2", 1000, reconnect + 300 * ms),
    };
    subs[1].received = 1002;
    subs[1].duplicates = 2;
    subs[2].out_of_order = 7;
    const auto t = tally_drain(subs, reconnect);
    EXPECT_TRUE(t.complete);
    EXPECT_EQ(t.subscribers, 3u);
    EXPECT_EQ(t.subscribers_expecting, 3u);
    EXPECT_EQ(t.subscribers_complete, 3u);
    EXPECT_EQ(t.expected, 3000u);
    EXPECT_EQ(t.delivered, 3000u);
    EXPECT_EQ(t.received, 3002u);
    EXPECT_EQ(t.lost, 0u);
    EXPECT_EQ(t.duplicates, 2u);
    EXPECT_EQ(t.out_of_order, 7u);
    EXPECT_EQ(t.subscribers_with_loss, 0u);
    EXPECT_TRUE(t.worst_subscriber.empty());
    ASSERT_TRUE(t.drain_s);
    EXPECT_DOUBLE_EQ(*t.drain_s, 0.5);
    ASSERT_TRUE(t.drain_rate);
    EXPECT_DOUBLE_EQ(*t.drain_rate, 6000.0);
    EXPECT_DOUBLE_EQ(*t.first_message_s, 0.001);
    EXPECT_DOUBLE_EQ(*t.subscriber_p50_s, 0.3);
    EXPECT_DOUBLE_EQ(*t.subscriber_max_s, 0.5);
}

TEST(drain, tally_of_a_stalled_drain_reports_what_is_missing_and_no_drain_time) {
    const std::uint64_t reconnect = 1000 * ms;
    std::vector<drain_subscriber> subs = {
        complete_subscriber("s0", 2000, reconnect + 100 * ms),
        // Stopped after 1,000 of 2,000 (the tail never came).
        drain_subscriber{.name = "s1",
                         .expected = 2000,
                         .received = 1000,
                         .unique = 1000,
                         .lost = 1000,
                         .first_ns = reconnect + 2 * ms,
                         .last_ns = reconnect + 40 * ms},
        // Nothing at all.
        drain_subscriber{.name = "s2", .expected = 2000, .lost = 2000},
        // Expects nothing (matches no publisher): neither complete nor counted against it.
        drain_subscriber{.name = "s3"},
    };
    const auto t = tally_drain(subs, reconnect);
    EXPECT_FALSE(t.complete);
    EXPECT_EQ(t.subscribers, 4u);
    EXPECT_EQ(t.subscribers_expecting, 3u);
    EXPECT_EQ(t.subscribers_complete, 1u);
    EXPECT_EQ(t.expected, 6000u);
    EXPECT_EQ(t.delivered, 3000u);
    EXPECT_EQ(t.lost, 3000u);
    EXPECT_EQ(t.subscribers_with_loss, 2u);
    EXPECT_EQ(t.worst_subscriber, "s2");
    EXPECT_EQ(t.worst_subscriber_lost, 2000u);
    EXPECT_FALSE(t.drain_s);
    EXPECT_FALSE(t.drain_rate);
    ASSERT_TRUE(t.last_message_s);
    EXPECT_DOUBLE_EQ(*t.last_message_s, 0.1);
    EXPECT_DOUBLE_EQ(*t.first_message_s, 0.001);
}

TEST(drain, tally_with_nothing_expected_is_not_complete) {
    const auto t = tally_drain({drain_subscriber{.name = "s0"}}, 0);
    EXPECT_FALSE(t.complete);
    EXPECT_FALSE(t.drain_s);
    EXPECT_FALSE(t.first_message_s);
}

TEST(drain, summary_holds_what_compare_reads_and_lists_the_missing) {
    const std::uint64_t reconnect = 1000 * ms;
    std::vector<drain_subscriber> subs = {
        complete_subscriber("s0", 1000, reconnect + 100 * ms),
        drain_subscriber{.name = "s1", .expected = 1000, .unique = 400, .lost = 600},
    };
    drain_measurement m;
    m.publishers = 2;
    m.queued_per_publisher = 1000;
    m.published = 2000;
    m.acked = 2000;
    m.publish_s = 0.5;
    m.stalled = true;
    m.stall_limit_s = 5;
    m.broker_cpu_s = 0.7;
    m.memory_queued = process_memory{.rss_kb = 10240, .peak_kb = 10240};
    m.memory_end = process_memory{.rss_kb = 12288, .peak_kb = 20480};
    const auto sum = drain_summary(subs, tally_drain(subs, reconnect), m);
    EXPECT_TRUE(sum["drain_time_s"].is_null());  // stalled: no drain time, no rate
    EXPECT_TRUE(sum["drain_rate"].is_null());
    EXPECT_EQ(sum["lost"].get<std::uint64_t>(), 600u);
    EXPECT_EQ(sum["queued_total"].get<std::uint64_t>(), 2000u);
    EXPECT_DOUBLE_EQ(sum["publish_rate"].get<double>(), 4000.0);
    EXPECT_DOUBLE_EQ(sum["cpu_s_per_million"].get<double>(), 0.7 / 1400.0 * 1e6);
    EXPECT_DOUBLE_EQ(sum["broker_rss_queued_mb"].get<double>(), 10.0);
    EXPECT_DOUBLE_EQ(sum["broker_peak_rss_mb"].get<double>(), 20.0);
    EXPECT_TRUE(sum["stalled"].get<bool>());
    ASSERT_EQ(sum["missing_by_subscriber"].size(), 1u);
    EXPECT_EQ(sum["missing_by_subscriber"][0]["name"], "s1");
    EXPECT_EQ(sum["missing_by_subscriber"][0]["missing"].get<std::uint64_t>(), 600u);

    // The human form says it stalled and names the subscriber (and does not crash on nulls).
    std::FILE* out = std::tmpfile();
    ASSERT_NE(out, nullptr);
    print_drain_summary(out, sum);
    std::rewind(out);
    std::string text;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), out) != nullptr) {
        text += buf;
    }
    std::fclose(out);
    EXPECT_NE(text.find("STALLED"), std::string::npos) << text;
    EXPECT_NE(text.find("s1: 400 of 1,000 delivered, 600 missing"), std::string::npos) << text;
}

TEST(drain, compare_prints_the_drain_rows_with_a_ratio) {
    const auto dir =
        std::filesystem::temp_directory_path() / ("drain-compare-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto write = [&](const std::string& broker, double drain_s, double rate, double cpu_per_m) {
        run_header header;
        header.scenario = "drain";
        header.kind = "drain";
        header.broker = broker;
        nlohmann::json sum{{"drain_time_s", drain_s},
                           {"drain_rate", rate},
                           {"cpu_s_per_million", cpu_per_m},
                           {"lost", 0}};
        const auto path = dir / (broker + "-drain.json");
        std::ofstream(path) << make_result(header, {}, sum, {}).dump();
        return path.string();
    };
    const std::vector<std::string> files = {write("mosquitto", 1.0, 100000, 10),
                                            write("starling", 2.0, 50000, 30)};
    std::FILE* out = std::tmpfile();
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(compare_results(files, out), 0);
    std::rewind(out);
    std::string text;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), out) != nullptr) {
        text += buf;
    }
    std::fclose(out);
    std::filesystem::remove_all(dir);
    // Starling first, Mosquitto second, the ratio last.
    EXPECT_NE(
        text.find("| drain | drain time s (reconnect to last message) | 2.00 | 1.00 | 2.00 |"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("| drained msg/s (all subscribers) | 50,000 | 100,000 | 0.500 |"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("| broker CPU s per 1M delivered | 30.0 | 10.0 | 3.00 |"),
              std::string::npos)
        << text;
}

}  // namespace
}  // namespace starling::bench
