#include "adapters/embedded/log_config.h"

#include "adapters/embedded/log_errc.h"
#include "adapters/embedded/log_file.h"

#include <sys/statvfs.h>

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

result<disk_space> statvfs_disk_space(const std::filesystem::path& dir) {
    struct statvfs st {};
    if (::statvfs(dir.c_str(), &st) != 0) {
        return errno_code();
    }
    const auto unit = static_cast<std::uint64_t>(st.f_frsize != 0 ? st.f_frsize : st.f_bsize);
    return disk_space{.total_bytes = static_cast<std::uint64_t>(st.f_blocks) * unit,
                      .free_bytes = static_cast<std::uint64_t>(st.f_bavail) * unit};
}

std::string_view to_string(disk_state state) {
    switch (state) {
        case disk_state::ok:
            return "ok";
        case disk_state::slowed:
            return "slowed";
        case disk_state::refusing:
            return "refusing";
    }
    return "ok";
}

}  // namespace starling::adapters::embedded
