#include "config/datasource_url.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace starling::config {

namespace {

std::optional<int> hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower >= 'a' && lower <= 'f') {
        return lower - 'a' + 10;
    }
    return std::nullopt;
}

// %XX decoding; nullopt on a malformed escape.
std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        if (i + 2 >= text.size()) {
            return std::nullopt;
        }
        const auto hi = hex_digit(text[i + 1]);
        const auto lo = hex_digit(text[i + 2]);
        if (!hi || !lo) {
            return std::nullopt;
        }
        out += static_cast<char>(*hi * 16 + *lo);
        i += 2;
    }
    return out;
}

datasource_url_result fail(std::string why) { return {std::nullopt, std::move(why)}; }

// Schema names become part of the session's search_path option: plain identifiers only, so no
// quoting rules of libpq's options string or of SQL can be broken by a configured value.
bool plain_identifier(std::string_view name) {
    return !name.empty() && name.size() <= 63 &&
           (std::isalpha(static_cast<unsigned char>(name.front())) != 0 || name.front() == '_') &&
           std::all_of(name.begin(), name.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
           });
}

}  // namespace

datasource_url_result parse_datasource_url(std::string_view text) {
    constexpr std::string_view expected =
        "expected jdbc:postgresql://host[:port]/database or "
        "postgresql://[user[:password]@]host[:port]/database";
    std::string_view rest;
    bool jdbc = false;
    for (std::string_view scheme : {"jdbc:postgresql://", "postgresql://", "postgres://"}) {
        if (text.starts_with(scheme)) {
            rest = text.substr(scheme.size());
            jdbc = scheme.starts_with("jdbc");
            break;
        }
    }
    if (rest.data() == nullptr) {
        return fail(fmt::format("is not a PostgreSQL URL ({})", expected));
    }
    datasource_url url;

    std::string_view query;
    if (const auto q = rest.find('?'); q != std::string_view::npos) {
        query = rest.substr(q + 1);
        rest = rest.substr(0, q);
    }
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);

    if (const auto at = authority.rfind('@'); at != std::string_view::npos) {
        if (jdbc) {
            return fail(
                "puts credentials before the host, which JDBC URLs do not allow (use "
                "spring.datasource.username / password or ?user=&password=)");
        }
        const auto userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        const auto colon = userinfo.find(':');
        auto user = percent_decode(userinfo.substr(0, colon));
        if (!user) {
            return fail("has a malformed %-escape in the user name");
        }
        url.username = std::move(*user);
        if (colon != std::string_view::npos) {
            auto password = percent_decode(userinfo.substr(colon + 1));
            if (!password) {
                return fail("has a malformed %-escape in the password");
            }
            url.password = std::move(*password);
        }
    }
    if (authority.find(',') != std::string_view::npos) {
        return fail(
            "names several hosts; only one is supported (put a proxy or a virtual IP "
            "in front of a replicated PostgreSQL)");
    }
    std::string_view port_text;
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return fail("has an IPv6 host without its closing ']'");
        }
        url.host = std::string(authority.substr(1, close - 1));
        const auto after = authority.substr(close + 1);
        if (!after.empty()) {
            if (!after.starts_with(':')) {
                return fail("has text after the IPv6 host that is not a :port");
            }
            port_text = after.substr(1);
        }
    } else {
        const auto colon = authority.find(':');
        url.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos) {
            port_text = authority.substr(colon + 1);
        }
    }
    if (url.host.empty()) {
        return fail(fmt::format("has no host ({})", expected));
    }
    if (!port_text.empty() || authority.ends_with(':')) {
        int port = 0;
        const auto* end = port_text.data() + port_text.size();
        const auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
        if (port_text.empty() || ec != std::errc{} || ptr != end || port < 1 || port > 65535) {
            return fail(fmt::format("has port \"{}\", which is not 1..65535", port_text));
        }
        url.port = static_cast<std::uint16_t>(port);
    }
    auto database = percent_decode(path);
    if (!database) {
        return fail("has a malformed %-escape in the database name");
    }
    if (database->empty() || database->find('/') != std::string::npos) {
        return fail(fmt::format("names no database ({})", expected));
    }
    url.database = std::move(*database);

    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty()) {
            continue;
        }
        const auto eq = pair.find('=');
        const auto name = pair.substr(0, eq);
        auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
        if (!value) {
            return fail(fmt::format("has a malformed %-escape in parameter {}", name));
        }
        if (name == "user") {
            url.username = std::move(*value);
        } else if (name == "password") {
            url.password = std::move(*value);
        } else if (name == "currentSchema") {
            if (!plain_identifier(*value)) {
                return fail(
                    fmt::format("has currentSchema \"{}\"; use a plain identifier "
                                "(letters, digits, '_', at most 63)",
                                *value));
            }
            url.schema = std::move(*value);
        } else if (name == "sslmode") {
            constexpr std::string_view modes[] = {"disable", "allow",     "prefer",
                                                  "require", "verify-ca", "verify-full"};
            if (std::find(std::begin(modes), std::end(modes), *value) == std::end(modes)) {
                return fail(
                    fmt::format("has sslmode \"{}\"; use disable, allow, prefer, "
                                "require, verify-ca or verify-full",
                                *value));
            }
            url.sslmode = std::move(*value);
        } else if (name == "sslrootcert" || name == "sslcert" || name == "sslkey") {
            if (value->empty()) {
                return fail(fmt::format("has an empty {} (a file path)", name));
            }
            (name == "sslrootcert" ? url.sslrootcert
             : name == "sslcert"   ? url.sslcert
                                   : url.sslkey) = std::move(*value);
        } else {
            return fail(
                fmt::format("has parameter \"{}\", which is not supported (user, "
                            "password, currentSchema, sslmode, sslrootcert, sslcert, sslkey)",
                            name));
        }
    }
    return {std::move(url), {}};
}

std::optional<std::string> apply_datasource_url(postgres_metadata_config& config) {
    auto parsed = parse_datasource_url(config.url);
    if (!parsed.url) {
        return std::move(parsed.why);
    }
    auto& url = *parsed.url;
    config.host = std::move(url.host);
    config.port = url.port;
    config.database = std::move(url.database);
    config.schema = std::move(url.schema);
    config.sslmode = std::move(url.sslmode);
    config.sslrootcert = std::move(url.sslrootcert);
    config.sslcert = std::move(url.sslcert);
    config.sslkey = std::move(url.sslkey);
    if (url.username) {
        config.username = std::move(*url.username);
    }
    if (url.password) {
        config.password = std::move(*url.password);
    }
    return std::nullopt;
}

}  // namespace starling::config
