// The embedded log's record framing and checksum (src/adapters/embedded/log_format.h).

#include "adapters/embedded/log_crc32c.h"
#include "adapters/embedded/log_format.h"

#include <gtest/gtest.h>

#include <string>

namespace starling::adapters::embedded {
namespace {

using log_format::parse_status;

TEST(embedded_log_format, crc32c_matches_the_standard_check_value) {
    EXPECT_EQ(crc32c("123456789", 9), 0xe3069283U);
    EXPECT_EQ(crc32c("", 0), 0U);
    // Long input exercises the 8-byte path and the byte tail together.
    const std::string zeros(32, '\0');
    EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aaU);  // RFC 3720 B.4
}

TEST(embedded_log_format, record_round_trips_with_headers) {
    const std::vector<log_header> headers{{"a", "1"}, {"", ""}, {"b", std::string("\0z", 2)}};
    std::string out;
    log_format::append_record(out, 42, 1700000000123, "key", std::string("v\0l", 3), headers);
    EXPECT_EQ(out.size(), log_format::record_frame_size("key", std::string("v\0l", 3), headers));

    log_format::record_view view;
    std::size_t frame_size = 0;
    ASSERT_EQ(log_format::parse_record(out.data(), out.size(), view, frame_size), parse_status::ok);
    EXPECT_EQ(frame_size, out.size());
    log_record record;
    log_format::materialize(view, record);
    EXPECT_EQ(record.offset, 42);
    EXPECT_EQ(record.timestamp_ms, 1700000000123);
    EXPECT_EQ(record.key, "key");
    EXPECT_EQ(record.value, std::string("v\0l", 3));
    EXPECT_EQ(record.headers, headers);
}

TEST(embedded_log_format, integers_are_little_endian_on_disk) {
    std::string out;
    log_format::append_record(out, 0x0102030405060708, 0, "", "", {});
    // frame: u32 length, u32 crc, then body: u8 version, u8 attributes, i64 offset
    EXPECT_EQ(static_cast<unsigned char>(out[0]), log_format::record_fixed_bytes);
    EXPECT_EQ(out[8], 1);
    EXPECT_EQ(out[10], 0x08);
    EXPECT_EQ(out[17], 0x01);
}

TEST(embedded_log_format, a_cut_frame_is_incomplete_and_a_flipped_bit_corrupt) {
    std::string out;
    log_format::append_record(out, 7, 0, "k", "value", {});
    log_format::record_view view;
    std::size_t frame_size = 0;
    EXPECT_EQ(log_format::parse_record(out.data(), 5, view, frame_size), parse_status::incomplete);
    EXPECT_EQ(log_format::parse_record(out.data(), out.size() - 1, view, frame_size),
              parse_status::incomplete);
    EXPECT_EQ(frame_size, out.size());
    for (std::size_t i = 4; i < out.size(); ++i) {
        std::string bad = out;
        bad[i] = static_cast<char>(bad[i] ^ 0x10);
        EXPECT_EQ(log_format::parse_record(bad.data(), bad.size(), view, frame_size),
                  parse_status::corrupt)
            << "byte " << i;
    }
    const std::string zeros(64, '\0');
    EXPECT_EQ(log_format::parse_record(zeros.data(), zeros.size(), view, frame_size),
              parse_status::corrupt);
}

TEST(embedded_log_format, header_lengths_past_the_body_are_corrupt) {
    // A body whose CRC is right but whose header block claims more bytes than it has.
    std::string out;
    const std::size_t frame = log_format::begin_frame(out);
    std::string body(log_format::record_fixed_bytes, '\0');
    body[0] = 1;
    log_format::put_u32(body.data() + 26, 1);  // one header...
    body += std::string(8, '\0');
    log_format::put_u32(body.data() + log_format::record_fixed_bytes, 100);  // ...of 100 bytes
    out += body;
    log_format::finish_frame(out, frame);
    log_format::record_view view;
    std::size_t frame_size = 0;
    EXPECT_EQ(log_format::parse_record(out.data(), out.size(), view, frame_size),
              parse_status::corrupt);
}

}  // namespace
}  // namespace starling::adapters::embedded
