#pragma once

// postgres_metadata_config: where and how the cluster-mode metadata store reaches PostgreSQL
// (the `spring.datasource` section of config/starling.yml, TBMQ's keys and environment
// variables). A plain value type with no dependencies, so the PostgreSQL adapter can take it
// without linking the config loader; parse_datasource_url() (datasource_url.h) fills the
// connection fields from SPRING_DATASOURCE_URL.

#include <chrono>
#include <cstdint>
#include <string>

namespace starling::config {

struct postgres_metadata_config {
    // spring.datasource.url as written (jdbc:postgresql://... or postgresql://...); the fields
    // below are what it resolved to.
    std::string url;
    std::string host;
    std::uint16_t port{};
    std::string database;
    std::string username;
    std::string password;
    // The schema the tables live in (URL parameter currentSchema); created when missing.
    // Empty = the server's default search_path (normally "public").
    std::string schema;
    // libpq sslmode (URL parameter sslmode); empty = libpq's default (prefer).
    std::string sslmode;
    // TLS files (URL parameters sslrootcert, sslcert, sslkey); empty = libpq's defaults.
    std::string sslrootcert;
    std::string sslcert;
    std::string sslkey;
    // Connections = worker threads of the adapter's pool (hikari.maximumPoolSize).
    std::uint32_t maximum_pool_size{};
    // Bound on establishing one connection, TCP + TLS + authentication (libpq connect_timeout,
    // rounded up to whole seconds, at least 2 as libpq requires).
    std::chrono::milliseconds connection_timeout{};
    // Server-side bound on each statement (PostgreSQL statement_timeout); 0 = none.
    std::chrono::milliseconds statement_timeout{};
    // Calls waiting for a worker, all workers together; beyond this a call fails at once.
    std::uint32_t queue_capacity{};

    friend bool operator==(const postgres_metadata_config&,
                           const postgres_metadata_config&) = default;
};

}  // namespace starling::config
