#include "mqtt/topic.h"

#include <gtest/gtest.h>

#include <string>

namespace starling::mqtt {
namespace {

TEST(utf8, accepts_well_formed_text) {
    EXPECT_TRUE(is_valid_utf8(""));
    EXPECT_TRUE(is_valid_utf8("plain ascii, long enough for the word-at-a-time path"));
    EXPECT_TRUE(is_valid_utf8("gr\xC3\xBC\xC3\x9F"));  // 2-byte
    EXPECT_TRUE(is_valid_utf8("\xE2\x82\xAC"));        // U+20AC
    EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));    // U+1F600
    EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));    // U+10FFFF
    EXPECT_TRUE(is_valid_utf8("\xEF\xBF\xBF"));        // non-character U+FFFF: allowed
    EXPECT_TRUE(is_valid_utf8("\x01\x1F\x7F"));        // control characters: allowed
    EXPECT_TRUE(
        is_valid_utf8("\xEF\xBB\xBF"
                      "bom"));  // BOM is not stripped
}

TEST(utf8, rejects_u0000) {
    EXPECT_FALSE(is_valid_utf8(std::string_view("\0", 1)));
    EXPECT_FALSE(is_valid_utf8(std::string_view("abcdefgh\0ijklmnop", 17)));
    EXPECT_TRUE(is_well_formed_utf8(std::string_view("abcdefgh\0ijklmnop", 17)));
}

TEST(utf8, rejects_surrogates) {
    EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));  // U+D800
    EXPECT_FALSE(is_valid_utf8("\xED\xBF\xBF"));  // U+DFFF
    EXPECT_TRUE(is_valid_utf8("\xED\x9F\xBF"));   // U+D7FF
}

TEST(utf8, rejects_ill_formed_sequences) {
    EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation
    EXPECT_FALSE(is_valid_utf8("\xC0\x80"));          // overlong U+0000
    EXPECT_FALSE(is_valid_utf8("\xC1\xBF"));          // overlong
    EXPECT_FALSE(is_valid_utf8("\xE0\x9F\xBF"));      // overlong 3-byte
    EXPECT_FALSE(is_valid_utf8("\xF0\x8F\xBF\xBF"));  // overlong 4-byte
    EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(is_valid_utf8("\xF5\x80\x80\x80"));
    EXPECT_FALSE(is_valid_utf8("\xFF"));
    EXPECT_FALSE(is_valid_utf8("\xC3"));  // truncated
    EXPECT_FALSE(is_valid_utf8("\xE2\x82"));
    EXPECT_FALSE(is_valid_utf8("\xC3\x28"));  // bad continuation
    EXPECT_FALSE(is_valid_utf8("abcdefg\xE2\x82"));
}

TEST(topic_name, validity) {
    EXPECT_EQ(validate_topic_name("a/b/c"), reason_code::success);
    EXPECT_EQ(validate_topic_name("/"), reason_code::success);
    EXPECT_EQ(validate_topic_name("$SYS/x"), reason_code::success);
    EXPECT_EQ(validate_topic_name(" "), reason_code::success);
    EXPECT_EQ(validate_topic_name(""), reason_code::topic_name_invalid);
    EXPECT_EQ(validate_topic_name("a/+"), reason_code::topic_name_invalid);
    EXPECT_EQ(validate_topic_name("a/#"), reason_code::topic_name_invalid);
    EXPECT_EQ(validate_topic_name("a+b"), reason_code::topic_name_invalid);
    EXPECT_EQ(validate_topic_name("\xC0\x80"), reason_code::topic_name_invalid);
    EXPECT_EQ(validate_topic_name(std::string(65'535, 'a')), reason_code::success);
    EXPECT_EQ(validate_topic_name(std::string(65'536, 'a')), reason_code::topic_name_invalid);
}

TEST(topic_filter, validity) {
    for (std::string_view ok : {"#", "+", "a/b", "a/+/c", "a/#", "+/+", "/+", "+/", "a//b",
                                "$SYS/#", "sport/tennis/+/#", "$share/g/a/#", "$share/g/#"}) {
        EXPECT_EQ(validate_topic_filter(ok), reason_code::success) << ok;
    }
    for (std::string_view bad :
         {"", "a#", "#/a", "a/#/b", "a+", "+a", "a/b+", "##", "++", "$share/", "$share/g",
          "$share/g/", "$share//a", "$share/g+/a", "$share/#/a", "$share/g/a#"}) {
        EXPECT_EQ(validate_topic_filter(bad), reason_code::topic_filter_invalid) << bad;
    }
    EXPECT_EQ(validate_topic_filter("\xED\xA0\x80"), reason_code::topic_filter_invalid);
    EXPECT_EQ(validate_topic_filter(std::string(65'536, 'a')), reason_code::topic_filter_invalid);
}

TEST(shared_subscription, parses_group_and_filter) {
    auto s = parse_shared("$share/group-1/a/b/#");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->group, "group-1");
    EXPECT_EQ(s->filter, "a/b/#");
    EXPECT_FALSE(parse_shared("a/b"));
    EXPECT_FALSE(parse_shared("$share/g"));
    EXPECT_FALSE(parse_shared("$share//a"));
    EXPECT_FALSE(parse_shared("$share/a+b/c"));
    EXPECT_FALSE(parse_shared("$share/g/a/#/b"));
    EXPECT_FALSE(parse_shared("$SHARE/g/a"));  // case-sensitive
    EXPECT_TRUE(is_shared("$share/"));
    EXPECT_FALSE(is_shared("$shared/g/a"));
}

TEST(topic_matches, exact_and_single_level) {
    EXPECT_TRUE(topic_matches("a/b", "a/b"));
    EXPECT_FALSE(topic_matches("a/b", "a/b/c"));
    EXPECT_FALSE(topic_matches("a/b/c", "a/b"));
    EXPECT_TRUE(topic_matches("a/+/c", "a/b/c"));
    EXPECT_TRUE(topic_matches("+/+", "/finance"));
    EXPECT_TRUE(topic_matches("/+", "/finance"));
    EXPECT_FALSE(topic_matches("+", "/finance"));
    EXPECT_TRUE(topic_matches("a/+", "a/"));  // '+' matches an empty level
    EXPECT_FALSE(topic_matches("a/+", "a"));
    EXPECT_FALSE(topic_matches("A/b", "a/b"));  // case-sensitive
}

TEST(topic_matches, multi_level) {
    EXPECT_TRUE(topic_matches("#", "a"));
    EXPECT_TRUE(topic_matches("#", "a/b/c"));
    EXPECT_TRUE(topic_matches("#", "/"));
    EXPECT_TRUE(topic_matches("sport/tennis/player1/#", "sport/tennis/player1"));
    EXPECT_TRUE(topic_matches("sport/tennis/player1/#", "sport/tennis/player1/ranking"));
    EXPECT_TRUE(topic_matches("sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon"));
    EXPECT_TRUE(topic_matches("sport/#", "sport"));
    EXPECT_FALSE(topic_matches("sport/tennis/#", "sport/other"));
    EXPECT_TRUE(topic_matches("a/+/#", "a/b"));
    EXPECT_FALSE(topic_matches("a/+/#", "a"));
}

TEST(topic_matches, wildcards_never_match_dollar_topics_at_the_first_level) {
    EXPECT_FALSE(topic_matches("#", "$SYS/broker"));
    EXPECT_FALSE(topic_matches("+/monitor/Clients", "$SYS/monitor/Clients"));
    EXPECT_TRUE(topic_matches("$SYS/#", "$SYS/monitor/Clients"));
    EXPECT_TRUE(topic_matches("$SYS/monitor/+", "$SYS/monitor/Clients"));
    EXPECT_TRUE(topic_matches("a/#", "a/$b"));  // only the first level is special
}

}  // namespace
}  // namespace starling::mqtt
