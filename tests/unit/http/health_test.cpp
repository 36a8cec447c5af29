#include "http/health.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace starling::http {
namespace {

component_health with(health_status status) { return {status, {}}; }

TEST(http_health_registry, reports_out_of_service_until_running) {
    health_registry health;
    EXPECT_EQ(health.current_lifecycle(), lifecycle::starting);
    EXPECT_EQ(health.evaluate().status, health_status::out_of_service);
    health.set_lifecycle(lifecycle::running);
    EXPECT_EQ(health.evaluate().status, health_status::up);
    // A draining node is not ready, and still alive (nothing may restart it mid-drain).
    health.set_lifecycle(lifecycle::draining);
    EXPECT_EQ(health.evaluate().status, health_status::out_of_service);
    EXPECT_EQ(health.evaluate_liveness().status, health_status::up);
    health.set_lifecycle(lifecycle::stopping);
    const auto report = health.evaluate();
    EXPECT_EQ(report.status, health_status::out_of_service);
    EXPECT_EQ(report.body["status"], "OUT_OF_SERVICE");
}

TEST(http_health_registry, status_is_the_worst_component) {
    health_registry health;
    health.set_lifecycle(lifecycle::running);
    health_status a = health_status::up;
    health_status b = health_status::up;
    ASSERT_TRUE(health.add("a", [&] { return with(a); }));
    ASSERT_TRUE(health.add("b", [&] { return with(b); }));
    EXPECT_EQ(health.evaluate().status, health_status::up);
    b = health_status::degraded;
    EXPECT_EQ(health.evaluate().status, health_status::degraded);
    a = health_status::down;
    EXPECT_EQ(health.evaluate().status, health_status::down);
    a = health_status::out_of_service;
    EXPECT_EQ(health.evaluate().status, health_status::out_of_service);
}

TEST(http_health_registry, down_component_beats_lifecycle) {
    health_registry health;
    ASSERT_TRUE(health.add("log", [] { return with(health_status::down); }));
    EXPECT_EQ(health.evaluate().status, health_status::down);
}

TEST(http_health_registry, body_has_spring_boot_shape) {
    health_registry health;
    health.set_lifecycle(lifecycle::running);
    ASSERT_TRUE(health.add("messageLog", [] {
        return component_health{health_status::degraded, {{"partitions", 16}, {"lag", 3}}};
    }));
    ASSERT_TRUE(health.add("deviceInbox", [] { return with(health_status::up); }));
    const auto report = health.evaluate();
    const auto& body = report.body;
    // The same statuses, typed, in name order (the healthStatus metric reads these).
    const std::vector<std::pair<std::string, health_status>> components{
        {"deviceInbox", health_status::up}, {"messageLog", health_status::degraded}};
    EXPECT_EQ(report.components, components);
    EXPECT_EQ(body["status"], "DEGRADED");
    EXPECT_EQ(body["components"]["messageLog"]["status"], "DEGRADED");
    EXPECT_EQ(body["components"]["messageLog"]["details"]["partitions"], 16);
    EXPECT_EQ(body["components"]["deviceInbox"]["status"], "UP");
    EXPECT_FALSE(body["components"]["deviceInbox"].contains("details"));
}

TEST(http_health_registry, throwing_check_reports_down_with_the_error) {
    health_registry health;
    health.set_lifecycle(lifecycle::running);
    ASSERT_TRUE(health.add(
        "metadata", []() -> component_health { throw std::runtime_error("connection refused"); }));
    const auto report = health.evaluate();
    EXPECT_EQ(report.status, health_status::down);
    EXPECT_EQ(report.body["components"]["metadata"]["details"]["error"], "connection refused");
}

TEST(http_health_registry, names_are_unique_and_removable) {
    health_registry health;
    health.set_lifecycle(lifecycle::running);
    EXPECT_TRUE(health.add("x", [] { return with(health_status::down); }));
    EXPECT_FALSE(health.add("x", [] { return with(health_status::up); }));
    EXPECT_EQ(health.evaluate().status, health_status::down);
    EXPECT_TRUE(health.remove("x"));
    EXPECT_FALSE(health.remove("x"));
    EXPECT_EQ(health.evaluate().status, health_status::up);
    EXPECT_TRUE(health.evaluate().body["components"].empty());
}

// Spring's diskSpace component from a storage component's free-space reading.
TEST(http_disk_space_health, down_while_refusing_degraded_while_slowed) {
    disk_space_reading reading{.path = "/var/lib/starling",
                               .total_bytes = 1000,
                               .free_bytes = 900,
                               .threshold_bytes = 100,
                               .slow_threshold_bytes = 400};
    auto h = disk_space_health(reading);
    EXPECT_EQ(h.status, health_status::up);
    EXPECT_EQ(h.details["path"], "/var/lib/starling");
    EXPECT_EQ(h.details["free"], 900);
    EXPECT_EQ(h.details["threshold"], 100);
    EXPECT_FALSE(h.details.contains("reason"));

    reading.free_bytes = 300;
    reading.slowed = true;
    h = disk_space_health(reading);
    EXPECT_EQ(h.status, health_status::degraded);
    EXPECT_TRUE(is_serving(h.status));
    EXPECT_NE(h.details["reason"].get<std::string>().find("slowed"), std::string::npos);

    reading.free_bytes = 50;
    reading.slowed = false;
    reading.refusing = true;
    h = disk_space_health(reading);
    EXPECT_EQ(h.status, health_status::down);
    EXPECT_NE(h.details["reason"].get<std::string>().find("refused"), std::string::npos);

    // In the registry: the node reports DOWN (503) with the reason.
    health_registry health;
    health.set_lifecycle(lifecycle::running);
    ASSERT_TRUE(health.add("diskSpace", [&] { return disk_space_health(reading); }));
    const auto report = health.evaluate();
    EXPECT_EQ(report.status, health_status::down);
    EXPECT_FALSE(is_serving(report.status));
    EXPECT_EQ(report.body["components"]["diskSpace"]["details"]["free"], 50);
}

TEST(http_health_registry, liveness_ignores_the_stores_and_the_lifecycle) {
    health_registry health;  // starting: readiness is OUT_OF_SERVICE
    ASSERT_TRUE(health.add("metadataStore", [] {
        return component_health{health_status::down, {}};
    }));
    auto live = health.evaluate_liveness();
    EXPECT_EQ(live.status, health_status::up);
    EXPECT_TRUE(live.body["components"].empty());
    EXPECT_EQ(health.evaluate().status, health_status::down);

    health_status loops = health_status::degraded;
    ASSERT_TRUE(health.add_liveness("eventLoops", [&] { return component_health{loops, {}}; }));
    EXPECT_FALSE(health.add_liveness("eventLoops", [] { return component_health{}; }));
    live = health.evaluate_liveness();
    EXPECT_EQ(live.status, health_status::up);  // slow is not dead
    EXPECT_EQ(live.body["status"], "UP");
    EXPECT_EQ(live.body["components"]["eventLoops"]["status"], "DEGRADED");
    loops = health_status::down;
    live = health.evaluate_liveness();
    EXPECT_EQ(live.status, health_status::down);
    EXPECT_EQ(live.body["status"], "DOWN");
    EXPECT_FALSE(health.evaluate().body["components"].contains("eventLoops"));
}

TEST(http_health_status, names_and_serving) {
    EXPECT_EQ(to_string(health_status::up), "UP");
    EXPECT_EQ(to_string(health_status::degraded), "DEGRADED");
    EXPECT_EQ(to_string(health_status::out_of_service), "OUT_OF_SERVICE");
    EXPECT_EQ(to_string(health_status::down), "DOWN");
    EXPECT_TRUE(is_serving(health_status::up));
    EXPECT_TRUE(is_serving(health_status::degraded));
    EXPECT_FALSE(is_serving(health_status::out_of_service));
    EXPECT_FALSE(is_serving(health_status::down));
}

}  // namespace
}  // namespace starling::http
