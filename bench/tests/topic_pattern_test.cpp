#include "bench/topic_pattern.h"

#include <gtest/gtest.h>

namespace starling::bench {
namespace {

std::string expand(std::string_view pattern, topic_vars vars) {
    auto p = topic_pattern::parse(pattern);
    EXPECT_TRUE(p.has_value()) << pattern;
    return p ? p->expand(vars) : std::string();
}

TEST(topic_pattern, substitutes_index_and_client_id) {
    EXPECT_EQ(expand("bench/%i/data", {.index = 7}), "bench/7/data");
    EXPECT_EQ(expand("c/%c", {.index = 1, .client_id = "sb-p1"}), "c/sb-p1");
    EXPECT_EQ(expand("%i%i", {.index = 12}), "1212");
}

TEST(topic_pattern, groups_clients_by_group_size) {
    topic_vars v{.index = 23, .group_size = 10};
    EXPECT_EQ(expand("$share/g%g/t/#", v), "$share/g2/t/#");
    EXPECT_EQ(expand("m%m", v), "m3");
    // A group size of 0 behaves as 1 instead of dividing by zero.
    EXPECT_EQ(expand("%g-%m", {.index = 5, .group_size = 0}), "5-0");
}

TEST(topic_pattern, run_id_and_literal_percent) {
    EXPECT_EQ(expand("bench/%r/x", {.run_id = "abc123"}), "bench/abc123/x");
    EXPECT_EQ(expand("100%%/%i", {.index = 3}), "100%/3");
}

TEST(topic_pattern, constant_patterns_are_recognized) {
    EXPECT_TRUE(topic_pattern::parse("a/b/#")->is_constant());
    EXPECT_TRUE(topic_pattern::parse("a/%r/#")->is_constant());
    EXPECT_FALSE(topic_pattern::parse("a/%i")->is_constant());
    EXPECT_FALSE(topic_pattern::parse("a/%m")->is_constant());
}

TEST(topic_pattern, unknown_placeholders_are_rejected_at_parse_time) {
    EXPECT_FALSE(topic_pattern::parse("bench/%x").has_value());
    EXPECT_FALSE(topic_pattern::parse("bench/%").has_value());
    EXPECT_EQ(topic_pattern::parse("%q").error(),
              std::make_error_code(std::errc::invalid_argument));
}

TEST(topic_pattern, keeps_its_text) {
    EXPECT_EQ(topic_pattern::parse("a/%i")->text(), "a/%i");
    EXPECT_EQ(expand("", {}), "");
}

}  // namespace
}  // namespace starling::bench
