#include "adapters/embedded/log_config.h"

#include "adapters/embedded/log_errc.h"

namespace starling::adapters::embedded {

result<fsync_policy> parse_fsync_policy(std::string_view name) {
    if (name == "none") {
        return fsync_policy::none;
    }
    if (name == "interval") {
        return fsync_policy::interval;
    }
    if (name == "always") {
        return fsync_policy::always;
    }
    return make_error_code(log_errc::invalid_argument);
}

}  // namespace starling::adapters::embedded
