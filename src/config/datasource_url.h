#pragma once

// Parsing of spring.datasource.url (SPRING_DATASOURCE_URL). Two spellings are accepted so both
// a TBMQ env file and a libpq-style URL carry over:
//   jdbc:postgresql://host[:port]/database[?param=value&...]
//   postgresql://[user[:password]@]host[:port]/database[?param=value&...]   (or postgres://)
// host may be a bracketed IPv6 literal ([::1]); port defaults to 5432. Parameters: user,
// password, currentSchema (JDBC's name), sslmode, sslrootcert (the CA file that verify-ca /
// verify-full check the server against), sslcert and sslkey (a client certificate and its key,
// for servers that authenticate clients by certificate); the names are libpq's and pgJDBC's.
// Percent-escapes are decoded. One host only.
//
// Pure functions, any thread.

#include "config/postgres_metadata_config.h"

#include <optional>
#include <string>
#include <string_view>

namespace starling::config {

struct datasource_url {
    std::string host;
    std::uint16_t port = 5432;
    std::string database;
    std::optional<std::string> username;  // from the URL's user info or ?user=
    std::optional<std::string> password;
    std::string schema;
    std::string sslmode;
    std::string sslrootcert;  // file paths; empty = libpq's defaults (~/.postgresql/...)
    std::string sslcert;
    std::string sslkey;
};

// The parsed URL, or why it is not acceptable (a phrase that follows the value in an error
// message: "is not a PostgreSQL URL (...)").
struct datasource_url_result {
    std::optional<datasource_url> url;
    std::string why;
};

datasource_url_result parse_datasource_url(std::string_view text);

// Fills config's connection fields from config.url. Credentials in the URL win over
// config.username / config.password (the separate keys are TBMQ's, the URL ones are explicit).
// Returns why the URL is not acceptable, or nullopt.
std::optional<std::string> apply_datasource_url(postgres_metadata_config& config);

}  // namespace starling::config
