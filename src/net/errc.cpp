#include "net/errc.h"

#include <string>

namespace starling::net {
namespace {

class category final : public std::error_category {
  public:
    const char* name() const noexcept override { return "starling.net"; }
    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
            case errc::write_queue_overflow:
                return "write queue over its hard limit";
            case errc::aborted:
                return "connection aborted";
            case errc::close_timeout:
                return "close timed out before the write queue drained";
            case errc::peer_closed:
                return "peer closed the connection";
            case errc::invalid_address:
                return "invalid bind address";
            case errc::websocket_text_frame:
                return "WebSocket text frame (MQTT allows binary frames only)";
            case errc::connect_timeout:
                return "no CONNECT within the connect timeout";
        }
        return "unknown net error";
    }
};

}  // namespace

const std::error_category& net_category() {
    static const category instance;
    return instance;
}

std::error_code make_error_code(errc e) { return {static_cast<int>(e), net_category()}; }

}  // namespace starling::net
