#pragma once

// PINGREQ (section 3.12 in both versions): fixed header only.

namespace starling::mqtt {

struct pingreq {
    bool operator==(const pingreq&) const = default;
};

}  // namespace starling::mqtt
