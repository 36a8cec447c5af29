#include "mqtt/packet/pingreq.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_pingreq(reader& r, const decode_context& /*ctx*/, pingreq& /*out*/) {
    if (!r.empty()) {
        return r.fail(reason_code::malformed_packet, "remaining length other than 0");
    }
    return true;
}

std::size_t body_size(const pingreq& /*p*/, protocol_version /*v*/) noexcept { return 0; }

void encode_body(const pingreq& /*p*/, protocol_version /*v*/, std::string& /*out*/) {}

}  // namespace starling::mqtt::detail
