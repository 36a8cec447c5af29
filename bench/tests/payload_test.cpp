#include "bench/payload.h"

#include <gtest/gtest.h>

#include <string>

namespace starling::bench {
namespace {

TEST(payload, header_round_trips) {
    std::string buf(64, 'x');
    const payload_header h{.run_id = 0xdeadbeef,
                           .step = 7,
                           .publisher = 999,
                           .sequence = 0x0102030405060708ULL,
                           .send_ns = 1234567890123ULL};
    write_header(buf.data(), h);
    auto back = read_header(buf.data(), buf.size());
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, h);
    EXPECT_EQ(buf[header_size], 'x');  // the filler is untouched
}

TEST(payload, layout_is_little_endian_with_magic_first) {
    std::string buf(header_size, '\0');
    write_header(buf.data(), {.run_id = 1, .step = 2, .publisher = 3, .sequence = 4, .send_ns = 5});
    EXPECT_EQ(buf.substr(0, 4), "SBN1");
    EXPECT_EQ(static_cast<unsigned char>(buf[4]), 1u);
    EXPECT_EQ(static_cast<unsigned char>(buf[8]), 2u);
    EXPECT_EQ(static_cast<unsigned char>(buf[12]), 3u);
    EXPECT_EQ(static_cast<unsigned char>(buf[16]), 4u);
    EXPECT_EQ(static_cast<unsigned char>(buf[24]), 5u);
}

TEST(payload, foreign_or_short_payloads_are_not_benchmark_messages) {
    std::string short_one(header_size - 1, '\0');
    EXPECT_FALSE(read_header(short_one.data(), short_one.size()).has_value());
    std::string foreign(64, 'a');
    EXPECT_FALSE(read_header(foreign.data(), foreign.size()).has_value());
}

TEST(payload, monotonic_clock_does_not_go_back) {
    const auto a = monotonic_ns();
    const auto b = monotonic_ns();
    EXPECT_GT(a, 0u);
    EXPECT_GE(b, a);
}

}  // namespace
}  // namespace starling::bench
