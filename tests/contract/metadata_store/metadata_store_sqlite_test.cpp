// The metadata-store contract against the SQLite adapter, plus what only it promises: data
// survives a restart, the unauthorized log expires by TTL, and the migration runner applies the
// embedded SQL files once, in order, each in a transaction.

#include "adapters/embedded/sqlite_db.h"
#include "adapters/embedded/sqlite_error.h"
#include "adapters/embedded/sqlite_migrations.h"

#include "contract/metadata_store/metadata_store_sqlite_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(sqlite, metadata_store_contract,
                         ::testing::Values(std::make_shared<sqlite_metadata_store_factory>()),
                         factory_name<metadata_store_factory>);

namespace {

using adapters::embedded::apply_sql_migrations;
using adapters::embedded::embedded_sql_migrations;
using adapters::embedded::sql_migration;
using adapters::embedded::sqlite_db;
using adapters::embedded::sqlite_metadata_store;
using adapters::embedded::store_errc;

std::unique_ptr<sqlite_metadata_store> open_store(const std::filesystem::path& dir,
                                                  const clock& clk,
                                                  std::int64_t unauthorized_ttl_ms = 3600000) {
    auto store = sqlite_metadata_store::open(
        {.data_dir = dir, .unauthorized_ttl_ms = unauthorized_ttl_ms}, clk);
    EXPECT_TRUE(store) << store.error().message();
    return store ? std::move(*store) : nullptr;
}

// A plain connection for inspecting a file the adapter has closed.
std::unique_ptr<sqlite_db> open_db(const std::filesystem::path& file) {
    auto db = sqlite_db::open(file, {.exclusive = false});
    EXPECT_TRUE(db) << db.error().message();
    return db ? std::move(*db) : nullptr;
}

std::int64_t count(sqlite_db& db, const std::string& sql) {
    auto stmt = db.prepare(sql);
    if (!stmt) {
        ADD_FAILURE() << sql << ": " << stmt.error().message();
        return -1;
    }
    auto row = stmt->step();
    return row && *row ? stmt->column_int64(0) : -1;
}

bool table_exists(sqlite_db& db, const std::string& table) {
    return count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" +
                         table + "'") == 1;
}

}  // namespace

class sqlite_metadata_store_test : public ::testing::Test {
  protected:
    manual_clock clock_;
    temp_dir dir_;
};

TEST_F(sqlite_metadata_store_test, reopen_finds_the_data) {
    {
        auto store = open_store(dir_.path(), clock_);
        ASSERT_TRUE(store);
        client_credentials c;
        c.credentials_id = "username|alice";
        c.credentials_type = "MQTT_BASIC";
        c.credentials_value = "{}";
        ASSERT_TRUE(await<status>([&](auto done) { store->save_credentials(c, done); }));
        ASSERT_TRUE(await<status>([&](auto done) { store->put_setting("k", "[1,2]", done); }));
        ASSERT_TRUE(await<status>([&](auto done) {
            store->save_session_context({.client_id = "c1", .qos2_packet_ids = {5}}, done);
        }));
        ASSERT_TRUE(await<status>([&](auto done) {
            store->save_application_context({.client_id = "app",
                                             .last_updated_ms = 0,
                                             .publish_offsets = {{1, 9}},
                                             .pubrel_offsets = {}},
                                            done);
        }));
    }
    auto store = open_store(dir_.path(), clock_);
    ASSERT_TRUE(store);
    auto creds = await<result<std::vector<client_credentials>>>(
        [&](auto done) { store->find_credentials({"username|alice"}, done); });
    ASSERT_TRUE(creds);
    EXPECT_EQ(creds->size(), 1u);
    auto setting = await<result<std::optional<std::string>>>(
        [&](auto done) { store->get_setting("k", done); });
    ASSERT_TRUE(setting && setting->has_value());
    EXPECT_EQ(**setting, "[1,2]");
    auto session = await<result<std::optional<session_context>>>(
        [&](auto done) { store->load_session_context("c1", done); });
    ASSERT_TRUE(session && session->has_value());
    EXPECT_EQ((*session)->qos2_packet_ids, (std::vector<std::uint16_t>{5}));
    auto app = await<result<std::optional<application_session_context>>>(
        [&](auto done) { store->load_application_context("app", done); });
    ASSERT_TRUE(app && app->has_value());
    EXPECT_EQ((*app)->publish_offsets.size(), 1u);
    store.reset();

    // Opening again applied nothing twice.
    auto db = open_db(dir_.path() / "metadata.db");
    ASSERT_TRUE(db);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM schema_version"),
              static_cast<std::int64_t>(embedded_sql_migrations().size()));
}

TEST_F(sqlite_metadata_store_test, unauthorized_log_keeps_the_newest_max_rows) {
    sqlite_metadata_store::options options{.data_dir = dir_.path()};
    options.unauthorized.max_rows = 5;
    options.unauthorized.rows_per_address = 0;  // unlimited: the cap alone is under test
    options.unauthorized.rows_per_second = 0;
    auto opened = sqlite_metadata_store::open(options, clock_);
    ASSERT_TRUE(opened) << opened.error().message();
    auto store = std::move(*opened);
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
    auto rows = await<result<unauthorized_page>>(
        [&](auto done) { store->list_unauthorized({.limit = 100}, done); });
    ASSERT_TRUE(rows) << rows.error().message();
    ASSERT_EQ(rows->rows.size(), 5u);
    EXPECT_EQ(rows->rows.front().client_id, "c19");
    EXPECT_EQ(rows->rows.back().client_id, "c15");
    EXPECT_EQ(store->unauthorized_dropped(), 0u);
}

TEST_F(sqlite_metadata_store_test, unauthorized_rows_over_the_rate_are_counted) {
    auto store = open_store(dir_.path(), clock_);
    ASSERT_TRUE(store);
    for (int i = 0; i < 15; ++i) {
        ASSERT_TRUE(await<status>([&](auto done) {
            store->record_unauthorized(
                {.client_id = "c" + std::to_string(i), .ip_address = "10.0.0.1", .reason = "r"},
                done);
        }));
    }
    EXPECT_EQ(store->unauthorized_dropped(), 5u);
}

TEST_F(sqlite_metadata_store_test, unauthorized_entries_expire_after_the_ttl) {
    auto store = open_store(dir_.path(), clock_, 1000);
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
    clock_.advance(std::chrono::milliseconds(999));
    EXPECT_EQ(listed(), 1u);
    clock_.advance(std::chrono::milliseconds(1));
    EXPECT_EQ(listed(), 0u);

    // The next write deletes the expired row for good.
    ASSERT_TRUE(record("b"));
    EXPECT_EQ(listed(), 1u);
    store.reset();
    auto db = open_db(dir_.path() / "metadata.db");
    ASSERT_TRUE(db);
    EXPECT_EQ(count(*db, "SELECT count(*) FROM unauthorized_client"), 1);
}

TEST_F(sqlite_metadata_store_test, stopped_store_rejects_calls_inline) {
    auto store = open_store(dir_.path(), clock_);
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

TEST_F(sqlite_metadata_store_test, embedded_migrations_create_the_tbmq_schema) {
    const auto migrations = embedded_sql_migrations();
    ASSERT_FALSE(migrations.empty());
    EXPECT_EQ(migrations[0].version, 1);
    EXPECT_EQ(migrations[0].name, "V001__init.sql");

    auto db = open_db(dir_.path() / "fresh.db");
    ASSERT_TRUE(db);
    auto version = apply_sql_migrations(*db, migrations, 1);
    ASSERT_TRUE(version) << version.error().message();
    EXPECT_EQ(*version, migrations.back().version);
    for (const char* table :
         {"schema_version", "admin_settings", "broker_user", "user_credentials",
          "mqtt_auth_provider", "mqtt_client_credentials", "application_shared_subscription",
          "application_session_ctx", "generic_client_session_ctx", "unauthorized_client", "ts_kv",
          "ts_kv_latest", "ts_kv_dictionary"}) {
        EXPECT_TRUE(table_exists(*db, table)) << table;
    }
}

// --- the migration runner on hand-made migrations ------------------------------------------

class sql_migration_runner : public ::testing::Test {
  protected:
    void SetUp() override {
        db_ = open_db(dir_.path() / "runner.db");
        ASSERT_TRUE(db_);
    }

    result<std::int64_t> apply(std::vector<sql_migration> migrations) {
        return apply_sql_migrations(*db_, migrations, 42);
    }

    const sql_migration m1_{1, "V001__a.sql", "CREATE TABLE a (x BIGINT);"};
    const sql_migration m2_{2, "V002__b.sql",
                            "CREATE TABLE b (x BIGINT); INSERT INTO a VALUES (1);"};
    const sql_migration m3_{3, "V003__c.sql", "CREATE TABLE c (x BIGINT);"};
    temp_dir dir_;
    std::unique_ptr<sqlite_db> db_;
};

TEST_F(sql_migration_runner, applies_each_migration_once_in_order) {
    auto v = apply({m1_, m2_});
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(*v, 2);
    EXPECT_EQ(count(*db_, "SELECT count(*) FROM schema_version WHERE applied_time = 42"), 2);
    v = apply({m1_, m2_});
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 2);
    EXPECT_EQ(count(*db_, "SELECT count(*) FROM a"), 1);  // V002's insert ran once
    v = apply({m1_, m2_, m3_});
    ASSERT_TRUE(v);
    EXPECT_EQ(*v, 3);
    EXPECT_TRUE(table_exists(*db_, "c"));
}

TEST_F(sql_migration_runner, a_failing_migration_leaves_no_trace) {
    const sql_migration bad{3, "V003__bad.sql", "CREATE TABLE c (x BIGINT); NOT VALID SQL;"};
    ASSERT_TRUE(apply({m1_, m2_}));
    auto v = apply({m1_, m2_, bad});
    EXPECT_FALSE(v);
    EXPECT_FALSE(table_exists(*db_, "c"));
    EXPECT_EQ(count(*db_, "SELECT max(version) FROM schema_version"), 2);
    v = apply({m1_, m2_, m3_});
    ASSERT_TRUE(v) << v.error().message();
    EXPECT_EQ(*v, 3);
}

TEST_F(sql_migration_runner, an_edited_migration_is_refused) {
    ASSERT_TRUE(apply({m1_}));
    const sql_migration edited{1, "V001__a.sql", "CREATE TABLE a (x BIGINT, y TEXT);"};
    auto v = apply({edited});
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), store_errc::migration_changed);
}

TEST_F(sql_migration_runner, a_database_from_a_newer_binary_is_refused) {
    ASSERT_TRUE(apply({m1_, m2_}));
    auto v = apply({m1_});
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), store_errc::schema_too_new);
}

TEST_F(sql_migration_runner, a_skipped_older_migration_is_refused) {
    ASSERT_TRUE(apply({m1_, m3_}));
    auto v = apply({m1_, m2_, m3_});
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), store_errc::migration_changed);
    EXPECT_FALSE(table_exists(*db_, "b"));
}

TEST_F(sql_migration_runner, migrations_must_be_strictly_ascending) {
    auto v = apply({m2_, m1_});
    ASSERT_FALSE(v);
    EXPECT_EQ(v.error(), std::errc::invalid_argument);
}

}  // namespace starling::testing
