#pragma once

// STAND-IN, only on branch h/auth: the real blocked_clients is written on another branch with
// the same check() signature; the lead merges that one over this file. It exists so the
// authentication path and its tests build now.
//
// blocked_clients: entries that refuse a CONNECT before any provider runs (TBMQ's blocked
// clients: by client id, username, IP address, or a regex over one of them).
//
// Lifecycle: built by the daemon from configuration, immutable afterwards. Concurrency:
// check() is const and may be called from any thread.

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

namespace starling::auth {

struct blocked_client_entry {
    enum class kind : std::uint8_t { client_id, username, ip_address, regex };
    kind type = kind::client_id;
    std::string value;
    // regex only: which field the pattern is matched against (client_id, username or
    // ip_address).
    kind regex_target = kind::client_id;
    std::int64_t expires_at_ms = 0;  // 0: never expires
    std::string description;
};

class blocked_clients {
  public:
    blocked_clients() = default;
    explicit blocked_clients(std::vector<blocked_client_entry> entries);

    // why the client is blocked, or nullopt; ip without port; expired entries never match
    std::optional<std::string> check(std::string_view client_id,
                                     std::optional<std::string_view> username, std::string_view ip,
                                     std::int64_t now_ms) const;

  private:
    struct compiled {
        blocked_client_entry entry;
        std::optional<std::regex> pattern;
    };
    std::vector<compiled> entries_;
};

}  // namespace starling::auth
