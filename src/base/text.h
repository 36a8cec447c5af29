#pragma once

// Small string helpers shared by the parsers (configuration, HTTP headers, /proc files).

#include <charconv>
#include <optional>
#include <string_view>
#include <system_error>

namespace starling::base {

// `text` without the leading and trailing characters in `blanks` (spaces, tabs and line ends
// by default; HTTP header values and list items pass " \t").
constexpr std::string_view trim(std::string_view text, std::string_view blanks = " \t\r\n") {
    const auto first = text.find_first_not_of(blanks);
    if (first == std::string_view::npos) {
        return {};
    }
    return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

// The whole of `text` as a decimal number; nullopt when any of it is not (no sign for unsigned
// types, no blanks, no trailing characters).
template <class Number>
std::optional<Number> parse_number(std::string_view text) {
    Number value{};
    const auto* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end) {
        return std::nullopt;
    }
    return value;
}

}  // namespace starling::base
