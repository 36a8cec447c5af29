#pragma once

// Small string helpers shared by the parsers (configuration, HTTP headers, /proc files).

#include <string_view>

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

}  // namespace starling::base
