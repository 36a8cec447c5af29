// Consumer behaviour of the embedded log beyond the port contract: what a group member may
// commit, assignment following topic creation and deletion, out-of-range positions, and
// consumers that outlive the log.

#include "unit/adapters/embedded_log/embedded_log_test_support.h"

#include <set>

namespace starling::testing {
namespace {

std::unique_ptr<log_consumer> member(message_log& log, const std::string& group,
                                     std::vector<std::string> topics) {
    auto consumer = log.create_consumer(subscription(group, std::move(topics)));
    EXPECT_TRUE(consumer) << consumer.error().message();
    return consumer ? std::move(*consumer) : nullptr;
}

TEST(embedded_log_group, a_member_cannot_commit_a_partition_it_does_not_own) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 2}));
    auto a = member(*log, "g", {"t"});
    auto b = member(*log, "g", {"t"});
    ASSERT_TRUE(a && b);
    ASSERT_EQ(a->assignment().size(), 1u);
    ASSERT_EQ(b->assignment().size(), 1u);
    const auto theirs = b->assignment().front();
    auto refused = a->commit({{theirs, 1}});
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), log_errc::not_assigned);
    EXPECT_TRUE(b->commit({{theirs, 0}}));
    auto negative = b->commit({{theirs, -1}});
    ASSERT_FALSE(negative);
    EXPECT_EQ(negative.error(), std::errc::invalid_argument);
}

TEST(embedded_log_group, assignment_follows_topic_creation_and_deletion) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    auto consumer = member(*log, "g", {"later", "other"});
    ASSERT_NE(consumer, nullptr);
    EXPECT_TRUE(consumer->assignment().empty());
    ASSERT_TRUE(log->create_topic({.name = "later", .partitions = 3}));
    EXPECT_EQ(consumer->assignment().size(), 3u);
    ASSERT_TRUE(produce_sync(*log, "later", "k", "v"));
    auto records = consumer->poll(std::chrono::seconds(10));
    ASSERT_TRUE(records);
    EXPECT_EQ(records->size(), 1u);
    ASSERT_TRUE(log->delete_topic("later"));
    EXPECT_TRUE(consumer->assignment().empty());
}

TEST(embedded_log_group, many_single_partition_topics_spread_over_members) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    std::vector<std::string> topics;
    for (int i = 0; i < 6; ++i) {
        topics.push_back("app-" + std::to_string(i));
        ASSERT_TRUE(log->create_topic({.name = topics.back(), .partitions = 1}));
    }
    auto a = member(*log, "g", topics);
    auto b = member(*log, "g", topics);
    auto c = member(*log, "g", topics);
    ASSERT_TRUE(a && b && c);
    EXPECT_EQ(a->assignment().size(), 2u);
    EXPECT_EQ(b->assignment().size(), 2u);
    EXPECT_EQ(c->assignment().size(), 2u);
}

TEST(embedded_log_group, a_position_past_the_end_resets_by_policy) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(produce_sync(*log, "t", "k", "v" + std::to_string(i)));
    }
    auto consumer = log->create_consumer(manual({{"t", 0}}));
    ASSERT_TRUE(consumer);
    ASSERT_TRUE((*consumer)->seek({"t", 0}, 1000));
    auto records = (*consumer)->poll(std::chrono::seconds(10));
    ASSERT_TRUE(records);
    ASSERT_EQ(records->size(), 3u);
    EXPECT_EQ(records->front().offset, 0);
    auto unassigned = (*consumer)->seek({"t", 1}, 0);
    ASSERT_FALSE(unassigned);
    EXPECT_EQ(unassigned.error(), log_errc::not_assigned);
}

TEST(embedded_log_group, invalid_specs_are_refused) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    EXPECT_FALSE(log->create_consumer(subscription("", {"t"})));  // subscription without a group
    EXPECT_FALSE(log->create_consumer([] {
        auto spec = subscription("g", {"t"});
        spec.assignment = {{"t", 0}};
        return spec;
    }()));
    auto missing = log->create_consumer(manual({{"t", 5}}));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error(), log_errc::unknown_partition);
    auto no_group = log->create_consumer(manual({{"t", 0}}));
    ASSERT_TRUE(no_group);
    EXPECT_FALSE((*no_group)->commit({{{"t", 0}, 0}}));  // nothing to commit under
    EXPECT_FALSE(log->create_topic({.name = "", .partitions = 1}));
    EXPECT_FALSE(log->create_topic({.name = "zero", .partitions = 0}));
}

TEST(embedded_log_group, closed_consumers_and_consumers_of_a_stopped_log_fail_cleanly) {
    temp_dir dir;
    auto log = open_log(small_log_config(dir.path()));
    ASSERT_NE(log, nullptr);
    ASSERT_TRUE(log->create_topic({.name = "t", .partitions = 1}));
    auto closed = member(*log, "g", {"t"});
    auto survivor = member(*log, "g2", {"t"});
    ASSERT_TRUE(closed && survivor);
    closed->close();
    closed->close();
    EXPECT_TRUE(closed->assignment().empty());
    auto after_close = closed->poll(std::chrono::milliseconds(10));
    ASSERT_FALSE(after_close);
    EXPECT_EQ(after_close.error(), log_errc::consumer_closed);

    log.reset();  // the consumer outlives the log
    auto after_stop = survivor->poll(std::chrono::milliseconds(10));
    ASSERT_FALSE(after_stop);
    EXPECT_EQ(after_stop.error(), log_errc::stopped);
    EXPECT_FALSE(survivor->commit({{{"t", 0}, 0}}));
    // The directory is free again even though a consumer still holds the old engine.
    EXPECT_TRUE(embedded_message_log::open(small_log_config(dir.path())));
}

}  // namespace
}  // namespace starling::testing
