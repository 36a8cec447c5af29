#include "config/loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

namespace starling::config {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::filesystem::path shipped_file =
    std::filesystem::path(STARLING_SOURCE_DIR) / "config" / "starling.yml";

// A fake environment, so tests never depend on (or change) the process's one.
load_options with_env(std::map<std::string, std::string> vars,
                      std::vector<std::string>* warnings = nullptr) {
    load_options options;
    options.env = [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end()) {
            return std::nullopt;
        }
        return it->second;
    };
    options.warnings = warnings;
    return options;
}

broker_config load_shipped(std::map<std::string, std::string> vars = {},
                           std::vector<std::string>* warnings = nullptr) {
    return load_config(shipped_file, with_env(std::move(vars), warnings));
}

std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string host_name() {
    char buffer[256] = {};
    EXPECT_EQ(::gethostname(buffer, sizeof buffer - 1), 0);
    return buffer;
}

std::uint32_t cores() { return std::max(1U, std::thread::hardware_concurrency()); }

TEST(config_loader, shipped_file_yields_the_documented_defaults) {
    std::vector<std::string> warnings;
    const auto c = load_shipped({}, &warnings);
    EXPECT_TRUE(warnings.empty()) << warnings.front();

    EXPECT_EQ(c.starling.mode, run_mode::embedded);
    EXPECT_EQ(c.starling.data_dir, "./data");
    EXPECT_EQ(c.starling.log_level, "info");
    EXPECT_EQ(c.starling.shutdown_timeout, 10s);
    EXPECT_EQ(c.service.id, host_name());
    EXPECT_EQ(c.server.address, "0.0.0.0");
    EXPECT_EQ(c.server.port, 8083);
    EXPECT_EQ(c.listener.write_buffer_high_water_mark, 1280U * 1024U);
    EXPECT_EQ(c.listener.write_buffer_low_water_mark, 640U * 1024U);
    EXPECT_EQ(c.listener.so_receive_buffer, 0U);
    EXPECT_EQ(c.listener.io_threads, cores());
    EXPECT_TRUE(c.listener.tcp.enabled);
    EXPECT_EQ(c.listener.tcp.bind_address, "0.0.0.0");
    EXPECT_EQ(c.listener.tcp.bind_port, 1883);
    EXPECT_EQ(c.listener.tcp.netty.max_payload_size, 65536U);
    EXPECT_EQ(c.listener.tcp.netty.shutdown_timeout, 5s);
    EXPECT_EQ(c.queue.msg_all.consumers_count, 4U);
    EXPECT_EQ(c.queue.msg_all.poll_interval, 100ms);
    EXPECT_EQ(c.queue.kafka.kafka_prefix, "starling");
    EXPECT_EQ(c.queue.kafka.msg_all.partitions, 16U);
    EXPECT_EQ(c.queue.kafka.msg_all.retention, std::chrono::milliseconds(604800000));
    EXPECT_EQ(c.queue.kafka.bootstrap_servers, "localhost:9092");
    EXPECT_EQ(c.queue.kafka.replication_factor, 1U);
    EXPECT_EQ(c.queue.kafka.admin_command_timeout, 30s);
    EXPECT_TRUE(c.queue.kafka.defaults.config.empty());
    EXPECT_EQ(c.queue.kafka.defaults.consumer.session_timeout, 10000ms);
    EXPECT_EQ(c.queue.kafka.defaults.consumer.heartbeat_interval, 3000ms);
    EXPECT_EQ(c.queue.kafka.defaults.consumer.max_poll_interval, 300000ms);
    EXPECT_EQ(c.queue.kafka.defaults.producer.acks, "1");
    EXPECT_EQ(c.queue.kafka.defaults.producer.enable_idempotence, std::nullopt);
    EXPECT_EQ(c.queue.kafka.defaults.producer.batch_size, 16384U);
    EXPECT_EQ(c.queue.kafka.defaults.producer.linger, 5ms);
    EXPECT_EQ(c.queue.kafka.defaults.producer.compression_type, "none");
    EXPECT_EQ(c.queue.kafka.defaults.producer.delivery_timeout, 30000ms);
    EXPECT_TRUE(c.queue.kafka.msg_all.topic_properties.empty());
    EXPECT_EQ(c.queue.kafka.application_persisted_msg.retention,
              std::chrono::milliseconds(604800000));
    EXPECT_EQ(c.queue.kafka.application_persisted_msg.retention_bytes, 1048576000);
    EXPECT_EQ(c.queue.embedded.fsync, fsync_policy::interval);
    EXPECT_EQ(c.queue.embedded.fsync_interval, 1000ms);
    EXPECT_EQ(c.queue.embedded.segment_bytes, 67108864U);
    EXPECT_EQ(c.queue.embedded.retention_bytes, 1073741824);
    EXPECT_EQ(c.queue.embedded.disk_min_free_bytes, 268435456U);
    EXPECT_EQ(c.queue.embedded.disk_slow_free_bytes, 1073741824U);
    EXPECT_EQ(c.queue.embedded.disk_slow_rate, 1048576U);
    EXPECT_EQ(c.actors.system.throughput, 5U);
    EXPECT_EQ(c.actors.client.dispatcher_pool_size, cores());
    EXPECT_EQ(c.actors.client.mailbox_capacity, 10000U);
    EXPECT_EQ(c.actors.client.mailbox_bytes, 4U * 1024 * 1024);
    EXPECT_EQ(c.actors.client.wait_before_generated_actor_stop, 10s);
    EXPECT_EQ(c.actors.client.wait_before_named_actor_stop, 60s);
    EXPECT_EQ(c.actors.persisted_device.dispatcher_pool_size, cores());
    EXPECT_EQ(c.actors.persisted_device.wait_before_actor_stop, 5min);
    EXPECT_EQ(c.mqtt.max_in_flight_msgs, 1000);
    EXPECT_EQ(c.mqtt.keep_alive.max_keep_alive, 600s);
    EXPECT_EQ(c.mqtt.topic.max_segments_count, 128U);
    EXPECT_EQ(c.mqtt.topic.alias_max, 10);
    EXPECT_EQ(c.mqtt.topic.min_length_for_alias_replacement, 50U);
    EXPECT_TRUE(c.mqtt.subscription.allow_root_multi_level_wildcard);
    EXPECT_EQ(c.mqtt.subscription.max_per_client, 1000U);
    EXPECT_EQ(c.mqtt.retained_messages.max_count, 1000000U);
    EXPECT_EQ(c.mqtt.retained_messages.max_bytes, 1073741824U);
    EXPECT_EQ(c.mqtt.max_user_properties, 128);
    EXPECT_EQ(c.mqtt.shared_subscriptions.processing_type,
              shared_subscription_processing::round_robin);
    EXPECT_EQ(c.mqtt.client_session_expiry.max_expiry_interval, 604800s);
    EXPECT_EQ(c.mqtt.version_3_1.max_client_id_length, 1024);
    EXPECT_EQ(c.mqtt.persistent_session.device.persisted_messages.limit, 10000);
    EXPECT_EQ(c.mqtt.persistent_session.device.persisted_messages.ttl, 604800s);
    EXPECT_EQ(c.mqtt.response_info, "");
    EXPECT_TRUE(c.mqtt.retain_available);
    EXPECT_EQ(c.mqtt.max_qos, 2);
    EXPECT_FALSE(c.security.mqtt.allow_anonymous);
    EXPECT_EQ(c.security.mqtt.auth_providers,
              (std::vector<std::string>{"MQTT_BASIC", "X_509", "JWT", "HTTP"}));
    EXPECT_TRUE(c.security.mqtt.basic.enabled);
    EXPECT_EQ(c.security.mqtt.basic.auth_strategy, basic_auth_strategy::both);
    EXPECT_EQ(c.security.mqtt.auth_cache_ttl, 60000ms);
    EXPECT_EQ(c.security.mqtt.provider_timeout, 5000ms);
    EXPECT_EQ(c.security.mqtt.circuit_breaker.failure_threshold, 5);
    EXPECT_TRUE(c.security.mqtt.credentials.empty());
    EXPECT_TRUE(c.security.mqtt.blocked_clients.empty());
    EXPECT_FALSE(c.security.mqtt.ssl.enabled);
    EXPECT_TRUE(c.security.mqtt.ssl.trust_store.empty());
    EXPECT_FALSE(c.security.mqtt.ssl.skip_validity_check_for_client_cert);
    EXPECT_EQ(c.security.admin_token, "");
}

TEST(config_loader, trust_store_files_must_exist) {
    try {
        parse_config("", with_env({{"SECURITY_MQTT_SSL_TRUST_STORE", "/nonexistent/ca.pem"}}));
        FAIL() << "a missing CA file must be rejected";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "security.mqtt.ssl.trust-store");
        EXPECT_THAT(e.what(), HasSubstr("/nonexistent/ca.pem"));
        EXPECT_THAT(e.what(), HasSubstr("SECURITY_MQTT_SSL_TRUST_STORE"));
    }
}

TEST(config_loader, built_in_defaults_equal_the_shipped_file) {
    EXPECT_EQ(default_config(), load_shipped());
}

// The file is the documentation of the defaults: each known key must appear in it exactly as
// the binder table would substitute it, and the file must hold nothing else.
TEST(config_loader, shipped_file_lists_every_key_with_its_env_and_default) {
    const YAML::Node root = YAML::LoadFile(shipped_file.string());
    for (const auto& key : known_keys()) {
        std::vector<std::string> parts;
        std::stringstream path{std::string(key.key)};
        for (std::string part; std::getline(path, part, '.');) {
            parts.push_back(part);
        }
        std::function<YAML::Node(const YAML::Node&, std::size_t)> descend =
            [&](const YAML::Node& node, std::size_t i) -> YAML::Node {
            if (i == parts.size()) {
                return node;
            }
            return descend(node[parts[i]], i + 1);
        };
        const YAML::Node leaf = descend(root, 0);
        ASSERT_TRUE(leaf.IsDefined() && leaf.IsScalar()) << key.key << " missing from the file";
        EXPECT_EQ(leaf.Scalar(),
                  "${" + std::string(key.env) + ":" + std::string(key.default_value) + "}")
            << key.key;
    }
}

TEST(config_loader, every_key_is_documented_with_its_env) {
    const auto docs =
        read_file(std::filesystem::path(STARLING_SOURCE_DIR) / "docs" / "configuration.md");
    ASSERT_FALSE(docs.empty());
    for (const auto& key : known_keys()) {
        EXPECT_THAT(docs, HasSubstr("`" + std::string(key.key) + "`"));
        EXPECT_THAT(docs, HasSubstr("`" + std::string(key.env) + "`"));
    }
}

TEST(config_loader, environment_overrides_the_file) {
    const auto c =
        load_shipped({{"LISTENER_TCP_BIND_PORT", "1884"},
                      {"STARLING_MODE", "cluster"},
                      {"NETTY_WRITE_BUFFER_HIGH_WATER_MARK", "2048"},
                      {"TB_MSG_ALL_POLL_INTERVAL", "250"},
                      {"ACTORS_SYSTEM_PERSISTED_DEVICE_WAIT_BEFORE_ACTOR_STOP_MINUTES", "7"},
                      {"LISTENER_IO_THREADS", "3"},
                      {"TB_SERVICE_ID", "node-a"},
                      {"LISTENER_TCP_ENABLED", "false"},
                      {"STARLING_EMBEDDED_FSYNC", "always"}});
    EXPECT_EQ(c.listener.tcp.bind_port, 1884);
    EXPECT_EQ(c.starling.mode, run_mode::cluster);
    EXPECT_EQ(c.listener.write_buffer_high_water_mark, 2048U * 1024U);
    EXPECT_EQ(c.queue.msg_all.poll_interval, 250ms);
    EXPECT_EQ(c.actors.persisted_device.wait_before_actor_stop, 7min);
    EXPECT_EQ(c.listener.io_threads, 3U);
    EXPECT_EQ(c.service.id, "node-a");
    EXPECT_FALSE(c.listener.tcp.enabled);
    EXPECT_EQ(c.queue.embedded.fsync, fsync_policy::always);
}

TEST(config_loader, process_environment_is_the_default_source) {
    ASSERT_EQ(::setenv("MQTT_TOPIC_ALIAS_MAX", "33", 1), 0);
    const auto c = load_config(shipped_file);
    ::unsetenv("MQTT_TOPIC_ALIAS_MAX");
    EXPECT_EQ(c.mqtt.topic.alias_max, 33);
}

TEST(config_loader, an_empty_variable_still_wins_over_the_default) {
    const auto c = load_shipped({{"TB_KAFKA_PREFIX", ""}});
    EXPECT_EQ(c.queue.kafka.kafka_prefix, "");
}

TEST(config_loader, plain_values_and_embedded_placeholders) {
    const auto c = parse_config(R"(
server:
  port: 9000
starling:
  data_dir: "/var/lib/${APP:starling}/data"
mqtt:
  response-info: "${HOST}:${PORT:1883}"
)",
                                with_env({{"HOST", "broker"}}));
    EXPECT_EQ(c.server.port, 9000);
    EXPECT_EQ(c.starling.data_dir, "/var/lib/starling/data");
    EXPECT_EQ(c.mqtt.response_info, "broker:1883");
}

TEST(config_loader, defaults_may_contain_colons) {
    const auto c = parse_config("mqtt: {response-info: '${INFO:tcp://a:1}'}", with_env({}));
    EXPECT_EQ(c.mqtt.response_info, "tcp://a:1");
}

TEST(config_loader, a_missing_key_still_reads_its_environment_variable) {
    const auto c =
        parse_config("starling: {mode: embedded}\n", with_env({{"STARLING_LOG_LEVEL", "debug"}}));
    EXPECT_EQ(c.starling.log_level, "debug");
    EXPECT_EQ(c.server.port, 8083);
}

TEST(config_loader, required_variable_missing_names_key_and_variable) {
    try {
        parse_config("service: {id: '${NODE_ID}'}", with_env({}));
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "service.id");
        EXPECT_EQ(std::string(e.what()),
                  "service.id: \"${NODE_ID}\" needs environment variable NODE_ID, which is not "
                  "set");
    }
}

TEST(config_loader, malformed_placeholders_are_rejected) {
    EXPECT_THROW(parse_config("mqtt: {response-info: '${OOPS'}", with_env({})), config_error);
    EXPECT_THROW(parse_config("mqtt: {response-info: '${:x}'}", with_env({})), config_error);
    EXPECT_THROW(parse_config("mqtt: {response-info: '${A-B:x}'}", with_env({})), config_error);
}

TEST(config_loader, enums_and_booleans_are_relaxed_like_spring) {
    const auto c = load_shipped({{"STARLING_MODE", "CLUSTER"},
                                 {"MQTT_SHARED_SUBSCRIPTIONS_PROCESSING_TYPE", "round_robin"},
                                 {"MQTT_RETAIN_AVAILABLE", "no"},
                                 {"SECURITY_MQTT_ALLOW_ANONYMOUS", "Off"},
                                 {"LISTENER_TCP_ENABLED", "1"}});
    EXPECT_EQ(c.starling.mode, run_mode::cluster);
    EXPECT_FALSE(c.mqtt.retain_available);
    EXPECT_FALSE(c.security.mqtt.allow_anonymous);
    EXPECT_TRUE(c.listener.tcp.enabled);
}

TEST(config_loader, auth_providers_accept_a_yaml_list_or_commas) {
    auto c = parse_config("security: {mqtt: {auth-providers: [X_509, MQTT_BASIC]}}", with_env({}));
    EXPECT_EQ(c.security.mqtt.auth_providers, (std::vector<std::string>{"X_509", "MQTT_BASIC"}));
    c = parse_config("", with_env({{"SECURITY_MQTT_AUTH_PROVIDERS", "HTTP, JWT"}}));
    EXPECT_EQ(c.security.mqtt.auth_providers, (std::vector<std::string>{"HTTP", "JWT"}));
    try {
        parse_config("security: {mqtt: {auth-providers: [MQTT_BASIC, LDAP]}}", with_env({}));
        FAIL() << "an unknown provider must be rejected";
    } catch (const config_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("security.mqtt.auth-providers"));
        EXPECT_THAT(e.what(), HasSubstr("LDAP"));
    }
}

TEST(config_loader, credentials_and_blocked_clients_lists) {
    const auto c = parse_config(R"(
security:
  mqtt:
    basic: {auth-strategy: CLIENT_ID_AND_USERNAME}
    credentials:
      - name: sensor
        credentials-type: MQTT_BASIC
        username: alice
        password: "${ALICE_PW:secret}"
        pub: ["sensors/.*"]
        client-id-pattern: "alice-[0-9]+"
      - name: gateway
        type: APPLICATION
        credentials-type: X_509
        cert-cn-regex: "gw-.*"
    blocked-clients:
      - {type: CLIENT_ID, value: rogue}
      - {type: REGEX, value: "bad-.*", regex-match-target: USERNAME, expiration-time: 42}
)",
                                with_env({{"ALICE_PW", "from-env"}}));
    EXPECT_EQ(c.security.mqtt.basic.auth_strategy, basic_auth_strategy::both);
    ASSERT_EQ(c.security.mqtt.credentials.size(), 2U);
    const auto& basic = c.security.mqtt.credentials[0];
    EXPECT_EQ(basic.type, "DEVICE");
    EXPECT_EQ(basic.username, "alice");
    EXPECT_EQ(basic.password, "from-env");
    EXPECT_EQ(basic.pub, (std::vector<std::string>{"sensors/.*"}));
    EXPECT_FALSE(basic.sub.has_value());
    EXPECT_EQ(basic.client_id_pattern, "alice-[0-9]+");
    const auto& x509 = c.security.mqtt.credentials[1];
    EXPECT_EQ(x509.type, "APPLICATION");
    EXPECT_EQ(x509.cert_cn, "gw-.*");
    EXPECT_TRUE(x509.cert_cn_is_regex);
    ASSERT_EQ(c.security.mqtt.blocked_clients.size(), 2U);
    EXPECT_EQ(c.security.mqtt.blocked_clients[1].regex_match_target, "USERNAME");
    EXPECT_EQ(c.security.mqtt.blocked_clients[1].expiration_time_ms, 42);
}

TEST(config_loader, bad_credentials_entries_name_the_field) {
    const std::pair<const char*, const char*> cases[] = {
        {"credentials: [{name: a, credentials-type: MQTT_BASIC}]",
         "security.mqtt.credentials[0].client-id"},
        {"credentials: [{name: a, credentials-type: LDAP, username: u}]",
         "security.mqtt.credentials[0].credentials-type"},
        {"credentials: [{name: a, credentials-type: X_509, cert-cn: x, password: p}]",
         "security.mqtt.credentials[0].credentials-type"},
        {"credentials: [{name: a, credentials-type: MQTT_BASIC, username: u, pub: ['(']}]",
         "security.mqtt.credentials[0].pub"},
        {"blocked-clients: [{type: HOST, value: x}]", "security.mqtt.blocked-clients[0].type"},
        {"blocked-clients: [{type: CLIENT_ID}]", "security.mqtt.blocked-clients[0].value"},
    };
    for (const auto& [yaml, key] : cases) {
        try {
            parse_config(std::string("security: {mqtt: {") + yaml + "}}", with_env({}));
            ADD_FAILURE() << "accepted: " << yaml;
        } catch (const config_error& e) {
            EXPECT_THAT(e.what(), HasSubstr(key)) << yaml;
        }
    }
}

// Topic, CN and blocked-client patterns are validated at start-up by the compiler the broker
// matches with (RE2): syntax std::regex took but RE2 refuses (lookaround, backreferences) stops
// the start-up naming the key, rather than failing at the first CONNECT.
TEST(config_loader, patterns_re2_refuses_fail_start_up_naming_the_key) {
    const std::pair<const char*, const char*> cases[] = {
        {"credentials: [{name: a, credentials-type: MQTT_BASIC, username: u, "
         "pub: ['(?!admin/).*']}]",
         "security.mqtt.credentials[0].pub"},
        {"credentials: [{name: a, credentials-type: MQTT_BASIC, username: u, sub: ['(a)\\1']}]",
         "security.mqtt.credentials[0].sub"},
        {"credentials: [{name: a, credentials-type: X_509, cert-cn-regex: 'gw-(?<=x)1'}]",
         "security.mqtt.credentials[0].cert-cn-regex"},
        {"credentials: [{name: a, credentials-type: X_509, cert-cn-regex: 'gw-('}]",
         "security.mqtt.credentials[0].cert-cn-regex"},
        {"credentials: [{name: a, credentials-type: MQTT_BASIC, username: u, "
         "client-id-pattern: 'u(?=1)'}]",
         "security.mqtt.credentials[0].client-id-pattern"},
        {"blocked-clients: [{type: REGEX, value: '(?=bad).*'}]",
         "security.mqtt.blocked-clients[0].value"},
        {"jwt: {auth-rules: {sub: ['(?=a)b']}}", "security.mqtt.jwt.auth-rules.sub"},
        {"http: {auth-rules: {pub: ['\\pL{100}']}}", "security.mqtt.http.auth-rules.pub"},
    };
    for (const auto& [yaml, key] : cases) {
        try {
            parse_config(std::string("security: {mqtt: {") + yaml + "}}", with_env({}));
            ADD_FAILURE() << "accepted: " << yaml;
        } catch (const config_error& e) {
            EXPECT_THAT(e.what(), HasSubstr(key)) << yaml;
            EXPECT_THAT(e.what(), HasSubstr("RE2")) << yaml;
        }
    }
    // What TBMQ's patterns use is accepted.
    const auto c = parse_config(R"yaml(
security:
  mqtt:
    credentials:
      - {name: a, credentials-type: MQTT_BASIC, username: u,
         pub: ['sensors/[^/]+/temp', 'devices/\d+/(up|down)', 'x{2,3}'], sub: ['(?i)cmd/.*']}
      - {name: g, credentials-type: X_509, cert-cn-regex: 'gw-[0-9]+'}
    blocked-clients:
      - {type: REGEX, value: 'guest\d+', regex-match-target: USERNAME}
)yaml",
                                with_env({}));
    EXPECT_EQ(c.security.mqtt.credentials.size(), 2U);
    EXPECT_EQ(c.security.mqtt.blocked_clients.size(), 1U);
}

TEST(config_loader, jwt_and_http_provider_maps_lists_and_placeholders) {
    std::vector<std::string> warnings;
    const auto c = parse_config(R"(
security:
  mqtt:
    jwt:
      enabled: true
      verifier: JWKS
      jwks: {endpoint: "http://idp/jwks", headers: {Authorization: "Bearer ${IDP_TOKEN:t}"}}
      auth-claims: {sub: "${clientId}", iss: "${ISSUER:me}"}
      client-type-claims: {role: backend}
      auth-rules: {pub: ["a/.*", "b/.*"], sub: "c/.*"}
    http:
      enabled: true
      headers: {X-Api-Key: k}
      request-body: '{"u": "${username}", "p": "${password}", "c": "${clientId}"}'
      auth-rules: {pub: []}
)",
                                with_env({{"ISSUER", "from-env"}}, &warnings));
    const auto& jwt = c.security.mqtt.jwt;
    EXPECT_TRUE(jwt.enabled);
    EXPECT_EQ(jwt.verifier, "JWKS");
    EXPECT_EQ(jwt.jwks_headers.at("Authorization"), "Bearer t");
    EXPECT_EQ(jwt.auth_claims.at("sub"), "${clientId}");  // a provider placeholder, kept
    EXPECT_EQ(jwt.auth_claims.at("iss"), "from-env");
    EXPECT_EQ(jwt.client_type_claims.at("role"), "backend");
    EXPECT_EQ(jwt.auth_rules.pub, (std::vector<std::string>{"a/.*", "b/.*"}));
    EXPECT_EQ(jwt.auth_rules.sub, (std::vector<std::string>{"c/.*"}));
    const auto& http = c.security.mqtt.http;
    EXPECT_EQ(http.headers, (std::map<std::string, std::string>{{"X-Api-Key", "k"}}));
    EXPECT_EQ(http.request_body, R"({"u": "${username}", "p": "${password}", "c": "${clientId}"})");
    EXPECT_TRUE(http.auth_rules.pub.empty());
    EXPECT_EQ(http.auth_rules.sub, (std::vector<std::string>{".*"}));
    EXPECT_TRUE(warnings.empty()) << warnings.front();

    const auto defaults = default_config();
    EXPECT_EQ(defaults.security.mqtt.http.headers,
              (std::map<std::string, std::string>{{"Content-Type", "application/json"}}));
    EXPECT_EQ(defaults.security.mqtt.jwt.jwks_refresh_interval, 300s);
    EXPECT_EQ(defaults.security.mqtt.http.read_timeout, 5000ms);
}

TEST(config_loader, bad_jwt_and_http_values_name_the_key) {
    const std::pair<const char*, const char*> cases[] = {
        {"jwt: {verifier: RSA}", "security.mqtt.jwt.verifier"},
        {"jwt: {algorithm: NONE}", "security.mqtt.jwt.algorithm"},
        {"jwt: {default-client-type: ROBOT}", "security.mqtt.jwt.default-client-type"},
        {"jwt: {jwks: {refresh-interval: 10}}", "security.mqtt.jwt.jwks.refresh-interval"},
        {"jwt: {auth-claims: [a]}", "security.mqtt.jwt.auth-claims"},
        {"jwt: {auth-rules: {pub: [\"(\"]}}", "security.mqtt.jwt.auth-rules.pub"},
        {"http: {method: BREW}", "security.mqtt.http.method"},
        {"http: {max-parallel-requests: 0}", "security.mqtt.http.max-parallel-requests"},
        {"http: {headers: {a: [b]}}", "security.mqtt.http.headers"},
    };
    for (const auto& [yaml, key] : cases) {
        try {
            parse_config(std::string("security: {mqtt: {") + yaml + "}}", with_env({}));
            ADD_FAILURE() << "accepted: " << yaml;
        } catch (const config_error& e) {
            EXPECT_THAT(e.what(), HasSubstr(key)) << yaml;
        }
    }
}

// TBMQ's published example HMAC secret lets anyone sign tokens: refused when the JWT provider
// would use it, with the key named; exp is required unless switched off.
TEST(config_loader, the_example_jwt_secret_is_refused_naming_the_key) {
    const std::map<std::string, std::string> example = {
        {"SECURITY_MQTT_JWT_ENABLED", "true"},
        {"SECURITY_MQTT_JWT_SECRET", "please-change-this-32-char-jwt-secret"}};
    try {
        load_shipped(example);
        FAIL() << "the example secret was accepted";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "security.mqtt.jwt.secret");
        EXPECT_THAT(e.what(), HasSubstr("example secret"));
    }
    // Harmless while the provider is off or verifies with keys, and any other secret is fine.
    auto off = example;
    off["SECURITY_MQTT_JWT_ENABLED"] = "false";
    EXPECT_NO_THROW(load_shipped(off));
    auto jwks = example;
    jwks["SECURITY_MQTT_JWT_VERIFIER"] = "JWKS";
    EXPECT_NO_THROW(load_shipped(jwks));
    auto own = example;
    own["SECURITY_MQTT_JWT_SECRET"] = "an-operator-chosen-secret-of-40-bytes-xx";
    const auto c = load_shipped(own);
    EXPECT_FALSE(c.security.mqtt.jwt.allow_tokens_without_exp);
    own["SECURITY_MQTT_JWT_ALLOW_TOKENS_WITHOUT_EXP"] = "true";
    EXPECT_TRUE(load_shipped(own).security.mqtt.jwt.allow_tokens_without_exp);
    // The shipped file no longer carries a secret at all.
    EXPECT_EQ(load_shipped().security.mqtt.jwt.secret, "");
}

TEST(config_loader, unknown_keys_warn_but_load) {
    std::vector<std::string> warnings;
    const auto c = parse_config(R"(
server:
  port: 8090
  http2: {enabled: true}
mqtt:
  connect: {threads: 4}
  max-qos: 1
stats: true
)",
                                with_env({}, &warnings));
    EXPECT_EQ(c.server.port, 8090);
    EXPECT_EQ(c.mqtt.max_qos, 1);
    ASSERT_EQ(warnings.size(), 3U);
    EXPECT_THAT(warnings[0], HasSubstr("'server.http2.enabled'"));
    EXPECT_THAT(warnings[1], HasSubstr("'mqtt.connect.threads'"));
    EXPECT_THAT(warnings[2], HasSubstr("'stats'"));
}

TEST(config_loader, empty_document_means_all_defaults) {
    EXPECT_EQ(parse_config("", with_env({})), default_config());
    EXPECT_EQ(parse_config("# nothing\n", with_env({})), default_config());
}

TEST(config_loader, section_written_as_a_value_is_an_error_naming_it) {
    try {
        parse_config("listener: 5\n", with_env({}));
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "listener");
        EXPECT_THAT(e.what(), StartsWith("listener: expected a section"));
    }
}

TEST(config_loader, value_written_as_a_list_is_an_error_naming_it) {
    try {
        parse_config("listener: {tcp: {bind_port: [1, 2]}}\n", with_env({}));
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "listener.tcp.bind_port");
        EXPECT_THAT(e.what(), HasSubstr("expected a single value, found a list"));
    }
}

TEST(config_loader, yaml_syntax_error_names_the_file_and_line) {
    try {
        parse_config("server:\n  port: [8083\n", with_env({}), "test.yml");
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "");
        EXPECT_THAT(e.what(), StartsWith("test.yml:"));
        EXPECT_THAT(e.what(), HasSubstr("YAML syntax error"));
    }
}

TEST(config_loader, missing_file_is_an_error_naming_it) {
    try {
        load_config("/nonexistent/starling.yml", with_env({}));
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("/nonexistent/starling.yml"));
    }
}

TEST(config_loader, to_string_names_enum_values) {
    EXPECT_EQ(to_string(run_mode::cluster), "cluster");
    EXPECT_EQ(to_string(fsync_policy::none), "none");
    EXPECT_EQ(to_string(shared_subscription_processing::round_robin), "ROUND_ROBIN");
}

TEST(config_loader, port_zero_means_any) {
    const auto c = load_shipped({{"HTTP_BIND_PORT", "0"}, {"LISTENER_TCP_BIND_PORT", "0"}});
    EXPECT_EQ(c.server.port, 0);
    EXPECT_EQ(c.listener.tcp.bind_port, 0);
}

TEST(config_loader, limits_accept_their_boundaries) {
    const auto c =
        load_shipped({{"MQTT_PERSISTENT_SESSION_DEVICE_PERSISTED_MESSAGES_LIMIT", "65535"},
                      {"MQTT_MAX_QOS", "0"},
                      {"TB_KAFKA_MSG_ALL_RETENTION_MS", "-1"},
                      {"HTTP_BIND_ADDRESS", "::1"}});
    EXPECT_EQ(c.mqtt.persistent_session.device.persisted_messages.limit, 65535);
    EXPECT_EQ(c.mqtt.max_qos, 0);
    EXPECT_EQ(c.queue.kafka.msg_all.retention, std::chrono::milliseconds(-1));
    EXPECT_EQ(c.server.address, "::1");
}

TEST(config_loader, the_documented_example_message) {
    try {
        parse_config("listener: {tcp: {bind_port: 70000}}\n", with_env({}));
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "listener.tcp.bind_port: \"70000\" is not a valid port (1..65535, or 0 for "
                  "any)");
    }
}

// --- every validation names its key, the value, and why

struct bad_value {
    std::string env;
    std::string value;
    std::string key;
    std::string why;  // a fragment of the explanation
};

void PrintTo(const bad_value& c, std::ostream* os) { *os << c.env << "=" << c.value; }

class config_validation : public ::testing::TestWithParam<bad_value> {};

TEST_P(config_validation, error_names_key_value_and_reason) {
    const auto& c = GetParam();
    try {
        load_shipped({{c.env, c.value}});
        FAIL() << "expected config_error";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), c.key);
        EXPECT_THAT(e.what(), StartsWith(c.key + ": \"" + c.value + "\" "));
        EXPECT_THAT(e.what(), HasSubstr(c.why));
    }
}

INSTANTIATE_TEST_SUITE_P(
    config, config_validation,
    ::testing::Values(
        bad_value{"LISTENER_TCP_BIND_PORT", "70000", "listener.tcp.bind_port",
                  "is not a valid port (1..65535, or 0 for any) (value from environment "
                  "variable LISTENER_TCP_BIND_PORT)"},
        bad_value{"HTTP_BIND_PORT", "http", "server.port", "is not a valid port"},
        bad_value{"HTTP_BIND_PORT", "-1", "server.port", "is not a valid port"},
        bad_value{"STARLING_MODE", "standalone", "starling.mode",
                  "is not one of: embedded, cluster"},
        bad_value{"STARLING_LOG_LEVEL", "verbose", "starling.log_level",
                  "is not a known log level (trace, debug, info"},
        bad_value{"STARLING_DATA_DIR", "", "starling.data_dir", "must not be empty"},
        bad_value{"TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC", "ten", "starling.shutdown_timeout_sec",
                  "is not an integer"},
        bad_value{"TB_SERVICE_ID", "node/1", "service.id", "contains '/'"},
        bad_value{"HTTP_BIND_ADDRESS", "999.1.1.1", "server.address",
                  "is not an IPv4 or IPv6 address"},
        bad_value{"NETTY_WRITE_BUFFER_HIGH_WATER_MARK", "0",
                  "listener.write_buffer_high_water_mark", "is out of range (1..1048576 KB)"},
        bad_value{"NETTY_WRITE_BUFFER_LOW_WATER_MARK", "1280",
                  "listener.write_buffer_low_water_mark",
                  "must be lower than listener.write_buffer_high_water_mark (\"1280\")"},
        bad_value{"NETTY_SO_RECEIVE_BUFFER", "1.5", "listener.so_receive_buffer",
                  "is not an integer"},
        bad_value{"LISTENER_IO_THREADS", "5000", "listener.io_threads",
                  "is out of range (0..1024; 0 = number of cores)"},
        bad_value{"LISTENER_TCP_ENABLED", "maybe", "listener.tcp.enabled", "is not a boolean"},
        bad_value{"LISTENER_TCP_BIND_ADDRESS", "localhost", "listener.tcp.bind_address",
                  "is not an IPv4 or IPv6 address"},
        bad_value{"TCP_NETTY_MAX_PAYLOAD_SIZE", "300000000", "listener.tcp.netty.max_payload_size",
                  "is out of range"},
        bad_value{"TB_MSG_ALL_CONSUMERS_COUNT", "0", "queue.msg-all.consumers-count",
                  "is out of range (1..1024)"},
        bad_value{"TB_KAFKA_PREFIX", "my prefix", "queue.kafka.kafka-prefix", "contains ' '"},
        bad_value{"TB_KAFKA_MSG_ALL_PARTITIONS", "0", "queue.kafka.msg-all.partitions",
                  "is out of range"},
        bad_value{"TB_KAFKA_MSG_ALL_RETENTION_MS", "0", "queue.kafka.msg-all.retention-ms",
                  "would delete every record"},
        bad_value{"TB_KAFKA_SERVERS", " ", "queue.kafka.bootstrap.servers", "must not be empty"},
        bad_value{"TB_KAFKA_DEFAULT_PRODUCER_ACKS", "2", "queue.kafka.default.producer.acks",
                  "is not a Kafka acks value"},
        bad_value{"TB_KAFKA_DEFAULT_COMPRESSION_TYPE", "brotli",
                  "queue.kafka.default.producer.compression-type",
                  "is not a Kafka compression type"},
        bad_value{"TB_KAFKA_DEFAULT_PRODUCER_ENABLE_IDEMPOTENCE", "true",
                  "queue.kafka.default.producer.enable-idempotence",
                  "needs queue.kafka.default.producer.acks = all"},
        bad_value{"TB_KAFKA_DEFAULT_PRODUCER_CONFIG", "retries:1;oops",
                  "queue.kafka.default.producer.config", "\"oops\", which is not key:value"},
        bad_value{"TB_KAFKA_DEFAULT_PRODUCER_DELIVERY_TIMEOUT_MS", "0",
                  "queue.kafka.default.producer.delivery-timeout-ms", "is out of range"},
        bad_value{"TB_KAFKA_APP_PERSISTED_MSG_RETENTION_MS", "0",
                  "queue.kafka.application-persisted-msg.retention-ms",
                  "would delete every record"},
        bad_value{"TB_KAFKA_APP_PERSISTED_MSG_RETENTION_BYTES", "-2",
                  "queue.kafka.application-persisted-msg.retention-bytes", "is out of range"},
        bad_value{"STARLING_EMBEDDED_FSYNC", "sometimes", "queue.embedded.fsync",
                  "is not one of: none, interval, always"},
        bad_value{"STARLING_EMBEDDED_SEGMENT_BYTES", "-5", "queue.embedded.segment-bytes",
                  "is out of range"},
        bad_value{"STARLING_EMBEDDED_RETENTION_BYTES", "0", "queue.embedded.retention-bytes",
                  "would delete every closed segment"},
        bad_value{"STARLING_EMBEDDED_RETENTION_BYTES", "-2", "queue.embedded.retention-bytes",
                  "is out of range"},
        bad_value{"STARLING_EMBEDDED_DISK_MIN_FREE_BYTES", "lots",
                  "queue.embedded.disk.min-free-bytes", "is not an integer"},
        bad_value{"STARLING_EMBEDDED_DISK_SLOW_FREE_BYTES", "1000",
                  "queue.embedded.disk.slow-free-bytes",
                  "must be at least queue.embedded.disk.min-free-bytes"},
        bad_value{"STARLING_EMBEDDED_DISK_SLOW_RATE_BYTES", "0",
                  "queue.embedded.disk.slow-rate-bytes", "is out of range"},
        bad_value{"SECURITY_MQTT_JWT_ALLOW_TOKENS_WITHOUT_EXP", "sometimes",
                  "security.mqtt.jwt.allow-tokens-without-exp", "is not a boolean"},
        bad_value{"ACTORS_SYSTEM_THROUGHPUT", "0", "actors.system.throughput", "is out of range"},
        bad_value{"ACTORS_SYSTEM_CLIENT_MAILBOX_CAPACITY", "0", "actors.client.mailbox-capacity",
                  "is out of range"},
        bad_value{"MQTT_MAX_IN_FLIGHT_MSGS", "0", "mqtt.max-in-flight-msgs", "Receive Maximum"},
        bad_value{"MQTT_KEEP_ALIVE_MAX_KEEP_ALIVE_SEC", "65536", "mqtt.keep-alive.max-keep-alive",
                  "is out of range (1..65535 s)"},
        bad_value{"MQTT_SHARED_SUBSCRIPTIONS_PROCESSING_TYPE", "RANDOM",
                  "mqtt.shared-subscriptions.processing-type", "is not one of: ROUND_ROBIN"},
        bad_value{"MQTT_PERSISTENT_SESSION_DEVICE_PERSISTED_MESSAGES_LIMIT", "65536",
                  "mqtt.persistent-session.device.persisted-messages.limit",
                  "is out of range (1..65535; a device inbox holds at most 65535 messages"},
        bad_value{"MQTT_CLIENT_SESSION_EXPIRY_MAX_EXPIRY_INTERVAL", "4294967296",
                  "mqtt.client-session-expiry.max-expiry-interval", "is out of range"},
        bad_value{"MQTT_MAX_QOS", "3", "mqtt.max-qos", "is out of range (0..2)"},
        bad_value{"MQTT_RETAIN_AVAILABLE", "", "mqtt.retain-available", "is not a boolean"},
        bad_value{"SECURITY_MQTT_ALLOW_ANONYMOUS", "nope", "security.mqtt.allow-anonymous",
                  "is not a boolean"},
        bad_value{"REDIS_NODES", "r1:7000,r2", "redis.cluster.nodes", "'r2' is not host:port"},
        bad_value{"REDIS_MAX_REDIRECTS", "0", "redis.cluster.maxRedirects",
                  "is out of range (1..100)"},
        bad_value{"REDIS_CONNECTION_TYPE", "replicated", "redis.connection.type",
                  "is not one of: standalone, sentinel, cluster"},
        bad_value{"REDIS_SENTINELS", "s1:26379,s2", "redis.sentinel.sentinels",
                  "'s2' is not host:port"},
        bad_value{"REDIS_SENTINELS", "s1:0", "redis.sentinel.sentinels", "'s1:0' is not host:port"},
        bad_value{"REDIS_WAIT_REPLICAS", "17", "redis.wait.replicas", "is out of range (0..16)"},
        bad_value{"REDIS_PORT", "0", "redis.standalone.port", "is out of range (1..65535)"},
        bad_value{"REDIS_HOST", "", "redis.standalone.host", "must not be empty"},
        bad_value{"REDIS_CLIENT_READ_TIMEOUT", "0", "redis.standalone.readTimeout",
                  "is out of range (1..3600000 ms)"}));

TEST(config_loader, redis_cluster_settings) {
    const auto c = load_shipped({{"REDIS_CONNECTION_TYPE", "cluster"},
                                 {"REDIS_NODES", "r1:7000, r2:7001,[::1]:7002"},
                                 {"REDIS_MAX_REDIRECTS", "5"},
                                 {"REDIS_CLUSTER_TOPOLOGY_REFRESH_PERIOD_SEC", "0"}});
    EXPECT_EQ(c.redis.connection_type, "cluster");
    using hp = std::pair<std::string, std::uint16_t>;
    EXPECT_EQ(c.redis.cluster.nodes, (std::vector<hp>{{"r1", 7000}, {"r2", 7001}, {"::1", 7002}}));
    EXPECT_EQ(c.redis.cluster.max_redirects, 5u);
    EXPECT_EQ(c.redis.cluster.topology_refresh_period, std::chrono::seconds(0));
    const auto defaults = load_shipped({});
    EXPECT_EQ(defaults.redis.cluster.max_redirects, 12u);  // TBMQ's default
    EXPECT_EQ(defaults.redis.cluster.topology_refresh_period, std::chrono::seconds(60));

    // Cluster needs its nodes, and Redis Cluster has only database 0; the error names the key.
    for (const auto& [key, env, text] :
         std::vector<std::tuple<std::string, std::map<std::string, std::string>, std::string>>{
             {"redis.cluster.nodes",
              {{"REDIS_CONNECTION_TYPE", "cluster"}},
              "required with redis.connection.type cluster"},
             {"redis.db",
              {{"REDIS_CONNECTION_TYPE", "cluster"}, {"REDIS_NODES", "r1:7000"}, {"REDIS_DB", "2"}},
              "must be 0 with redis.connection.type cluster"}}) {
        try {
            load_shipped(env);
            ADD_FAILURE() << "expected config_error for " << key;
        } catch (const config_error& e) {
            EXPECT_EQ(e.key(), key);
            EXPECT_THAT(e.what(), HasSubstr(text));
        }
    }
}

TEST(config_loader, redis_ssl_settings) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("starling-redis-ssl-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto ca = (dir / "ca.pem").string();
    std::ofstream(ca) << "not checked here: OpenSSL reads it at the first connect\n";
    const auto c = load_shipped({{"REDIS_SSL_ENABLED", "true"}, {"REDIS_SSL_CERT_FILE", ca}});
    EXPECT_TRUE(c.redis.ssl.enabled);
    EXPECT_EQ(c.redis.ssl.cert_file, ca);
    EXPECT_FALSE(load_shipped({}).redis.ssl.enabled);

    // An unreadable file, or half a client certificate, fails start-up naming the key.
    for (const auto& [key, env] :
         std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
             {"redis.ssl.credentials.cert_file",
              {{"REDIS_SSL_ENABLED", "true"},
               {"REDIS_SSL_CERT_FILE", (dir / "none.pem").string()}}},
             {"redis.ssl.credentials.user_key_file",
              {{"REDIS_SSL_ENABLED", "true"}, {"REDIS_SSL_USER_CERT_FILE", ca}}}}) {
        try {
            load_shipped(env);
            ADD_FAILURE() << "expected config_error for " << key;
        } catch (const config_error& e) {
            EXPECT_EQ(e.key(), key);
        }
    }
    std::filesystem::remove_all(dir);
}

TEST(config_loader, redis_sentinel_settings) {
    const auto c = load_shipped({{"REDIS_CONNECTION_TYPE", "sentinel"},
                                 {"REDIS_MASTER", "mymaster"},
                                 {"REDIS_SENTINELS", " s1:26379 , [::1]:26380,10.0.0.3:5000"},
                                 {"REDIS_SENTINEL_PASSWORD", "pw"},
                                 {"REDIS_WAIT_REPLICAS", "1"}});
    EXPECT_EQ(c.redis.connection_type, "sentinel");
    EXPECT_EQ(c.redis.sentinel.master, "mymaster");
    using hp = std::pair<std::string, std::uint16_t>;
    EXPECT_EQ(c.redis.sentinel.sentinels,
              (std::vector<hp>{{"s1", 26379}, {"::1", 26380}, {"10.0.0.3", 5000}}));
    EXPECT_EQ(c.redis.sentinel.password, "pw");
    EXPECT_EQ(c.redis.wait_replicas, 1u);
    EXPECT_EQ(c.redis.wait_timeout, std::chrono::milliseconds(1000));

    // Sentinel needs both the master's name and at least one sentinel; the error names the key.
    for (const auto& [missing, env] :
         std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
             {"redis.sentinel.master",
              {{"REDIS_CONNECTION_TYPE", "sentinel"}, {"REDIS_SENTINELS", "s1:26379"}}},
             {"redis.sentinel.sentinels",
              {{"REDIS_CONNECTION_TYPE", "sentinel"}, {"REDIS_MASTER", "m"}}}}) {
        try {
            load_shipped(env);
            ADD_FAILURE() << "expected config_error for " << missing;
        } catch (const config_error& e) {
            EXPECT_EQ(e.key(), missing);
            EXPECT_THAT(e.what(), HasSubstr("required with redis.connection.type sentinel"));
        }
    }
}

TEST(config_loader, kafka_property_strings_parse_like_tbmq) {
    const auto c = load_shipped({{"TB_KAFKA_DEFAULT_PRODUCER_CONSUMER_CONFIG",
                                  " security.protocol:SASL_SSL ; sasl.jaas.config:a\\;b;;x:1:2"},
                                 {"TB_KAFKA_MSG_ALL_TOPIC_PROPERTIES", "segment.bytes:26214400"},
                                 {"TB_KAFKA_DEFAULT_PRODUCER_ACKS", "all"},
                                 {"TB_KAFKA_DEFAULT_PRODUCER_ENABLE_IDEMPOTENCE", "true"}});
    const auto& common = c.queue.kafka.defaults.config;
    ASSERT_EQ(common.size(), 3U);
    EXPECT_EQ(common.at("security.protocol"), "SASL_SSL");
    EXPECT_EQ(common.at("sasl.jaas.config"), "a;b");
    EXPECT_EQ(common.at("x"), "1:2");
    EXPECT_EQ(c.queue.kafka.msg_all.topic_properties.at("segment.bytes"), "26214400");
    EXPECT_EQ(c.queue.kafka.defaults.producer.enable_idempotence, true);
}

}  // namespace
}  // namespace starling::config

namespace starling::config {
namespace {

// The key named by the config_error `vars` provoke when loading the shipped file.
std::string failing_key(std::map<std::string, std::string> vars, std::string* message = nullptr) {
    try {
        load_shipped(std::move(vars));
    } catch (const config_error& e) {
        if (message != nullptr) {
            *message = e.what();
        }
        return e.key();
    }
    return "(loaded)";
}

TEST(config_listeners, defaults_follow_tbmq) {
    const auto c = default_config();
    EXPECT_TRUE(c.listener.ws.enabled);
    EXPECT_EQ(c.listener.ws.bind_port, 8084);
    EXPECT_EQ(c.listener.ws.netty.sub_protocols, "mqttv3.1,mqtt");
    EXPECT_FALSE(c.listener.ssl.enabled);
    EXPECT_EQ(c.listener.ssl.bind_port, 8883);
    EXPECT_EQ(c.listener.ssl.config.protocol, tls_protocol_version::tls_v1_2);
    EXPECT_EQ(c.listener.ssl.config.client_auth, client_auth_type::none);
    EXPECT_EQ(c.listener.ssl.config.credentials.pem.cert_file, "mqttserver.pem");
    EXPECT_EQ(c.listener.ssl.config.reload_interval, 5s);
    EXPECT_FALSE(c.listener.wss.enabled);
    EXPECT_EQ(c.listener.wss.bind_port, 8085);
    EXPECT_EQ(c.listener.wss.config.credentials.pem.key_file, "ws_mqtt_server_key.pem");
    EXPECT_FALSE(c.listener.proxy_enabled);
    EXPECT_EQ(c.listener.tcp.proxy_enabled, std::nullopt);
}

TEST(config_listeners, tbmq_environment_names_apply) {
    const auto c = load_shipped({{"LISTENER_WSS_PROTOCOL", "TLSv1.3"},
                                 {"LISTENER_SSL_CLIENT_AUTH", "REQUIRED"},
                                 {"WS_NETTY_SUB_PROTOCOLS", "mqtt"},
                                 {"LISTENER_WS_BIND_PORT", "0"},
                                 {"MQTT_SSL_PROXY_PROTOCOL_ENABLED", "false"},
                                 {"MQTT_PROXY_PROTOCOL_ENABLED", "true"}});
    EXPECT_EQ(c.listener.wss.config.protocol, tls_protocol_version::tls_v1_3);
    EXPECT_EQ(c.listener.ssl.config.client_auth, client_auth_type::required);
    EXPECT_EQ(c.listener.ws.netty.sub_protocols, "mqtt");
    EXPECT_EQ(c.listener.ws.bind_port, 0);
    EXPECT_EQ(c.listener.ssl.proxy_enabled, std::optional<bool>(false));
    EXPECT_TRUE(c.listener.proxy_enabled);
}

TEST(config_listeners, bad_values_name_their_key) {
    std::string message;
    EXPECT_EQ(failing_key({{"LISTENER_SSL_PROTOCOL", "TLSv1.1"}}, &message),
              "listener.ssl.config.protocol");
    EXPECT_THAT(message, HasSubstr("TLSv1.2, TLSv1.3"));
    EXPECT_EQ(failing_key({{"LISTENER_WSS_CLIENT_AUTH", "sometimes"}}),
              "listener.wss.config.client_auth");
    EXPECT_EQ(failing_key({{"WS_NETTY_SUB_PROTOCOLS", "mqtt,,x"}}),
              "listener.ws.netty.sub_protocols");
    EXPECT_EQ(failing_key({{"MQTT_WS_PROXY_PROTOCOL_ENABLED", "maybe"}}),
              "listener.ws.proxy_enabled");
}

TEST(config_listeners, enabled_tls_listener_needs_readable_files) {
    std::string message;
    EXPECT_EQ(failing_key({{"LISTENER_SSL_ENABLED", "true"},
                           {"LISTENER_SSL_PEM_CERT", "/nonexistent/cert.pem"}},
                          &message),
              "listener.ssl.config.credentials.pem.cert_file");
    EXPECT_THAT(message, HasSubstr("/nonexistent/cert.pem"));

    // Any readable file passes the load-time check (its contents are checked at start-up).
    const auto self = shipped_file.string();
    EXPECT_EQ(failing_key({{"LISTENER_WSS_ENABLED", "true"},
                           {"LISTENER_WSS_PEM_CERT", self},
                           {"LISTENER_WSS_PEM_KEY", self},
                           {"LISTENER_WSS_CLIENT_AUTH", "requested"}}),
              "listener.wss.config.trust_store");
    EXPECT_EQ(failing_key({{"LISTENER_WSS_ENABLED", "true"},
                           {"LISTENER_WSS_PEM_CERT", self},
                           {"LISTENER_WSS_PEM_KEY", self},
                           {"LISTENER_WSS_CLIENT_AUTH", "requested"},
                           {"LISTENER_WSS_TRUST_STORE", self}}),
              "(loaded)");
}

}  // namespace
}  // namespace starling::config

namespace starling::config {
namespace {

TEST(config_redis, defaults_follow_tbmq) {
    const auto c = load_shipped();
    EXPECT_EQ(c.redis.connection_type, "standalone");
    EXPECT_EQ(c.redis.standalone.host, "localhost");
    EXPECT_EQ(c.redis.standalone.port, 6379);
    EXPECT_EQ(c.redis.standalone.connect_timeout, 30s);
    EXPECT_EQ(c.redis.standalone.read_timeout, 60s);
    EXPECT_EQ(c.redis.db, 0U);
    EXPECT_EQ(c.redis.username, "");
    EXPECT_EQ(c.redis.password, "");
}

TEST(config_redis, tbmq_environment_names_apply) {
    const auto c = load_shipped({{"REDIS_HOST", "redis.internal"},
                                 {"REDIS_PORT", "6380"},
                                 {"REDIS_DB", "3"},
                                 {"REDIS_USERNAME", "starling"},
                                 {"REDIS_PASSWORD", "secret:with:colons"},
                                 {"REDIS_CLIENT_CONNECT_TIMEOUT", "1500"},
                                 {"REDIS_CLIENT_READ_TIMEOUT", "2500"}});
    EXPECT_EQ(c.redis.standalone.host, "redis.internal");
    EXPECT_EQ(c.redis.standalone.port, 6380);
    EXPECT_EQ(c.redis.db, 3U);
    EXPECT_EQ(c.redis.username, "starling");
    EXPECT_EQ(c.redis.password, "secret:with:colons");
    EXPECT_EQ(c.redis.standalone.connect_timeout, 1500ms);
    EXPECT_EQ(c.redis.standalone.read_timeout, 2500ms);
}

}  // namespace
}  // namespace starling::config

namespace starling::config {
namespace {

TEST(config_loader, rate_limits_default_off_with_tbmq_defaults) {
    const auto c = parse_config("", with_env({}));
    const auto& r = c.mqtt.rate_limits;
    EXPECT_FALSE(r.incoming_publish.enabled);
    EXPECT_FALSE(r.outgoing_publish.enabled);
    EXPECT_FALSE(r.device_persisted_messages.enabled);
    EXPECT_EQ(r.incoming_publish.config, (std::vector<bandwidth>{{10, 1}, {300, 60}}));
    EXPECT_EQ(r.outgoing_publish.config, (std::vector<bandwidth>{{10, 1}, {300, 60}}));
    EXPECT_EQ(r.device_persisted_messages.config, (std::vector<bandwidth>{{100, 1}, {1000, 60}}));
}

TEST(config_loader, rate_limits_from_tbmq_environment_variables) {
    const auto c = parse_config(
        "", with_env({{"MQTT_INCOMING_RATE_LIMITS_ENABLED", "true"},
                      {"MQTT_INCOMING_RATE_LIMITS_CLIENT_CONFIG", "5:1"},
                      {"MQTT_OUTGOING_RATE_LIMITS_ENABLED", "true"},
                      {"MQTT_OUTGOING_RATE_LIMITS_CLIENT_CONFIG", "1:1, 20:60"},
                      {"MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_ENABLED", "true"},
                      {"MQTT_DEVICE_PERSISTED_MSGS_RATE_LIMITS_CONFIG", "7:2,50:3600"}}));
    const auto& r = c.mqtt.rate_limits;
    EXPECT_TRUE(r.incoming_publish.enabled);
    EXPECT_EQ(r.incoming_publish.config, (std::vector<bandwidth>{{5, 1}}));
    EXPECT_TRUE(r.outgoing_publish.enabled);
    EXPECT_EQ(r.outgoing_publish.config, (std::vector<bandwidth>{{1, 1}, {20, 60}}));
    EXPECT_TRUE(r.device_persisted_messages.enabled);
    EXPECT_EQ(r.device_persisted_messages.config, (std::vector<bandwidth>{{7, 2}, {50, 3600}}));
}

TEST(config_loader, a_malformed_rate_limit_names_key_variable_and_format) {
    try {
        parse_config("", with_env({{"MQTT_INCOMING_RATE_LIMITS_CLIENT_CONFIG", "10:1,300"}}));
        FAIL() << "a malformed rate limit must be rejected";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "mqtt.rate-limits.incoming-publish.client-config");
        EXPECT_THAT(e.what(), HasSubstr("MQTT_INCOMING_RATE_LIMITS_CLIENT_CONFIG"));
        EXPECT_THAT(e.what(), HasSubstr("limit:seconds"));
    }
    try {
        parse_config("mqtt: {rate-limits: {device-persisted-messages: {config: '0:1'}}}",
                     with_env({}));
        FAIL() << "a zero limit must be rejected";
    } catch (const config_error& e) {
        EXPECT_EQ(e.key(), "mqtt.rate-limits.device-persisted-messages.config");
    }
}

TEST(config_loader, session_limits_default_off_and_follow_tbmq_variables) {
    const auto off = parse_config("", with_env({}));
    EXPECT_EQ(off.mqtt.sessions_limit, 0);
    EXPECT_EQ(off.mqtt.application_clients_limit, 0);
    const auto c = parse_config(
        "", with_env({{"MQTT_SESSIONS_LIMIT", "1000"}, {"MQTT_APPLICATION_CLIENTS_LIMIT", "10"}}));
    EXPECT_EQ(c.mqtt.sessions_limit, 1000);
    EXPECT_EQ(c.mqtt.application_clients_limit, 10);
}

TEST(config_loader, a_bad_session_limit_names_its_key) {
    for (const auto& [env, key] : std::vector<std::pair<std::string, std::string>>{
             {"MQTT_SESSIONS_LIMIT", "mqtt.sessions-limit"},
             {"MQTT_APPLICATION_CLIENTS_LIMIT", "mqtt.application-clients-limit"}}) {
        for (const char* bad : {"-1", "lots", "3000000000"}) {
            try {
                parse_config("", with_env({{env, bad}}));
                FAIL() << env << "=" << bad << " must be rejected";
            } catch (const config_error& e) {
                EXPECT_EQ(e.key(), key);
                EXPECT_THAT(e.what(), HasSubstr(env));
            }
        }
    }
}

}  // namespace
}  // namespace starling::config

namespace starling::config {
namespace {

TEST(config_loader, total_quota_defaults_off_with_tbmq_budget) {
    const auto c = parse_config("", with_env({}));
    const auto& t = c.mqtt.rate_limits.total;
    EXPECT_FALSE(t.enabled);
    EXPECT_EQ(t.config, (std::vector<bandwidth>{{1000, 1}, {50000, 60}}));
    EXPECT_EQ(t.block_size, 0);
    EXPECT_EQ(t.lease_return, std::chrono::milliseconds(1000));
}

TEST(config_loader, total_quota_from_environment_variables) {
    const auto c = parse_config("", with_env({{"MQTT_TOTAL_RATE_LIMITS_ENABLED", "true"},
                                              {"MQTT_TOTAL_RATE_LIMITS_CONFIG", "50:1"},
                                              {"MQTT_TOTAL_RATE_LIMITS_BLOCK_SIZE", "5"},
                                              {"MQTT_TOTAL_RATE_LIMITS_LEASE_RETURN_MS", "0"}}));
    const auto& t = c.mqtt.rate_limits.total;
    EXPECT_TRUE(t.enabled);
    EXPECT_EQ(t.config, (std::vector<bandwidth>{{50, 1}}));
    EXPECT_EQ(t.block_size, 5);
    EXPECT_EQ(t.lease_return, std::chrono::milliseconds(0));
}

TEST(config_loader, bad_total_quota_values_name_their_key) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"MQTT_TOTAL_RATE_LIMITS_CONFIG", "1000"},
        {"MQTT_TOTAL_RATE_LIMITS_BLOCK_SIZE", "-1"},
        {"MQTT_TOTAL_RATE_LIMITS_LEASE_RETURN_MS", "soon"},
        {"MQTT_TOTAL_RATE_LIMITS_ENABLED", "maybe"},
    };
    const std::vector<std::string> keys{
        "mqtt.rate-limits.total.config", "mqtt.rate-limits.total.block-size",
        "mqtt.rate-limits.total.lease-return-ms", "mqtt.rate-limits.total.enabled"};
    for (std::size_t i = 0; i < cases.size(); ++i) {
        try {
            parse_config("", with_env({cases[i]}));
            FAIL() << cases[i].first << "=" << cases[i].second << " must be rejected";
        } catch (const config_error& e) {
            EXPECT_EQ(e.key(), keys[i]);
            EXPECT_THAT(e.what(), HasSubstr(cases[i].first));
        }
    }
}

}  // namespace
}  // namespace starling::config

namespace starling::config {
namespace {

// Hostile-client limits (listener admission, auth throttling, unauthorized log, HTTP slots).
TEST(config_hostile_limits, defaults) {
    const auto c = load_shipped();
    EXPECT_EQ(c.listener.connect_timeout, 10s);
    EXPECT_EQ(c.listener.max_connections_per_address, 10000U);
    EXPECT_EQ(c.listener.connect_rate_per_address,
              (std::vector<bandwidth>{{1000, 1}, {30000, 60}}));
    EXPECT_EQ(c.listener.fd_reserve, 1024U);
    EXPECT_EQ(c.listener.so_keep_alive_idle, 60s);
    EXPECT_EQ(c.listener.so_keep_alive_interval, 10s);
    EXPECT_EQ(c.listener.so_keep_alive_count, 6U);
    EXPECT_EQ(c.listener.tcp.max_connections, 100000U);
    EXPECT_EQ(c.listener.wss.max_connections, 100000U);
    EXPECT_TRUE(c.listener.tcp.netty.so_keep_alive);
    EXPECT_TRUE(c.listener.ws.netty.so_keep_alive);
    EXPECT_EQ(c.security.mqtt.failed_auth_per_address, (std::vector<bandwidth>{{60, 60}}));
    EXPECT_EQ(c.security.mqtt.unauthorized_clients.max_rows, 10000U);
    EXPECT_EQ(c.security.mqtt.unauthorized_clients.rows_per_address_per_minute, 10U);
    EXPECT_EQ(c.security.mqtt.unauthorized_clients.rows_per_second, 100U);
    EXPECT_EQ(c.server.max_connections, 256U);
    EXPECT_EQ(c.server.max_connections_per_address, 32U);
    EXPECT_EQ(c.server.health_reserved_connections, 16U);
    EXPECT_EQ(c.server.api_port, std::nullopt);
    EXPECT_EQ(c.server.api_address, c.server.address) << "empty = server.address";
}

TEST(config_hostile_limits, environment_and_empty_means_unlimited) {
    const auto c = load_shipped({{"LISTENER_CONNECT_TIMEOUT_MS", "2000"},
                                 {"LISTENER_CONNECT_RATE_PER_ADDRESS", ""},
                                 {"LISTENER_MAX_CONNECTIONS_PER_ADDRESS", "0"},
                                 {"LISTENER_WS_MAX_CONNECTIONS", "5"},
                                 {"SSL_NETTY_SO_KEEPALIVE", "false"},
                                 {"SECURITY_MQTT_FAILED_AUTH_PER_ADDRESS", " "},
                                 {"HTTP_API_BIND_PORT", "0"},
                                 {"HTTP_API_BIND_ADDRESS", "127.0.0.1"}});
    EXPECT_EQ(c.listener.connect_timeout, 2s);
    EXPECT_TRUE(c.listener.connect_rate_per_address.empty());
    EXPECT_EQ(c.listener.max_connections_per_address, 0U);
    EXPECT_EQ(c.listener.ws.max_connections, 5U);
    EXPECT_FALSE(c.listener.ssl.netty.so_keep_alive);
    EXPECT_TRUE(c.security.mqtt.failed_auth_per_address.empty());
    EXPECT_EQ(c.server.api_port, std::optional<std::uint16_t>(0));
    EXPECT_EQ(c.server.api_address, "127.0.0.1");
}

TEST(config_hostile_limits, bad_values_name_their_key) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"LISTENER_CONNECT_TIMEOUT_MS", "0"},
        {"LISTENER_CONNECT_RATE_PER_ADDRESS", "1000"},
        {"LISTENER_TCP_MAX_CONNECTIONS", "0"},
        {"LISTENER_FD_RESERVE", "-1"},
        {"LISTENER_SO_KEEP_ALIVE_COUNT", "0"},
        {"WSS_NETTY_SO_KEEPALIVE", "sometimes"},
        {"SECURITY_MQTT_FAILED_AUTH_PER_ADDRESS", "0:60"},
        {"SECURITY_MQTT_UNAUTHORIZED_CLIENTS_MAX_ROWS", "0"},
        {"HTTP_API_BIND_PORT", "65536"},
        {"HTTP_API_BIND_ADDRESS", "localhost"},
        {"HTTP_MAX_CONNECTIONS", "0"},
    };
    const std::vector<std::string> keys{"listener.connect_timeout_ms",
                                        "listener.connect_rate_per_address",
                                        "listener.tcp.max_connections",
                                        "listener.fd_reserve",
                                        "listener.so_keep_alive_count",
                                        "listener.wss.netty.so_keep_alive",
                                        "security.mqtt.failed-auth-per-address",
                                        "security.mqtt.unauthorized-clients.max-rows",
                                        "server.api.port",
                                        "server.api.address",
                                        "server.max-connections"};
    for (std::size_t i = 0; i < cases.size(); ++i) {
        std::string message;
        EXPECT_EQ(failing_key({cases[i]}, &message), keys[i]) << cases[i].first;
        EXPECT_THAT(message, HasSubstr(cases[i].first));
    }
}

}  // namespace
}  // namespace starling::config
