#include "ratelimit/bandwidth_spec.h"

#include <gtest/gtest.h>

namespace starling::ratelimit {
namespace {

TEST(parse_bandwidths, reads_every_window_in_order) {
    std::string why;
    auto parsed = parse_bandwidths("10:1,300:60", &why);
    ASSERT_TRUE(parsed) << why;
    ASSERT_EQ(parsed->size(), 2u);
    EXPECT_EQ((*parsed)[0].capacity, 10);
    EXPECT_EQ((*parsed)[0].period_seconds, 1);
    EXPECT_EQ((*parsed)[1].capacity, 300);
    EXPECT_EQ((*parsed)[1].period_seconds, 60);
    EXPECT_EQ(to_string(*parsed), "10:1,300:60");
}

TEST(parse_bandwidths, allows_spaces_around_items) {
    std::string why;
    auto parsed = parse_bandwidths(" 5 : 2 , 100:3600 ", &why);
    ASSERT_TRUE(parsed) << why;
    EXPECT_EQ(to_string(*parsed), "5:2,100:3600");
}

TEST(parse_bandwidths, rejects_malformed_values_with_a_reason) {
    for (const char* bad : {"", " ", "10", "10:", ":1", "a:1", "10:b", "0:1", "10:0", "-1:1",
                            "10:1,", "10:1,,5:2", "10:1:2", "10:1,20:1", "1.5:1"}) {
        std::string why;
        EXPECT_FALSE(parse_bandwidths(bad, &why)) << "'" << bad << "'";
        EXPECT_NE(why.find("limit:seconds"), std::string::npos) << why;
    }
}

}  // namespace
}  // namespace starling::ratelimit
