// The metadata-store contract against the PostgreSQL adapter (labels contract, postgres), plus
// what only it promises: migrations applied once and recorded, a schema from a newer binary
// refused, an unreachable server failing open() clearly, and a database lost and regained
// while running (calls fail, healthy() is false, connections come back by themselves).

#include "adapters/postgres/pg_migrations.h"

#include "contract/metadata_store/metadata_store_postgres_factory.h"
#include "contract/metadata_store/tcp_proxy.h"
#include <gmock/gmock.h>

#include <chrono>
#include <thread>

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(postgres, metadata_store_contract,
                         ::testing::Values(std::make_shared<postgres_metadata_store_factory>()),
                         factory_name<metadata_store_factory>);

namespace {

using adapters::postgres::open_postgres_metadata_store;
using adapters::postgres::postgres_metadata_store;
using adapters::postgres::postgres_sql_migrations;

using namespace std::chrono_literals;

std::int64_t count(const config::postgres_metadata_config& cfg, const std::string& sql) {
    auto rows = postgres_exec(cfg, sql);
    return rows.empty() || rows[0][0].is_null() ? -1 : rows[0][0].as<std::int64_t>();
}

// A port nothing listens on: bound and closed again (the kernel does not hand it out again at
// once).
std::uint16_t closed_port() {
    tcp_proxy probe(1);
    const auto port = probe.port();
    probe.stop();
    return port;
}

status get_setting_status(metadata_store& store) {
    auto r = await<result<std::optional<std::string>>>(
        [&](auto done) { store.get_setting("k", std::move(done)); });
    if (!r) {
        return r.error();
    }
    return {};
}

// Waits (bounded) for a state the store reaches by itself on its own threads.
template <class Predicate>
bool eventually(Predicate p, std::chrono::milliseconds limit = 15s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!p()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

}  // namespace

class postgres_metadata_store_test : public ::testing::Test {
  protected:
    void SetUp() override {
        auto cfg = postgres_test_config();
        if (!cfg) {
            return;
        }
        cfg_ = *cfg;
        cfg_.schema = unique_test_schema();
    }
    void TearDown() override {
        if (!cfg_.schema.empty()) {
            drop_test_schema(cfg_);
        }
    }

    std::unique_ptr<postgres_metadata_store> open_store(postgres_metadata_store::tuning t = {}) {
        auto store = postgres_metadata_store::open(cfg_, clock_, t);
        EXPECT_TRUE(store) << store.error().message();
        return store ? std::move(*store) : nullptr;
    }

    manual_clock clock_;
    config::postgres_metadata_config cfg_;
};

TEST_F(postgres_metadata_store_test, migrations_are_recorded_and_applied_once) {
    const auto migrations = postgres_sql_migrations();
    ASSERT_FALSE(migrations.empty());
    EXPECT_EQ(migrations[0].name, "V001__init.sql");
    {
        auto store = open_store();
        ASSERT_TRUE(store);
        ASSERT_TRUE(await<status>([&](auto done) { store->put_setting("k", "[1]", done); }));
    }
    auto store = open_store();  // the second open finds every migration applied
    ASSERT_TRUE(store);
    auto setting = await<result<std::optional<std::string>>>(
        [&](auto done) { store->get_setting("k", done); });
    ASSERT_TRUE(setting && setting->has_value());
    EXPECT_EQ(**setting, "[1]");

    const std::string in_schema = "'" + cfg_.schema + "'";
    EXPECT_EQ(count(cfg_, "SELECT count(*) FROM schema_version"),
              static_cast<std::int64_t>(migrations.size()));
    EXPECT_EQ(count(cfg_, "SELECT max(version) FROM schema_version"), migrations.back().version);
    EXPECT_EQ(count(cfg_, "SELECT count(*) FROM schema_version WHERE applied_time = " +
                              std::to_string(clock_.epoch_ms())),
              static_cast<std::int64_t>(migrations.size()));
    for (const char* table :
         {"schema_version", "admin_settings", "broker_user", "user_credentials",
          "mqtt_auth_provider", "mqtt_client_credentials", "application_shared_subscription",
          "application_session_ctx", "generic_client_session_ctx", "unauthorized_client", "ts_kv",
          "ts_kv_latest", "ts_kv_dictionary"}) {
        EXPECT_EQ(count(cfg_,
                        "SELECT count(*) FROM information_schema.tables WHERE table_schema "
                        "= " +
                            in_schema + " AND table_name = '" + table + "'"),
                  1)
            << table;
    }
}

TEST_F(postgres_metadata_store_test, a_schema_from_a_newer_binary_is_refused) {
    ASSERT_TRUE(open_store());
    postgres_exec(cfg_,
                  "INSERT INTO schema_version VALUES (999999, 'V999999__future.sql', 'x', 1)");
    auto store = postgres_metadata_store::open(cfg_, clock_, {});
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error(), std::errc::not_supported) << store.error().message();
}

TEST_F(postgres_metadata_store_test, an_edited_migration_is_refused) {
    ASSERT_TRUE(open_store());
    postgres_exec(cfg_, "UPDATE schema_version SET checksum = 'edited' WHERE version = 1");
    auto store = postgres_metadata_store::open(cfg_, clock_, {});
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error(), std::errc::not_supported) << store.error().message();
}

// Needs no server, so it runs without STARLING_TEST_POSTGRES too.
TEST(postgres_metadata_store_open, unreachable_server_fails_clearly) {
    manual_clock clock;
    config::postgres_metadata_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = closed_port();
    cfg.database = "starling";
    cfg.username = "starling";
    cfg.maximum_pool_size = 2;
    cfg.connection_timeout = 2000ms;
    cfg.queue_capacity = 10;
    const auto started = std::chrono::steady_clock::now();
    auto store = open_postgres_metadata_store(cfg, clock);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error(), std::errc::not_connected) << store.error().message();
    EXPECT_EQ(store.error().message(), "cannot connect to PostgreSQL");
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
}

TEST(postgres_metadata_store_open, unusable_config_is_refused) {
    manual_clock clock;
    config::postgres_metadata_config cfg;
    cfg.host = "127.0.0.1";
    cfg.port = 5432;
    cfg.database = "starling";
    cfg.maximum_pool_size = 1;
    cfg.queue_capacity = 10;
    cfg.schema = "no;such schema";
    auto store = open_postgres_metadata_store(cfg, clock);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error(), std::errc::invalid_argument);
    cfg.schema.clear();
    cfg.maximum_pool_size = 0;
    store = open_postgres_metadata_store(cfg, clock);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error(), std::errc::invalid_argument);
}

// (A wrong password cannot be tested portably: the dev server trusts loopback logins.)
TEST_F(postgres_metadata_store_test, missing_database_fails_open) {
    if (cfg_.host.empty()) {
        return;
    }
    cfg_.database = "starling_no_such_database";
    auto store = open_postgres_metadata_store(cfg_, clock_);
    ASSERT_FALSE(store);
    EXPECT_EQ(store.error(), std::errc::not_connected) << store.error().message();
    cfg_.database = postgres_test_config()->database;
    cfg_.schema.clear();
}

TEST_F(postgres_metadata_store_test, lost_database_fails_calls_and_recovers) {
    if (cfg_.host.empty()) {
        return;
    }
    auto proxy = std::make_unique<tcp_proxy>(cfg_.port);
    const std::uint16_t proxy_port = proxy->port();
    auto through_proxy = cfg_;
    through_proxy.host = "127.0.0.1";
    through_proxy.port = proxy_port;
    through_proxy.maximum_pool_size = 2;
    auto opened = postgres_metadata_store::open(
        through_proxy, clock_, {.backoff_initial = 20ms, .backoff_max = 200ms, .keepalive = 100ms});
    ASSERT_TRUE(opened) << opened.error().message();
    auto& store = **opened;
    ASSERT_TRUE(await<status>([&](auto done) { store.put_setting("k", "1", done); }));
    EXPECT_TRUE(store.healthy());

    proxy->stop();                 // the database is gone: every connection cut, nothing listens
    for (int i = 0; i < 4; ++i) {  // spread over both connections: none reports a success
        auto st = await<status>(
            [&](auto done) { store.put_setting("k" + std::to_string(i), "2", done); });
        ASSERT_FALSE(st) << "a write reported success without a database";
        EXPECT_EQ(st.error(), std::errc::not_connected) << st.error().message();
    }
    EXPECT_FALSE(get_setting_status(store));
    EXPECT_FALSE(store.healthy());

    proxy = std::make_unique<tcp_proxy>(cfg_.port, proxy_port);  // the database is back
    ASSERT_TRUE(eventually([&] { return store.healthy(); }))
        << "connections were not re-established";
    EXPECT_TRUE(eventually([&] { return static_cast<bool>(get_setting_status(store)); }));
    auto value =
        await<result<std::optional<std::string>>>([&](auto done) { store.get_setting("k", done); });
    ASSERT_TRUE(value && value->has_value());
    EXPECT_EQ(**value, "1");
    store.stop();
}

TEST_F(postgres_metadata_store_test, idle_store_notices_the_lost_database) {
    if (cfg_.host.empty()) {
        return;
    }
    auto proxy = std::make_unique<tcp_proxy>(cfg_.port);
    auto through_proxy = cfg_;
    through_proxy.host = "127.0.0.1";
    through_proxy.port = proxy->port();
    through_proxy.maximum_pool_size = 1;
    auto opened = postgres_metadata_store::open(
        through_proxy, clock_, {.backoff_initial = 20ms, .backoff_max = 200ms, .keepalive = 50ms});
    ASSERT_TRUE(opened) << opened.error().message();
    EXPECT_TRUE((*opened)->healthy());
    proxy->stop();
    EXPECT_TRUE(eventually([&] { return !(*opened)->healthy(); }))
        << "healthy() stayed true with no database and no calls";
}

TEST_F(postgres_metadata_store_test, statement_timeout_fails_the_call) {
    if (cfg_.host.empty()) {
        return;
    }
    cfg_.statement_timeout = 300ms;
    auto store = open_store();
    ASSERT_TRUE(store);
    // Another session holds the table, so the store's statement waits until the server
    // cancels it.
    pqxx::connection blocker(adapters::postgres::postgres_conninfo(cfg_));
    pqxx::work lock(blocker);
    lock.exec("LOCK TABLE admin_settings IN ACCESS EXCLUSIVE MODE");
    auto st = await<status>([&](auto done) { store->put_setting("k", "1", done); });
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), std::errc::timed_out) << st.error().message();
    lock.abort();
    EXPECT_TRUE(await<status>([&](auto done) { store->put_setting("k", "1", done); }));
    EXPECT_TRUE(store->healthy());
}

TEST_F(postgres_metadata_store_test, unauthorized_log_keeps_the_newest_max_rows) {
    postgres_metadata_store::tuning t;
    t.unauthorized.max_rows = 5;
    t.unauthorized.rows_per_address = 0;  // unlimited: the cap alone is under test
    t.unauthorized.rows_per_second = 0;
    auto store = open_store(t);
    ASSERT_TRUE(store);
    const std::int64_t start = clock_.epoch_ms();
    for (int i = 0; i < 20; ++i) {
        ASSERT_TRUE(await<status>([&](auto done) {
            store->record_unauthorized({.client_id = "c" + std::to_string(i),
                                        .ip_address = "10.0.0.1",
                                        .ts_ms = start + i,
                                        .reason = "r"},
                                       done);
        }));
    }
    EXPECT_EQ(count(cfg_, "SELECT count(*) FROM unauthorized_client"), 5);
    auto rows = await<result<unauthorized_page>>(
        [&](auto done) { store->list_unauthorized({.limit = 100}, done); });
    ASSERT_TRUE(rows) << rows.error().message();
    ASSERT_EQ(rows->rows.size(), 5u);
    EXPECT_EQ(rows->rows.front().client_id, "c19");
    EXPECT_EQ(rows->rows.back().client_id, "c15");
}

TEST_F(postgres_metadata_store_test, unauthorized_entries_expire_after_the_ttl) {
    auto store = open_store({.unauthorized_ttl_ms = 1000});
    ASSERT_TRUE(store);
    auto record = [&](const std::string& id) {
        return await<status>([&](auto done) {
            unauthorized_client entry;
            entry.client_id = id;
            entry.reason = "r";
            store->record_unauthorized(entry, done);
        });
    };
    auto listed = [&] {
        auto rows = await<result<unauthorized_page>>(
            [&](auto done) { store->list_unauthorized({.limit = 10}, done); });
        EXPECT_TRUE(rows);
        return rows ? rows->rows.size() : 0u;
    };
    ASSERT_TRUE(record("a"));
    clock_.advance(999ms);
    EXPECT_EQ(listed(), 1u);
    clock_.advance(1ms);
    EXPECT_EQ(listed(), 0u);
    ASSERT_TRUE(record("b"));  // the next write deletes the expired row for good
    EXPECT_EQ(count(cfg_, "SELECT count(*) FROM unauthorized_client"), 1);
}

TEST_F(postgres_metadata_store_test, stopped_store_rejects_calls_inline) {
    auto store = open_store();
    ASSERT_TRUE(store);
    EXPECT_TRUE(store->healthy());
    store->stop();
    EXPECT_FALSE(store->healthy());
    bool ran_inline = false;
    store->get_setting("k", [&](result<std::optional<std::string>> r) {
        ran_inline = true;
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error(), std::errc::operation_canceled);
    });
    EXPECT_TRUE(ran_inline);
}

TEST(postgres_conninfo, quotes_values_and_sets_the_session) {
    config::postgres_metadata_config cfg;
    cfg.host = "db";
    cfg.port = 5433;
    cfg.database = "starling";
    cfg.username = "o'brien";
    cfg.password = R"(p\w 'x)";
    cfg.schema = "tenant_1";
    cfg.connection_timeout = 500ms;
    cfg.statement_timeout = 1500ms;
    const auto info = adapters::postgres::postgres_conninfo(cfg);
    EXPECT_THAT(info, ::testing::HasSubstr(R"(user='o\'brien')"));
    EXPECT_THAT(info, ::testing::HasSubstr(R"(password='p\\w \'x')"));
    EXPECT_THAT(info, ::testing::HasSubstr("connect_timeout=2 "));  // libpq's minimum
    EXPECT_THAT(
        info, ::testing::HasSubstr("options='-c statement_timeout=1500 -c search_path=tenant_1'"));
    EXPECT_THAT(info, ::testing::HasSubstr("port=5433"));
    EXPECT_THAT(info, ::testing::Not(::testing::HasSubstr("sslrootcert")));
    cfg.sslmode = "verify-full";
    cfg.sslrootcert = "/etc/pg/ca file.crt";
    const auto tls = adapters::postgres::postgres_conninfo(cfg);
    EXPECT_THAT(tls, ::testing::HasSubstr("sslmode='verify-full'"));
    EXPECT_THAT(tls, ::testing::HasSubstr("sslrootcert='/etc/pg/ca file.crt'"));
}

}  // namespace starling::testing
