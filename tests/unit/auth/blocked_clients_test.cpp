#include "auth/blocked_clients.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

namespace starling::auth {
namespace {

constexpr std::int64_t now = 1'700'000'000'000;

blocked_entry entry(block_type type, std::string value, std::string description = {},
                    std::int64_t expires_at_ms = 0, regex_target target = regex_target::client_id) {
    return blocked_entry{type, std::move(value), expires_at_ms, std::move(description), target};
}

TEST(blocked_clients, empty_list_blocks_nobody) {
    blocked_clients b;
    EXPECT_EQ(b.check("c1", "u1", "10.0.0.1", now), std::nullopt);
    EXPECT_EQ(b.size(), 0U);
}

TEST(blocked_clients, client_id_exact_match) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "bad-device")));
    auto why = b.check("bad-device", std::nullopt, "10.0.0.1", now);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "client id 'bad-device' is blocked");
    EXPECT_EQ(b.check("bad-device-2", std::nullopt, "10.0.0.1", now), std::nullopt);
    EXPECT_EQ(b.check("Bad-Device", std::nullopt, "10.0.0.1", now), std::nullopt);
}

TEST(blocked_clients, description_is_the_reason) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "c", "stolen credentials, ticket 42")));
    EXPECT_EQ(b.check("c", std::nullopt, "", now), "stolen credentials, ticket 42");
}

TEST(blocked_clients, username_exact_match_needs_a_username) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::username, "mallory")));
    EXPECT_EQ(b.check("c", "mallory", "10.0.0.1", now), "username 'mallory' is blocked");
    EXPECT_EQ(b.check("c", std::nullopt, "10.0.0.1", now), std::nullopt);
    EXPECT_EQ(b.check("mallory", "alice", "10.0.0.1", now), std::nullopt);
}

TEST(blocked_clients, ip_address_exact_match) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::ip_address, "192.0.2.7")));
    EXPECT_EQ(b.check("c", std::nullopt, "192.0.2.7", now), "ip address '192.0.2.7' is blocked");
    EXPECT_EQ(b.check("c", std::nullopt, "192.0.2.70", now), std::nullopt);
}

TEST(blocked_clients, ipv6_rule_is_stored_in_canonical_form) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::ip_address, "2001:DB8:0:0::1")));
    EXPECT_TRUE(b.check("c", std::nullopt, "2001:db8::1", now));
    EXPECT_EQ(b.list(now).at(0).value, "2001:db8::1");
    EXPECT_TRUE(b.remove(block_type::ip_address, "2001:0db8::1"));
    EXPECT_EQ(b.size(), 0U);
}

TEST(blocked_clients, ipv4_rule_matches_an_ipv4_mapped_peer) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::ip_address, "192.0.2.7")));
    EXPECT_TRUE(b.check("c", std::nullopt, "::ffff:192.0.2.7", now));
    EXPECT_FALSE(b.check("c", std::nullopt, "::ffff:192.0.2.8", now));
}

TEST(blocked_clients, invalid_ip_address_is_refused_with_its_value) {
    blocked_clients b;
    auto added = b.add(entry(block_type::ip_address, "10.0.0.300"));
    ASSERT_FALSE(added);
    EXPECT_EQ(added.error(), blocked_error::invalid_ip_address);
    auto why = blocked_clients::describe_error(entry(block_type::ip_address, "10.0.0.300"));
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("'10.0.0.300'"), std::string::npos) << *why;
    EXPECT_EQ(b.size(), 0U);
}

TEST(blocked_clients, empty_value_is_refused) {
    blocked_clients b;
    auto added = b.add(entry(block_type::username, ""));
    ASSERT_FALSE(added);
    EXPECT_EQ(added.error(), blocked_error::empty_value);
}

TEST(blocked_clients, regex_on_client_id_matches_the_whole_id) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::regex, "test-.*")));
    auto why = b.check("test-42", std::nullopt, "10.0.0.1", now);
    ASSERT_TRUE(why);
    EXPECT_EQ(*why, "client_id 'test-42' matches blocked pattern 'test-.*'");
    EXPECT_FALSE(b.check("my-test-42", std::nullopt, "10.0.0.1", now));  // whole match only
}

TEST(blocked_clients, regex_on_username) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::regex, "guest\\d+", {}, 0, regex_target::username)));
    EXPECT_TRUE(b.check("c", "guest17", "10.0.0.1", now));
    EXPECT_FALSE(b.check("guest17", "alice", "10.0.0.1", now));  // not the client id
    EXPECT_FALSE(b.check("c", std::nullopt, "10.0.0.1", now));   // no username, no match
}

TEST(blocked_clients, regex_on_ip_address) {
    blocked_clients b;
    ASSERT_TRUE(b.add(
        entry(block_type::regex, "10\\.1\\.\\d+\\.\\d+", "lab net", 0, regex_target::ip_address)));
    EXPECT_EQ(b.check("c", std::nullopt, "10.1.2.3", now), "lab net");
    EXPECT_FALSE(b.check("c", std::nullopt, "10.2.2.3", now));
}

TEST(blocked_clients, invalid_regex_is_refused_naming_the_pattern) {
    blocked_clients b;
    auto added = b.add(entry(block_type::regex, "device-(unclosed"));
    ASSERT_FALSE(added);
    EXPECT_EQ(added.error(), blocked_error::invalid_regex);
    EXPECT_NE(added.error().message().find("regex"), std::string::npos);
    auto why = blocked_clients::describe_error(entry(block_type::regex, "device-(unclosed"));
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("'device-(unclosed'"), std::string::npos) << *why;
    EXPECT_EQ(b.size(), 0U);
    EXPECT_FALSE(blocked_clients::describe_error(entry(block_type::regex, "device-(closed)")));
}

TEST(blocked_clients, regex_survives_a_long_hostile_input) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::regex, "(a|b)*c")));
    ASSERT_TRUE(b.add(entry(block_type::regex, "prefix-.*")));
    const std::string long_id(65535, 'a');
    EXPECT_FALSE(b.check(long_id, std::nullopt, "", now));
    EXPECT_TRUE(b.check(long_id + "c", std::nullopt, "", now));
    EXPECT_TRUE(b.check("prefix-" + long_id, std::nullopt, "", now));
}

TEST(blocked_clients, adversarial_patterns_on_64_kib_ids_and_usernames_stay_linear) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::regex, "(a*)*b")));
    ASSERT_TRUE(b.add(entry(block_type::regex, "(a|a)*c", {}, 0, regex_target::username)));
    ASSERT_TRUE(b.add(entry(block_type::regex, "evil-.*", {}, 0, regex_target::username)));
    const std::string as(65535, 'a');
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(b.check(as, as, "10.0.0.1", now));
    EXPECT_TRUE(b.check(as.substr(1) + "b", std::nullopt, "", now));
    EXPECT_TRUE(b.check("c", as.substr(1) + "c", "", now));
    EXPECT_TRUE(b.check("c", "evil-" + as.substr(5), "", now));
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(blocked_clients, patterns_re2_cannot_run_are_refused) {
    blocked_clients b;
    for (const std::string source : {"(?!admin).*", "(?<=x)y", "(a)\\1"}) {
        auto added = b.add(entry(block_type::regex, source));
        ASSERT_FALSE(added) << source;
        EXPECT_EQ(added.error(), blocked_error::invalid_regex);
        auto why = blocked_clients::describe_error(entry(block_type::regex, source));
        ASSERT_TRUE(why) << source;
        EXPECT_NE(why->find(source), std::string::npos) << *why;
    }
    EXPECT_EQ(b.size(), 0U);
}

TEST(blocked_clients, expired_entries_never_match) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "c", {}, now + 1000)));
    ASSERT_TRUE(b.add(entry(block_type::regex, "r.*", {}, now + 1000)));
    EXPECT_TRUE(b.check("c", std::nullopt, "", now + 999));
    EXPECT_TRUE(b.check("rx", std::nullopt, "", now + 999));
    EXPECT_FALSE(b.check("c", std::nullopt, "", now + 1000));  // expiry instant is expired
    EXPECT_FALSE(b.check("rx", std::nullopt, "", now + 1000));
}

TEST(blocked_clients, zero_expiry_never_expires) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "c")));
    EXPECT_TRUE(b.check("c", std::nullopt, "", INT64_MAX));
    EXPECT_EQ(b.purge_expired(INT64_MAX), 0U);
}

TEST(blocked_clients, list_omits_expired_and_orders_regexes_last) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::regex, "z.*")));
    ASSERT_TRUE(b.add(entry(block_type::regex, "a.*", {}, 0, regex_target::username)));
    ASSERT_TRUE(b.add(entry(block_type::username, "u")));
    ASSERT_TRUE(b.add(entry(block_type::client_id, "gone", {}, now - 1)));
    ASSERT_TRUE(b.add(entry(block_type::client_id, "c", "why", now + 5)));
    auto listed = b.list(now);
    ASSERT_EQ(listed.size(), 4U);
    EXPECT_EQ(listed[0], entry(block_type::client_id, "c", "why", now + 5));
    EXPECT_EQ(listed[1].value, "u");
    EXPECT_EQ(listed[2].value, "z.*");  // insertion order
    EXPECT_EQ(listed[3], entry(block_type::regex, "a.*", {}, 0, regex_target::username));
    EXPECT_EQ(b.size(), 5U);  // expired but not yet purged
}

TEST(blocked_clients, purge_expired_drops_only_expired) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "old", {}, now - 1)));
    ASSERT_TRUE(b.add(entry(block_type::regex, "old.*", {}, now)));
    ASSERT_TRUE(b.add(entry(block_type::username, "fresh", {}, now + 1)));
    EXPECT_EQ(b.purge_expired(now), 2U);
    EXPECT_EQ(b.size(), 1U);
    EXPECT_EQ(b.purge_expired(now), 0U);
}

TEST(blocked_clients, add_replaces_an_entry_with_the_same_type_and_value) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "c", "first", now - 1)));
    ASSERT_TRUE(b.add(entry(block_type::client_id, "c", "second")));
    EXPECT_EQ(b.size(), 1U);
    EXPECT_EQ(b.check("c", std::nullopt, "", now), "second");
    ASSERT_TRUE(b.add(entry(block_type::regex, "x.*", "one")));
    ASSERT_TRUE(b.add(entry(block_type::regex, "x.*", "two", 0, regex_target::username)));
    EXPECT_EQ(b.size(), 2U);
    EXPECT_EQ(b.check("d", "xy", "", now), "two");
}

TEST(blocked_clients, same_value_under_different_types_is_separate) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::client_id, "name")));
    ASSERT_TRUE(b.add(entry(block_type::username, "name")));
    EXPECT_TRUE(b.remove(block_type::client_id, "name"));
    EXPECT_FALSE(b.check("name", std::nullopt, "", now));
    EXPECT_TRUE(b.check("other", "name", "", now));
}

TEST(blocked_clients, remove_reports_whether_it_removed) {
    blocked_clients b;
    ASSERT_TRUE(b.add(entry(block_type::regex, "r")));
    EXPECT_FALSE(b.remove(block_type::client_id, "r"));
    EXPECT_TRUE(b.remove(block_type::regex, "r"));
    EXPECT_FALSE(b.remove(block_type::regex, "r"));
    EXPECT_FALSE(b.remove(block_type::ip_address, "not an ip"));
    EXPECT_FALSE(b.check("r", std::nullopt, "", now));
}

TEST(blocked_clients, exact_checks_stay_correct_with_many_entries) {
    blocked_clients b;
    for (int i = 0; i < 2000; ++i) {
        ASSERT_TRUE(b.add(entry(block_type::client_id, "blocked-" + std::to_string(i))));
    }
    EXPECT_TRUE(b.check("blocked-1999", std::nullopt, "", now));
    EXPECT_FALSE(b.check("blocked-2000", std::nullopt, "", now));
}

TEST(blocked_clients, names_of_types_and_targets) {
    EXPECT_EQ(to_string(block_type::ip_address), "ip_address");
    EXPECT_EQ(to_string(regex_target::username), "username");
    EXPECT_STREQ(make_error_code(blocked_error::invalid_regex).category().name(),
                 "starling.auth.blocked_clients");
}

}  // namespace
}  // namespace starling::auth
