// integration_service on the embedded log and the SQLite metadata store: start() returns only
// once the store's integrations are in the router's matcher. The daemon starts the router after
// it, so a message acknowledged before a crash and routed again at restart is copied to its
// integration (an empty matcher would skip the copy and the router would commit past it).

#include "integration/integration_service.h"

#include "adapters/embedded/message_log.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "broker/topics.h"
#include "metrics/integration_probe.h"
#include "starling/clock.h"

#include "integration/matcher.h"
#include "support/temp_dir.h"
#include <gtest/gtest.h>
#include <prometheus/registry.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

namespace starling::integration {
namespace {

integration_row http_row(std::string id, std::string filter, bool enabled) {
    return integration_row{
        .id = std::move(id),
        .created_time_ms = 1'700'000'000'000,
        .name = "to-backend",
        .type = "HTTP",
        .enabled = enabled,
        .configuration = R"({"topicFilters":[")" + filter +
                         R"("],"clientConfiguration":{"restEndpointUrl":"http://127.0.0.1:9/in"}})",
        .additional_info = ""};
}

class integration_service_test : public ::testing::Test {
  protected:
    void SetUp() override {
        adapters::embedded::embedded_log_config cfg;
        cfg.data_dir = dir_.path();
        log_ = std::move(adapters::embedded::embedded_message_log::open(cfg).value());
        store_ = std::move(adapters::embedded::sqlite_metadata_store::open(
                               {.data_dir = dir_.path()}, system_clock::instance())
                               .value());
    }

    void save(integration_row row) {
        std::promise<bool> saved;
        store_->save_integration(std::move(row),
                                 [&saved](status st) { saved.set_value(st.has_value()); });
        ASSERT_TRUE(saved.get_future().get());
    }

    std::unique_ptr<integration_service> service() {
        return std::make_unique<integration_service>(
            *store_, *log_, topics_, matcher_, probe_,
            integration_service::options{.refresh_period = std::chrono::hours(1),
                                         .run_executors = false,
                                         .service_id = "n1"});
    }

    testing::temp_dir dir_;
    std::unique_ptr<message_log> log_;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> store_;
    broker::topic_names topics_{"starling"};
    integration_matcher matcher_;
    prometheus::Registry registry_;
    metrics::integration_probe probe_{registry_};
};

TEST_F(integration_service_test, StartReturnsWithTheStoredIntegrationsMatched) {
    save(http_row("11111111-2222-4333-8444-555555555555", "sensors/#", true));
    save(http_row("66666666-7777-4888-8999-000000000000", "alerts/#", false));
    ASSERT_TRUE(matcher_.empty());

    auto svc = service();
    svc->start();
    // No wait: the matcher is current when start() returns.
    std::vector<std::string> topics;
    matcher_.match("sensors/t1", topics);
    EXPECT_EQ(topics,
              std::vector<std::string>{topics_.msg_ie("11111111-2222-4333-8444-555555555555")});
    topics.clear();
    matcher_.match("alerts/a", topics);
    EXPECT_TRUE(topics.empty()) << "a disabled integration is not routed to";

    svc->stop();
    EXPECT_TRUE(matcher_.empty()) << "stop() clears the matcher";
}

TEST_F(integration_service_test, StartWithNoIntegrationsLeavesTheMatcherEmpty) {
    auto svc = service();
    svc->start();
    EXPECT_TRUE(matcher_.empty());
    svc->stop();
}

}  // namespace
}  // namespace starling::integration
