#include "base/log.h"

#include <fmt/chrono.h>
#include <spdlog/formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <array>
#include <chrono>
#include <memory>

namespace starling::base {

bool set_log_level(std::string_view level) {
    auto parsed = spdlog::level::from_str(std::string(level));
    if (parsed == spdlog::level::off && level != "off") {
        return false;
    }
    spdlog::set_level(parsed);
    return true;
}

std::string log_level() {
    // spdlog names warn "warning" and critical "critical"; answer with the names the config and
    // the API accept (from_str takes both spellings of warn).
    const auto level = spdlog::get_level();
    if (level == spdlog::level::warn) {
        return "warn";
    }
    const auto name = spdlog::level::to_string_view(level);
    return std::string(name.data(), name.size());
}

std::vector<std::string> log_level_names() {
    return {"trace", "debug", "info", "warn", "error", "critical", "off"};
}

namespace {

constexpr std::string_view text_pattern = "%Y-%m-%dT%H:%M:%S.%e%z %^%-5l%$ [%t] %v";

// The length of the valid UTF-8 sequence at text[i], 0 when the bytes there are not one
// (overlong forms, surrogates and code points past U+10FFFF are invalid too).
std::size_t utf8_sequence(std::string_view text, std::size_t i) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const auto c = byte(0);
    std::size_t length = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;  // the valid range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        length = 3;
        low = c == 0xE0 ? 0xA0 : 0x80;
        high = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        length = 4;
        low = c == 0xF0 ? 0x90 : 0x80;
        high = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (i + length > text.size() || byte(1) < low || byte(1) > high) {
        return 0;
    }
    for (std::size_t k = 2; k < length; ++k) {
        if (byte(k) < 0x80 || byte(k) > 0xBF) {
            return 0;
        }
    }
    return length;
}

class json_formatter final : public spdlog::formatter {
  public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        line_.clear();
        const auto since_epoch = msg.time.time_since_epoch();
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
        const auto millis =
            std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
        line_ += fmt::format("{{\"time\":\"{:%Y-%m-%dT%H:%M:%S}.{:03}Z\",\"level\":\"",
                             fmt::gmtime(static_cast<std::time_t>(seconds.count())), millis);
        if (msg.level == spdlog::level::warn) {
            line_ += "warn";  // the name the configuration and the API use, not "warning"
        } else {
            const auto name = spdlog::level::to_string_view(msg.level);
            line_.append(name.data(), name.size());
        }
        line_ += fmt::format("\",\"thread\":{},\"message\":\"", msg.thread_id);
        append_json_escaped(std::string_view(msg.payload.data(), msg.payload.size()), line_);
        line_ += "\"}\n";
        dest.append(line_.data(), line_.data() + line_.size());
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<json_formatter>();
    }

  private:
    std::string line_;
};

}  // namespace

void append_json_escaped(std::string_view text, std::string& out) {
    static constexpr std::array<char, 16> hex{'0', '1', '2', '3', '4', '5', '6', '7',
                                              '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            out += "\\u00";
            out += hex[c >> 4];
            out += hex[c & 0xF];
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (const auto length = utf8_sequence(text, i); length > 0) {
            out.append(text.substr(i, length));
            i += length;
            continue;
        } else {
            out += "\\ufffd";
        }
        ++i;
    }
}

void set_log_format(log_format format) {
    if (format == log_format::json) {
        spdlog::set_formatter(std::make_unique<json_formatter>());
    } else {
        spdlog::set_pattern(std::string(text_pattern));
    }
}

void init_logging(std::string_view level) {
    auto logger = spdlog::stderr_color_mt("starling");
    spdlog::set_default_logger(logger);
    spdlog::set_pattern(std::string(text_pattern));
    set_log_level(level);
}

}  // namespace starling::base
