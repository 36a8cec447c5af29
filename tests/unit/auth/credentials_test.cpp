#include "auth/credentials.h"

#include "auth/password.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <string>

namespace starling::auth {
namespace {

TEST(password, bcrypt_round_trip_and_wrong_password) {
    auto hash = bcrypt_hash("s3cret", 4);
    ASSERT_TRUE(hash.has_value());
    EXPECT_TRUE(hash->starts_with("$2b$04$"));
    EXPECT_TRUE(is_bcrypt_hash(*hash));
    EXPECT_TRUE(bcrypt_verify("s3cret", *hash));
    EXPECT_FALSE(bcrypt_verify("s3cret!", *hash));
    EXPECT_FALSE(bcrypt_verify("s3cret", "not-a-hash"));
    EXPECT_FALSE(bcrypt_verify(std::string("s3cret\0x", 8), *hash));
}

TEST(password, verifies_hashes_made_elsewhere) {
    // crypt_blowfish's published test vector ($2a$, as Spring's BCryptPasswordEncoder and so
    // TBMQ write them).
    EXPECT_TRUE(
        bcrypt_verify("U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
    EXPECT_FALSE(
        bcrypt_verify("U*V", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW"));
}

TEST(password, sha256_known_vector) {
    EXPECT_EQ(sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(credentials, ids_follow_the_strategy_most_specific_first) {
    const std::optional<std::string> alice = "alice";
    EXPECT_EQ(basic_credentials_ids(basic_auth_strategy::both, "dev1", alice),
              (std::vector<std::string>{"mixed|alice|dev1", "username|alice", "client_id|dev1"}));
    EXPECT_EQ(basic_credentials_ids(basic_auth_strategy::client_id, "dev1", alice),
              (std::vector<std::string>{"client_id|dev1"}));
    EXPECT_EQ(basic_credentials_ids(basic_auth_strategy::username, "dev1", alice),
              (std::vector<std::string>{"username|alice"}));
    EXPECT_TRUE(basic_credentials_ids(basic_auth_strategy::username, "dev1", std::nullopt).empty());
    EXPECT_EQ(parse_basic_auth_strategy("CLIENT_ID_AND_USERNAME"), basic_auth_strategy::both);
    EXPECT_FALSE(parse_basic_auth_strategy("both").has_value());
}

TEST(credentials, parses_tbmq_basic_documents) {
    auto c = parse_basic_credentials(
        R"({"clientId":"dev1","userName":null,"password":null,
            "authRules":{"pubAuthRulePatterns":["sensors/.*"],"subAuthRulePatterns":[]}})");
    ASSERT_TRUE(c);
    EXPECT_EQ(c->client_id, "dev1");
    EXPECT_FALSE(c->username);
    EXPECT_FALSE(c->password_hash);
    EXPECT_TRUE(c->rules->may_publish("sensors/t"));
    EXPECT_FALSE(c->rules->may_publish("other"));
    EXPECT_FALSE(c->rules->may_subscribe("sensors/t"));  // present but empty: nothing

    auto aliases = parse_basic_credentials(R"({"userName":"u","authRules":{"pub":["a"]}})");
    ASSERT_TRUE(aliases);
    EXPECT_TRUE(aliases->rules->may_publish("a"));
    EXPECT_TRUE(aliases->rules->may_subscribe("anything"));  // absent list: open

    auto open = parse_basic_credentials(R"({"userName":"u"})");
    ASSERT_TRUE(open);
    EXPECT_TRUE(open->rules->allow_all);

    std::string why;
    EXPECT_FALSE(parse_basic_credentials("{not json", &why));
    EXPECT_FALSE(parse_basic_credentials(R"({"authRules":{"pub":["("]}})", &why));
    EXPECT_NE(why.find("invalid rule pattern"), std::string::npos) << why;
}

TEST(credentials, spec_to_row_hashes_plain_passwords_and_keeps_hashes) {
    credentials_spec spec{.name = "s1",
                          .type = client_type::application,
                          .credentials_type = "MQTT_BASIC",
                          .client_id = "dev1",
                          .username = "alice",
                          .password = "pw",
                          .publish_patterns = std::vector<std::string>{"a/.*"}};
    std::string why;
    auto row = to_credentials_row(spec, &why, 4);
    ASSERT_TRUE(row) << why;
    EXPECT_EQ(row->credentials_id, "mixed|alice|dev1");
    EXPECT_EQ(row->type, client_type::application);
    auto parsed = parse_basic_credentials(row->credentials_value);
    ASSERT_TRUE(parsed);
    ASSERT_TRUE(parsed->password_hash);
    EXPECT_TRUE(bcrypt_verify("pw", *parsed->password_hash));
    EXPECT_TRUE(parsed->rules->may_publish("a/b"));
    EXPECT_FALSE(parsed->rules->may_publish("b"));
    EXPECT_TRUE(parsed->rules->may_subscribe("b"));

    const auto hash = *bcrypt_hash("other", 4);
    spec.password = hash;
    spec.client_id.reset();
    row = to_credentials_row(spec, &why, 4);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->credentials_id, "username|alice");
    EXPECT_EQ(nlohmann::json::parse(row->credentials_value)["password"], hash);

    spec.username.reset();
    EXPECT_FALSE(to_credentials_row(spec, &why, 4));
    EXPECT_NE(why.find("client-id"), std::string::npos);

    credentials_spec x509{
        .name = "gw", .credentials_type = "X_509", .cert_cn = "gw-.*", .cert_cn_is_regex = true};
    row = to_credentials_row(x509, &why, 4);
    ASSERT_TRUE(row) << why;
    EXPECT_EQ(row->credentials_id, "ssl|gw-.*");
    EXPECT_EQ(nlohmann::json::parse(row->credentials_value)["certCnIsRegex"], true);
}

TEST(credentials, rule_and_cn_patterns_use_re2) {
    std::string why;
    // Lookaround and backreferences are not RE2 syntax: refused with the pattern named.
    EXPECT_FALSE(parse_basic_credentials(R"({"authRules":{"pub":["(?!admin/).*"]}})", &why));
    EXPECT_NE(why.find("(?!admin/).*"), std::string::npos) << why;
    EXPECT_FALSE(parse_auth_rules(R"({"sub":["(a)\\1"]})", &why));
    EXPECT_NE(why.find("invalid rule pattern"), std::string::npos) << why;

    auto c = parse_basic_credentials(R"({"authRules":{"pub":["sensors/.*"],"sub":["(a|a)*c"]}})");
    ASSERT_TRUE(c);
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(c->rules->may_publish("sensors/" + std::string(65527, 'x')));
    EXPECT_FALSE(c->rules->may_subscribe(std::string(65535, 'a')));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));

    // certCnPattern and the authRulesMapping keys match the CN whole; a 64 KiB CN is harmless.
    EXPECT_TRUE(cn_pattern_matches("gw-[0-9]+", "gw-17"));
    EXPECT_FALSE(cn_pattern_matches("gw-[0-9]+", "gw-17x"));
    EXPECT_FALSE(cn_pattern_matches("(", "("));
    EXPECT_FALSE(cn_pattern_matches("(a*)*b", std::string(65535, 'a')));
    auto x509 = parse_x509_credentials(
        R"({"certCnPattern":"gw-.*","certCnIsRegex":true,
            "authRulesMapping":{"gw-(a|a)*c":{"pub":["x"]},"gw-.*":{"pub":["y"]}}})",
        "gw-" + std::string(65531, 'a'));
    ASSERT_TRUE(x509);
    ASSERT_TRUE(x509->rules);
    EXPECT_FALSE(x509->rules->may_publish("x"));
    EXPECT_TRUE(x509->rules->may_publish("y"));

    // A cert-cn-regex RE2 refuses is refused when the row is made (YAML and the REST API).
    credentials_spec bad{
        .name = "gw", .credentials_type = "X_509", .cert_cn = "gw-(?=1)", .cert_cn_is_regex = true};
    EXPECT_FALSE(to_credentials_row(bad, &why, 4));
    EXPECT_NE(why.find("cert-cn-regex"), std::string::npos) << why;
    bad.cert_cn_is_regex = false;  // an exact CN is not a pattern
    EXPECT_TRUE(to_credentials_row(bad, &why, 4)) << why;
}

TEST(credentials, client_id_pattern_round_trips_and_is_checked) {
    std::string why;
    credentials_spec spec{.name = "bob",
                          .credentials_type = "MQTT_BASIC",
                          .username = "bob",
                          .client_id_pattern = "bob(-.*)?"};
    auto row = to_credentials_row(spec, &why, 4);
    ASSERT_TRUE(row) << why;
    auto parsed = parse_basic_credentials(row->credentials_value);
    ASSERT_TRUE(parsed);
    ASSERT_TRUE(parsed->client_id_pattern);
    EXPECT_TRUE(client_id_allowed(parsed->client_id_pattern, "bob-1"));
    EXPECT_FALSE(client_id_allowed(parsed->client_id_pattern, "alice"));
    EXPECT_FALSE(client_id_allowed(parsed->client_id_pattern, ""));
    EXPECT_TRUE(client_id_allowed(std::nullopt, "anyone"));  // unbound

    spec.credentials_type = "X_509";
    spec.username.reset();
    spec.cert_cn = "gw-1";
    row = to_credentials_row(spec, &why, 4);
    ASSERT_TRUE(row) << why;
    auto x509 = parse_x509_credentials(row->credentials_value, "gw-1");
    ASSERT_TRUE(x509);
    ASSERT_TRUE(x509->client_id_pattern);
    EXPECT_TRUE(x509->client_id_pattern->full_match("bob"));

    // Without the field nothing is bound (TBMQ's documents).
    auto tbmq = parse_basic_credentials(R"({"userName":"u"})");
    ASSERT_TRUE(tbmq);
    EXPECT_FALSE(tbmq->client_id_pattern);

    // A pattern RE2 refuses is an error naming it, in the YAML/REST spec and in a stored row.
    spec.client_id_pattern = "bob(?=x)";
    EXPECT_FALSE(to_credentials_row(spec, &why, 4));
    EXPECT_NE(why.find("client-id-pattern"), std::string::npos) << why;
    EXPECT_FALSE(parse_basic_credentials(R"({"userName":"u","clientIdPattern":"("})", &why));
    EXPECT_NE(why.find("clientIdPattern"), std::string::npos) << why;
    EXPECT_FALSE(parse_basic_credentials(R"({"userName":"u","clientIdPattern":7})", &why));
}

}  // namespace
}  // namespace starling::auth
