#pragma once

// The PostgreSQL metadata store behind the contract suites. The server comes from the
// environment: STARLING_TEST_POSTGRES, a libpq URL such as
//   postgresql://starling:starling@127.0.0.1:5432/starling
// (CI sets it; locally `scripts/services.sh up postgres`). Unset → the tests are skipped.
// Every store gets its own fresh schema (search_path), dropped when the store is destroyed, so
// runs and tests never see each other's rows.

#include "adapters/postgres/postgres_metadata_store.h"
#include "config/datasource_url.h"

#include "contract/device_inbox/contract_support.h"
#include "contract/metadata_store/metadata_store_contract.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <pqxx/pqxx>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>

namespace starling::testing {

inline void skip_without_postgres() {
    GTEST_SKIP() << "STARLING_TEST_POSTGRES is not set: run `scripts/services.sh up postgres` and "
                    "export STARLING_TEST_POSTGRES="
                    "postgresql://starling:starling@127.0.0.1:5432/starling";
}

// The server of STARLING_TEST_POSTGRES as a store configuration (no schema yet); nullopt and
// GTEST_SKIP when the variable is unset, a test failure when it does not parse.
inline std::optional<config::postgres_metadata_config> postgres_test_config() {
    const char* url = std::getenv("STARLING_TEST_POSTGRES");
    if (url == nullptr || *url == '\0') {
        skip_without_postgres();
        return std::nullopt;
    }
    config::postgres_metadata_config cfg;
    cfg.url = url;
    cfg.username = "postgres";
    cfg.password = "postgres";
    cfg.maximum_pool_size = 4;
    cfg.connection_timeout = std::chrono::milliseconds(5000);
    cfg.statement_timeout = std::chrono::milliseconds(30000);
    cfg.queue_capacity = 10000;
    if (auto why = config::apply_datasource_url(cfg)) {
        ADD_FAILURE() << "STARLING_TEST_POSTGRES: " << *why;
        return std::nullopt;
    }
    return cfg;
}

// A schema name no other run or test uses.
inline std::string unique_test_schema() {
    static std::atomic<int> counter{0};
    static const std::uint32_t run = std::random_device{}();
    return fmt::format("starling_test_{}_{:08x}_{}", ::getpid(), run, counter++);
}

// Runs one statement on a connection of its own (schema set-up and inspection).
inline pqxx::result postgres_exec(const config::postgres_metadata_config& cfg,
                                  const std::string& sql) {
    pqxx::connection c(adapters::postgres::postgres_conninfo(cfg));
    pqxx::nontransaction tx(c);
    return tx.exec(sql);
}

inline void drop_test_schema(config::postgres_metadata_config cfg) {
    const std::string schema = cfg.schema;
    cfg.schema.clear();
    try {
        postgres_exec(cfg, "DROP SCHEMA IF EXISTS " + schema + " CASCADE");
    } catch (const std::exception& e) {
        ADD_FAILURE() << "dropping schema " << schema << ": " << e.what();
    }
}

class postgres_metadata_store_factory final : public metadata_store_factory {
  public:
    std::string name() const override { return "postgres"; }

    std::shared_ptr<metadata_store> create(const clock& clk) override {
        auto cfg = postgres_test_config();
        if (!cfg) {
            return nullptr;
        }
        cfg->schema = unique_test_schema();
        auto store = adapters::postgres::open_postgres_metadata_store(*cfg, clk);
        if (!store) {
            ADD_FAILURE() << "open: " << store.error().message();
            drop_test_schema(*cfg);
            return nullptr;
        }
        return std::shared_ptr<metadata_store>(store->release(), [cfg = *cfg](metadata_store* p) {
            delete p;
            drop_test_schema(cfg);
        });
    }
};

}  // namespace starling::testing
