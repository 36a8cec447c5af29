#pragma once

// Brute-force MQTT matching used as the reference the tries are compared against. Written from
// the specification, level by level, with none of the tries' machinery.

#include <string>
#include <string_view>
#include <vector>

namespace starling::routing::test_support {

inline std::vector<std::string_view> split_levels(std::string_view text) {
    std::vector<std::string_view> levels;
    std::size_t start = 0;
    for (;;) {
        const std::size_t slash = text.find('/', start);
        if (slash == std::string_view::npos) {
            levels.push_back(text.substr(start));
            return levels;
        }
        levels.push_back(text.substr(start, slash - start));
        start = slash + 1;
    }
}

inline bool naive_matches(std::string_view filter, std::string_view topic) {
    const auto f = split_levels(filter);
    const auto t = split_levels(topic);
    if (!t[0].empty() && t[0][0] == '$' && (f[0] == "+" || f[0] == "#")) {
        return false;
    }
    for (std::size_t i = 0; i < f.size(); ++i) {
        if (f[i] == "#") {
            return true;  // also matches the parent level: "a/#" matches "a"
        }
        if (i >= t.size()) {
            return false;
        }
        if (f[i] != "+" && f[i] != t[i]) {
            return false;
        }
    }
    return f.size() == t.size();
}

// Every level prefix of `path` ("a/b/c" -> "a", "a/b", "a/b/c"): the trie nodes it needs.
inline std::vector<std::string> level_prefixes(std::string_view path) {
    std::vector<std::string> prefixes;
    std::size_t start = 0;
    for (;;) {
        const std::size_t slash = path.find('/', start);
        if (slash == std::string_view::npos) {
            prefixes.emplace_back(path);
            return prefixes;
        }
        prefixes.emplace_back(path.substr(0, slash));
        start = slash + 1;
    }
}

}  // namespace starling::routing::test_support
