// libFuzzer target for topic validation, shared-subscription parsing, UTF-8 validation and the
// reference matcher.
//
// Input: any bytes. The whole input is validated as a topic name, a topic filter and UTF-8;
// split at its first NUL byte it is also a (filter, topic) pair for matching.
//
// Properties checked (an abort is a finding): is_valid_utf8 agrees with a straightforward
// code-point decoder; topic_matches agrees with a level-by-level recursive matcher; a valid
// name is a valid filter (unless shared) and matches itself; a parsed shared subscription has a
// valid group and filter.

#include "mqtt/topic.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace starling::mqtt;

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_topic invariant violated: %s\n", what);
        std::abort();
    }
}

// Reference UTF-8 check by decoding code points one by one.
bool reference_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t len = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            len = 1;
            cp = c;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1Fu;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0Fu;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07u;
        } else {
            return false;
        }
        if (i + len > s.size()) {
            return false;
        }
        for (std::size_t k = 1; k < len; ++k) {
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (cc & 0x3Fu);
        }
        static constexpr std::uint32_t min_for_length[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_length[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ||
            cp == 0) {
            return false;
        }
        i += len;
    }
    return true;
}

std::vector<std::string_view> levels(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    for (;;) {
        std::size_t slash = s.find('/', start);
        if (slash == std::string_view::npos) {
            out.push_back(s.substr(start));
            return out;
        }
        out.push_back(s.substr(start, slash - start));
        start = slash + 1;
    }
}

bool reference_match(const std::vector<std::string_view>& f, const std::vector<std::string_view>& t,
                     std::size_t fi, std::size_t ti) {
    if (fi == f.size()) {
        return ti == t.size();
    }
    if (f[fi] == "#") {
        return true;
    }
    if (ti == t.size()) {
        return false;
    }
    if (f[fi] == "+" || f[fi] == t[ti]) {
        return reference_match(f, t, fi + 1, ti + 1);
    }
    return false;
}

bool reference_matches(std::string_view filter, std::string_view topic) {
    if (topic.starts_with('$') && (filter.starts_with('+') || filter.starts_with('#'))) {
        return false;
    }
    return reference_match(levels(filter), levels(topic), 0, 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);

    const bool utf8 = is_valid_utf8(input);
    check(utf8 == reference_utf8(input), "is_valid_utf8 disagrees with the reference");
    if (utf8) {
        check(is_well_formed_utf8(input), "valid MQTT UTF-8 is not well-formed UTF-8");
    }

    const reason_code name = validate_topic_name(input);
    const reason_code filter = validate_topic_filter(input);
    check(name == reason_code::success || name == reason_code::topic_name_invalid,
          "validate_topic_name returned an unexpected code");
    check(filter == reason_code::success || filter == reason_code::topic_filter_invalid,
          "validate_topic_filter returned an unexpected code");
    if (name == reason_code::success) {
        check(utf8, "valid name with invalid UTF-8");
        check(topic_matches(input, input), "valid name does not match itself");
        if (!is_shared(input)) {
            check(filter == reason_code::success, "valid name is not a valid filter");
        }
    }
    if (auto shared = parse_shared(input)) {
        check(
            !shared->group.empty() && shared->group.find_first_of("/+#") == std::string_view::npos,
            "invalid share name accepted");
        check(!shared->filter.empty(), "empty shared filter accepted");
        if (utf8 && size <= 65'535) {
            check(filter == reason_code::success, "parsed share is not a valid filter");
            // The inner filter is a plain filter even when it starts with "$share/" itself;
            // prefixing a level keeps it from being read as a share again.
            check(validate_topic_filter("x/" + std::string(shared->filter)) == reason_code::success,
                  "shared filter part is invalid");
        }
    } else if (is_shared(input)) {
        check(filter == reason_code::topic_filter_invalid, "invalid share accepted as filter");
    }

    const std::size_t nul = input.find('\0');
    if (nul != std::string_view::npos) {
        std::string_view f = input.substr(0, nul);
        std::string_view t = input.substr(nul + 1);
        if (validate_topic_filter(f) == reason_code::success && !is_shared(f) &&
            validate_topic_name(t) == reason_code::success) {
            check(topic_matches(f, t) == reference_matches(f, t),
                  "topic_matches disagrees with the reference");
        }
    }
    return 0;
}
