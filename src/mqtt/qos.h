#pragma once

// Quality of service levels as they appear on the wire (PUBLISH flags, will flags,
// subscription options).

#include <cstdint>

namespace starling::mqtt {

enum class qos : std::uint8_t { at_most_once = 0, at_least_once = 1, exactly_once = 2 };

}  // namespace starling::mqtt
