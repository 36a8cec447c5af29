#include "starling/clock.h"

namespace starling {

const system_clock& system_clock::instance() {
    static const system_clock clock;
    return clock;
}

}  // namespace starling
