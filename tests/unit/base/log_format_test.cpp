#include "base/log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/ostream_sink.h>

#include <chrono>
#include <memory>
#include <sstream>
#include <string>

namespace starling::base {
namespace {

std::string escaped(std::string_view text) {
    std::string out;
    append_json_escaped(text, out);
    return out;
}

TEST(json_escaping, quotes_backslashes_and_controls) {
    EXPECT_EQ(escaped(R"(say "hi" \ bye)"), R"(say \"hi\" \\ bye)");
    EXPECT_EQ(escaped("a\nb\rc\td"), R"(a\nb\rc\td)");
    EXPECT_EQ(escaped(std::string("\x01\x1f\x7f", 3)), R"(\u0001\u001f\u007f)");
    EXPECT_EQ(escaped(std::string("nul\0end", 7)), R"(nul\u0000end)");
}

TEST(json_escaping, valid_utf8_is_kept_and_invalid_bytes_are_replaced) {
    EXPECT_EQ(escaped("température ✓ 🐦"), "température ✓ 🐦");
    EXPECT_EQ(escaped("bad \xff byte"), R"(bad \ufffd byte)");
    EXPECT_EQ(escaped("\xc3"), R"(\ufffd)");                                // truncated sequence
    EXPECT_EQ(escaped("\xc0\xaf"), R"(\ufffd\ufffd)");                      // overlong '/'
    EXPECT_EQ(escaped("\xed\xa0\x80"), R"(\ufffd\ufffd\ufffd)");            // a UTF-16 surrogate
    EXPECT_EQ(escaped("\xf4\x90\x80\x80"), R"(\ufffd\ufffd\ufffd\ufffd)");  // past U+10FFFF
}

// Every byte sequence gives a line that a JSON parser accepts, and valid text comes back as is.
TEST(json_escaping, any_bytes_give_parseable_json) {
    std::string all;
    for (int c = 0; c < 256; ++c) {
        all += static_cast<char>(c);
        all += static_cast<char>(255 - c);
    }
    const auto parsed = nlohmann::json::parse("\"" + escaped(all) + "\"");
    EXPECT_TRUE(parsed.is_string());
    const std::string text = "ünïcødé \"q\" \\ \n";
    EXPECT_EQ(nlohmann::json::parse("\"" + escaped(text) + "\"").get<std::string>(), text);
}

class json_log_lines : public ::testing::Test {
  protected:
    json_log_lines()
        : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)),
          logger_(std::make_shared<spdlog::logger>("json-log-test", sink_)) {
        spdlog::register_logger(logger_);
        set_log_format(log_format::json);
    }
    ~json_log_lines() override {
        set_log_format(log_format::text);
        spdlog::drop("json-log-test");
    }
    std::ostringstream out_;
    std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
    std::shared_ptr<spdlog::logger> logger_;
};

TEST_F(json_log_lines, one_object_per_line_with_time_level_thread_and_message) {
    logger_->warn("client {} sent \"{}\"", "dev\xff", "a\nb");
    logger_->info("second");
    std::istringstream lines(out_.str());
    std::string first;
    std::string second;
    ASSERT_TRUE(std::getline(lines, first));
    ASSERT_TRUE(std::getline(lines, second));
    const auto line = nlohmann::json::parse(first);
    EXPECT_EQ(line["level"], "warn");
    EXPECT_EQ(line["message"], "client dev\xef\xbf\xbd sent \"a\nb\"");
    EXPECT_TRUE(line["thread"].is_number_unsigned());
    // 2026-12-04T15:24:07.123Z, within a minute of now.
    const auto time = line["time"].get<std::string>();
    ASSERT_EQ(time.size(), 24U) << time;
    EXPECT_EQ(time.back(), 'Z');
    std::tm tm{};
    ASSERT_NE(strptime(time.c_str(), "%Y-%m-%dT%H:%M:%S", &tm), nullptr) << time;
    const auto logged = timegm(&tm);
    const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    EXPECT_LE(std::abs(now - logged), 60);
    EXPECT_EQ(nlohmann::json::parse(second)["message"], "second");
}

TEST_F(json_log_lines, text_format_comes_back) {
    set_log_format(log_format::text);
    logger_->info("plain");
    EXPECT_EQ(out_.str().find('{'), std::string::npos) << out_.str();
    EXPECT_NE(out_.str().find("info  ["), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace starling::base
