#pragma once

// Reading a Prometheus text exposition in the metrics tests.

#include <optional>
#include <sstream>
#include <string>

namespace starling::metrics::testing {

// The value of one series ("name" or "name{label=\"v\"}") in an exposition, if present.
inline std::optional<double> sample(const std::string& text, const std::string& series) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with(series + " ")) {
            return std::stod(line.substr(series.size() + 1));
        }
    }
    return std::nullopt;
}

}  // namespace starling::metrics::testing
