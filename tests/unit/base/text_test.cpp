#include "base/text.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace starling::base {
namespace {

TEST(base_trim, strips_blanks_at_both_ends_only) {
    EXPECT_EQ(trim("  a b \t"), "a b");
    EXPECT_EQ(trim("max\n"), "max");
    EXPECT_EQ(trim("\r\n value \r\n"), "value");
    EXPECT_EQ(trim("x"), "x");
    EXPECT_EQ(trim(""), "");
    EXPECT_EQ(trim(" \t\r\n"), "");
}

TEST(base_trim, custom_blanks_keep_the_others) {
    EXPECT_EQ(trim(" \tmqtt\n\t ", " \t"), "mqtt\n");
    EXPECT_EQ(trim("--x--", "-"), "x");
}

TEST(base_parse_number, whole_text_only) {
    EXPECT_EQ(parse_number<std::uint64_t>("536870912"), 536870912U);
    EXPECT_EQ(parse_number<std::int64_t>("-1"), -1);
    EXPECT_FALSE(parse_number<std::uint64_t>("-1").has_value());
    EXPECT_FALSE(parse_number<std::uint64_t>("12 ").has_value());
    EXPECT_FALSE(parse_number<std::uint64_t>("max").has_value());
    EXPECT_FALSE(parse_number<std::uint64_t>("").has_value());
}

static_assert(trim("  compile time ") == "compile time");

}  // namespace
}  // namespace starling::base
