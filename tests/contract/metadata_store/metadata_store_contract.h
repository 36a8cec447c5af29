#pragma once

// Contract suite of the metadata-store port (include/starling/metadata_store.h), shared by the
// SQLite and PostgreSQL adapters: an adapter's test file defines a metadata_store_factory and
// instantiates metadata_store_contract (label contract) and metadata_store_concurrency (labels
// contract, concurrency) with it. Bodies: metadata_store_contract.cpp,
// metadata_store_concurrency.cpp, built as object libraries.
//
// Error expectations are std::errc conditions, so adapters map their own codes onto them:
//   a unique key held by another row   std::errc::file_exists
//   arguments the port rejects         std::errc::invalid_argument

#include "starling/metadata_store.h"

#include "contract/device_inbox/contract_support.h"
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace starling::testing {

class metadata_store_factory {
  public:
    virtual ~metadata_store_factory() = default;
    virtual std::string name() const = 0;
    // A store with no rows, reading time from `clk` (which outlives it).
    virtual std::shared_ptr<metadata_store> create(const clock& clk) = 0;
};

using metadata_store_factory_ptr = std::shared_ptr<metadata_store_factory>;

// Test names show the adapter ("# GetParam() = embedded"), not a pointer that differs per run.
inline void PrintTo(const metadata_store_factory_ptr& factory, std::ostream* os) {
    *os << factory->name();
}

// Synchronous wrappers over the port for the test bodies.
class metadata_store_test_base : public ::testing::TestWithParam<metadata_store_factory_ptr> {
  protected:
    void SetUp() override {
        store_ = GetParam()->create(clock_);
        if (IsSkipped()) {
            return;  // the factory's service is not configured (GTEST_SKIP says how to start it)
        }
        ASSERT_TRUE(store_);
    }

    status save(client_credentials c) {
        return await<status>(
            [&](auto done) { store_->save_credentials(std::move(c), std::move(done)); });
    }
    status remove_credentials(const std::string& credentials_id) {
        return await<status>(
            [&](auto done) { store_->delete_credentials(credentials_id, std::move(done)); });
    }
    result<std::vector<client_credentials>> find(std::vector<std::string> ids) {
        return await<result<std::vector<client_credentials>>>(
            [&](auto done) { store_->find_credentials(std::move(ids), std::move(done)); });
    }
    result<std::vector<client_credentials>> list(std::size_t limit, std::size_t offset) {
        return await<result<std::vector<client_credentials>>>(
            [&](auto done) { store_->list_credentials(limit, offset, std::move(done)); });
    }
    result<std::size_t> count() {
        return await<result<std::size_t>>(
            [&](auto done) { store_->count_credentials(std::move(done)); });
    }
    status save_session(session_context ctx) {
        return await<status>(
            [&](auto done) { store_->save_session_context(std::move(ctx), std::move(done)); });
    }
    result<std::optional<session_context>> load_session(const std::string& client_id) {
        return await<result<std::optional<session_context>>>(
            [&](auto done) { store_->load_session_context(client_id, std::move(done)); });
    }
    status delete_session(const std::string& client_id) {
        return await<status>(
            [&](auto done) { store_->delete_session_context(client_id, std::move(done)); });
    }
    status save_application(application_session_context ctx) {
        return await<status>(
            [&](auto done) { store_->save_application_context(std::move(ctx), std::move(done)); });
    }
    result<std::optional<application_session_context>> load_application(
        const std::string& client_id) {
        return await<result<std::optional<application_session_context>>>(
            [&](auto done) { store_->load_application_context(client_id, std::move(done)); });
    }
    status delete_application(const std::string& client_id) {
        return await<status>(
            [&](auto done) { store_->delete_application_context(client_id, std::move(done)); });
    }
    status save_shared(application_shared_subscription e) {
        return await<status>([&](auto done) {
            store_->save_application_shared_subscription(std::move(e), std::move(done));
        });
    }
    result<std::optional<application_shared_subscription>> find_shared(const std::string& filter) {
        return await<result<std::optional<application_shared_subscription>>>([&](auto done) {
            store_->find_application_shared_subscription(filter, std::move(done));
        });
    }
    result<std::vector<application_shared_subscription>> list_shared() {
        return await<result<std::vector<application_shared_subscription>>>(
            [&](auto done) { store_->list_application_shared_subscriptions(std::move(done)); });
    }
    result<bool> delete_shared(const std::string& id) {
        return await<result<bool>>([&](auto done) {
            store_->delete_application_shared_subscription(id, std::move(done));
        });
    }
    status save_integration(integration_row row) {
        return await<status>(
            [&](auto done) { store_->save_integration(std::move(row), std::move(done)); });
    }
    result<std::vector<integration_row>> list_integrations() {
        return await<result<std::vector<integration_row>>>(
            [&](auto done) { store_->list_integrations(std::move(done)); });
    }
    result<bool> delete_integration(const std::string& id) {
        return await<result<bool>>(
            [&](auto done) { store_->delete_integration(id, std::move(done)); });
    }
    status save_stats(std::vector<stats_point> points) {
        return await<status>(
            [&](auto done) { store_->save_stats(std::move(points), std::move(done)); });
    }
    result<std::vector<stats_point>> read_stats(stats_query query) {
        return await<result<std::vector<stats_point>>>(
            [&](auto done) { store_->read_stats(std::move(query), std::move(done)); });
    }
    result<std::size_t> delete_stats_before(std::int64_t ts_ms) {
        return await<result<std::size_t>>(
            [&](auto done) { store_->delete_stats_before(ts_ms, std::move(done)); });
    }
    status record_unauthorized(unauthorized_client entry) {
        return await<status>(
            [&](auto done) { store_->record_unauthorized(std::move(entry), std::move(done)); });
    }
    result<std::vector<unauthorized_client>> list_unauthorized(std::size_t limit) {
        auto page = query_unauthorized({.limit = limit});
        if (!page) {
            return page.error();
        }
        return std::move(page.value().rows);
    }
    result<unauthorized_page> query_unauthorized(unauthorized_query query) {
        return await<result<unauthorized_page>>(
            [&](auto done) { store_->list_unauthorized(std::move(query), std::move(done)); });
    }
    result<std::optional<unauthorized_client>> find_unauthorized(const std::string& id) {
        return await<result<std::optional<unauthorized_client>>>(
            [&](auto done) { store_->find_unauthorized(id, std::move(done)); });
    }
    result<bool> delete_unauthorized(const std::string& id) {
        return await<result<bool>>(
            [&](auto done) { store_->delete_unauthorized(id, std::move(done)); });
    }
    result<std::size_t> clear_unauthorized() {
        return await<result<std::size_t>>(
            [&](auto done) { store_->clear_unauthorized(std::move(done)); });
    }
    status put_setting(const std::string& key, const std::string& value) {
        return await<status>([&](auto done) { store_->put_setting(key, value, std::move(done)); });
    }
    result<std::optional<std::string>> get_setting(const std::string& key) {
        return await<result<std::optional<std::string>>>(
            [&](auto done) { store_->get_setting(key, std::move(done)); });
    }

    static integration_row integration(const std::string& id, std::int64_t created_time_ms,
                                       const std::string& name = "webhook") {
        return {.id = id,
                .created_time_ms = created_time_ms,
                .name = name,
                .type = "HTTP",
                .enabled = true,
                .configuration = R"({"restEndpointUrl":"http://localhost:8080/hook"})",
                .additional_info = R"({"description":"test"})"};
    }
    static client_credentials credentials(const std::string& credentials_id,
                                          const std::string& name = "device") {
        client_credentials c;
        c.name = name;
        c.credentials_id = credentials_id;
        c.credentials_type = "MQTT_BASIC";
        c.credentials_value = R"({"userName":"u","password":null})";
        return c;
    }

    manual_clock clock_;
    std::shared_ptr<metadata_store> store_;
};

class metadata_store_contract : public metadata_store_test_base {};
class metadata_store_concurrency : public metadata_store_test_base {};

}  // namespace starling::testing
