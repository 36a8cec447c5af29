// spring.datasource: the URL forms TBMQ and libpq use, the keys and environment variables, and
// errors that name the key without printing a password.

#include "config/datasource_url.h"
#include "config/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace starling::config {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::Not;

const std::filesystem::path shipped_file =
    std::filesystem::path(STARLING_SOURCE_DIR) / "config" / "starling.yml";

broker_config load_with(std::map<std::string, std::string> vars) {
    load_options options;
    options.env = [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    return load_config(shipped_file, options);
}

std::string url_error(const std::string& url) {
    const auto parsed = parse_datasource_url(url);
    EXPECT_FALSE(parsed.url) << url;
    return parsed.why;
}

TEST(datasource_url, jdbc_form) {
    const auto parsed = parse_datasource_url("jdbc:postgresql://db.example:5433/tbmq");
    ASSERT_TRUE(parsed.url) << parsed.why;
    EXPECT_EQ(parsed.url->host, "db.example");
    EXPECT_EQ(parsed.url->port, 5433);
    EXPECT_EQ(parsed.url->database, "tbmq");
    EXPECT_FALSE(parsed.url->username);
    EXPECT_FALSE(parsed.url->password);
    EXPECT_EQ(parsed.url->schema, "");
}

TEST(datasource_url, libpq_form_with_credentials_and_default_port) {
    const auto parsed = parse_datasource_url("postgresql://al%40ce:p%3Ass@127.0.0.1/starling");
    ASSERT_TRUE(parsed.url) << parsed.why;
    EXPECT_EQ(parsed.url->host, "127.0.0.1");
    EXPECT_EQ(parsed.url->port, 5432);
    EXPECT_EQ(parsed.url->database, "starling");
    EXPECT_EQ(parsed.url->username, "al@ce");
    EXPECT_EQ(parsed.url->password, "p:ss");
    EXPECT_TRUE(parse_datasource_url("postgres://u@h:1/d").url);
}

TEST(datasource_url, ipv6_host_and_parameters) {
    const auto parsed = parse_datasource_url(
        "jdbc:postgresql://[::1]:6543/db?currentSchema=tenant_a&sslmode=require&user=u&password=x");
    ASSERT_TRUE(parsed.url) << parsed.why;
    EXPECT_EQ(parsed.url->host, "::1");
    EXPECT_EQ(parsed.url->port, 6543);
    EXPECT_EQ(parsed.url->schema, "tenant_a");
    EXPECT_EQ(parsed.url->sslmode, "require");
    EXPECT_EQ(parsed.url->username, "u");
    EXPECT_EQ(parsed.url->password, "x");
}

TEST(datasource_url, tls_files_reach_the_config) {
    const auto parsed = parse_datasource_url(
        "postgresql://h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fpg%2Fca.crt"
        "&sslcert=/c.crt&sslkey=/c.key");
    ASSERT_TRUE(parsed.url) << parsed.why;
    EXPECT_EQ(parsed.url->sslmode, "verify-full");
    EXPECT_EQ(parsed.url->sslrootcert, "/etc/pg/ca.crt");
    EXPECT_EQ(parsed.url->sslcert, "/c.crt");
    EXPECT_EQ(parsed.url->sslkey, "/c.key");
    EXPECT_THAT(url_error("postgresql://h/db?sslrootcert="), HasSubstr("empty sslrootcert"));
}

TEST(datasource_url, rejects_what_it_cannot_use) {
    EXPECT_THAT(url_error("mysql://h/db"), HasSubstr("is not a PostgreSQL URL"));
    EXPECT_THAT(url_error("jdbc:postgresql://h:70000/db"), HasSubstr("not 1..65535"));
    EXPECT_THAT(url_error("jdbc:postgresql://h:/db"), HasSubstr("not 1..65535"));
    EXPECT_THAT(url_error("jdbc:postgresql://h1,h2/db"), HasSubstr("several hosts"));
    EXPECT_THAT(url_error("jdbc:postgresql://h"), HasSubstr("names no database"));
    EXPECT_THAT(url_error("jdbc:postgresql:///db"), HasSubstr("has no host"));
    EXPECT_THAT(url_error("jdbc:postgresql://u:p@h/db"), HasSubstr("JDBC"));
    EXPECT_THAT(url_error("postgresql://h/db?ssl=true"), HasSubstr("\"ssl\""));
    EXPECT_THAT(url_error("postgresql://h/db?currentSchema=a;drop"), HasSubstr("currentSchema"));
    EXPECT_THAT(url_error("postgresql://h/db?sslmode=maybe"), HasSubstr("sslmode"));
    EXPECT_THAT(url_error("postgresql://%zz@h/db"), HasSubstr("%-escape"));
    EXPECT_THAT(url_error("postgresql://[::1/db"), HasSubstr("']'"));
}

TEST(datasource_config, defaults_resolve_the_default_url) {
    const auto c = default_config();
    const auto& ds = c.spring.datasource;
    EXPECT_EQ(ds.url, "jdbc:postgresql://localhost:5432/starling");
    EXPECT_EQ(ds.host, "localhost");
    EXPECT_EQ(ds.port, 5432);
    EXPECT_EQ(ds.database, "starling");
    EXPECT_EQ(ds.username, "postgres");
    EXPECT_EQ(ds.password, "postgres");
    EXPECT_EQ(ds.maximum_pool_size, 8u);
    EXPECT_EQ(ds.connection_timeout, 10000ms);
    EXPECT_EQ(ds.statement_timeout, 30000ms);
    EXPECT_EQ(ds.queue_capacity, 10000u);
}

TEST(datasource_config, tbmq_environment_variables_apply) {
    const auto c = load_with({{"SPRING_DATASOURCE_URL", "jdbc:postgresql://pg:5433/tbmq"},
                              {"SPRING_DATASOURCE_USERNAME", "broker"},
                              {"SPRING_DATASOURCE_PASSWORD", "secret"},
                              {"SPRING_DATASOURCE_MAXIMUM_POOL_SIZE", "3"},
                              {"SPRING_DATASOURCE_CONNECTION_TIMEOUT_MS", "2500"},
                              {"SPRING_DATASOURCE_STATEMENT_TIMEOUT_MS", "0"}});
    const auto& ds = c.spring.datasource;
    EXPECT_EQ(ds.host, "pg");
    EXPECT_EQ(ds.port, 5433);
    EXPECT_EQ(ds.database, "tbmq");
    EXPECT_EQ(ds.username, "broker");
    EXPECT_EQ(ds.password, "secret");
    EXPECT_EQ(ds.maximum_pool_size, 3u);
    EXPECT_EQ(ds.connection_timeout, 2500ms);
    EXPECT_EQ(ds.statement_timeout, 0ms);
}

TEST(datasource_config, credentials_in_the_url_win) {
    const auto c =
        load_with({{"SPRING_DATASOURCE_URL", "postgresql://starling:pw@127.0.0.1:5432/starling"},
                   {"SPRING_DATASOURCE_USERNAME", "other"}});
    EXPECT_EQ(c.spring.datasource.username, "starling");
    EXPECT_EQ(c.spring.datasource.password, "pw");
}

TEST(datasource_config, a_bad_url_names_the_key_and_hides_the_password) {
    try {
        load_with({{"SPRING_DATASOURCE_URL", "postgresql://u:hunter2@h:99999/db"}});
        FAIL() << "loaded";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "spring.datasource.url");
        EXPECT_THAT(e.what(), HasSubstr("not 1..65535"));
        EXPECT_THAT(e.what(), HasSubstr("SPRING_DATASOURCE_URL"));
        EXPECT_THAT(e.what(), HasSubstr("u:***@h"));
        EXPECT_THAT(e.what(), Not(HasSubstr("hunter2")));
    }
}

TEST(datasource_config, pool_size_is_bounded) {
    try {
        load_with({{"SPRING_DATASOURCE_MAXIMUM_POOL_SIZE", "0"}});
        FAIL() << "loaded";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "spring.datasource.hikari.maximumPoolSize");
        EXPECT_THAT(e.what(), HasSubstr("out of range"));
    }
}

}  // namespace
}  // namespace starling::config
