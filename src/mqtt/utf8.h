#pragma once

// UTF-8 validation by the MQTT rules (MQTT 3.1.1 section 1.5.3, MQTT 5.0 section 1.5.4):
// well-formed UTF-8 (RFC 3629: no overlong forms, nothing above U+10FFFF), no UTF-16
// surrogates U+D800..U+DFFF, and no U+0000. Other control characters and non-characters are
// allowed (the specification says SHOULD NOT, not MUST NOT).

#include <string_view>

namespace starling::mqtt {

bool is_valid_utf8(std::string_view text) noexcept;

// Well-formed UTF-8 that may contain U+0000: the rule for a payload marked as UTF-8 by the
// Payload Format Indicator ("UTF-8 Encoded Character Data", MQTT 5.0 section 3.3.2.3.2).
bool is_well_formed_utf8(std::string_view text) noexcept;

}  // namespace starling::mqtt
