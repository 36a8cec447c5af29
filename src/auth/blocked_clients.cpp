// STAND-IN (see blocked_clients.h).

#include "auth/blocked_clients.h"

#include <fmt/format.h>

namespace starling::auth {

blocked_clients::blocked_clients(std::vector<blocked_client_entry> entries) {
    for (auto& e : entries) {
        compiled c{std::move(e), std::nullopt};
        if (c.entry.type == blocked_client_entry::kind::regex) {
            c.pattern.emplace(c.entry.value);
        }
        entries_.push_back(std::move(c));
    }
}

std::optional<std::string> blocked_clients::check(std::string_view client_id,
                                                  std::optional<std::string_view> username,
                                                  std::string_view ip, std::int64_t now_ms) const {
    using kind = blocked_client_entry::kind;
    auto field = [&](kind k) -> std::optional<std::string_view> {
        switch (k) {
            case kind::client_id:
                return client_id;
            case kind::username:
                return username;
            case kind::ip_address:
                return ip;
            case kind::regex:
                break;
        }
        return std::nullopt;
    };
    for (const auto& c : entries_) {
        if (c.entry.expires_at_ms != 0 && now_ms >= c.entry.expires_at_ms) {
            continue;
        }
        const auto target = c.pattern ? field(c.entry.regex_target) : field(c.entry.type);
        if (!target) {
            continue;
        }
        const bool hit = c.pattern ? std::regex_match(target->begin(), target->end(), *c.pattern)
                                   : *target == c.entry.value;
        if (hit) {
            return c.entry.description.empty() ? fmt::format("blocked by entry '{}'", c.entry.value)
                                               : c.entry.description;
        }
    }
    return std::nullopt;
}

}  // namespace starling::auth
