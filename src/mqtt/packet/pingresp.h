#pragma once

// PINGRESP (section 3.13 in both versions): fixed header only.

namespace starling::mqtt {

struct pingresp {
    bool operator==(const pingresp&) const = default;
};

}  // namespace starling::mqtt
