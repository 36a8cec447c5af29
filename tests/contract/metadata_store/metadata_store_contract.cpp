#include "contract/metadata_store/metadata_store_contract.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <string>

namespace starling::testing {

namespace {

std::vector<std::string> credentials_ids(const std::vector<client_credentials>& rows) {
    std::vector<std::string> ids;
    for (const auto& c : rows) {
        ids.push_back(c.credentials_id);
    }
    return ids;
}

}  // namespace

// --- credentials ---------------------------------------------------------------------------

TEST_P(metadata_store_contract, saved_credentials_round_trip) {
    client_credentials c = credentials("username|alice", "alice's app");
    c.id = "6f1c4a50-0d4e-4d0a-9a5e-2b8f3c1d7e90";
    c.created_time_ms = 1700000000123;
    c.type = client_type::application;
    c.credentials_type = "SCRAM";
    c.credentials_value = R"({"userName":"alice","algorithm":"SHA_256"})";
    ASSERT_TRUE(save(c));

    auto found = find({"username|alice"});
    ASSERT_TRUE(found) << found.error().message();
    ASSERT_EQ(found->size(), 1u);
    const auto& got = (*found)[0];
    EXPECT_EQ(got.id, c.id);
    EXPECT_EQ(got.created_time_ms, c.created_time_ms);
    EXPECT_EQ(got.name, c.name);
    EXPECT_EQ(got.type, client_type::application);
    EXPECT_EQ(got.credentials_id, c.credentials_id);
    EXPECT_EQ(got.credentials_type, "SCRAM");
    EXPECT_EQ(got.credentials_value, c.credentials_value);
}

TEST_P(metadata_store_contract, save_without_id_or_time_fills_them_in) {
    ASSERT_TRUE(save(credentials("client_id|c1")));
    auto found = find({"client_id|c1"});
    ASSERT_TRUE(found);
    ASSERT_EQ(found->size(), 1u);
    EXPECT_FALSE((*found)[0].id.empty());
    EXPECT_EQ((*found)[0].created_time_ms, clock_.epoch_ms());
    EXPECT_EQ((*found)[0].type, client_type::device);
}

TEST_P(metadata_store_contract, find_by_several_ids_returns_the_existing_ones) {
    for (const char* id : {"username|a", "username|b", "client_id|c", "mixed|d|e"}) {
        ASSERT_TRUE(save(credentials(id)));
    }
    auto found = find({"username|a", "missing|x", "mixed|d|e", "client_id|c", "username|a"});
    ASSERT_TRUE(found) << found.error().message();
    auto ids = credentials_ids(*found);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(ids, (std::vector<std::string>{"client_id|c", "mixed|d|e", "username|a"}));

    auto none = find({"missing|x"});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    auto empty = find({});
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty());
}

TEST_P(metadata_store_contract, save_without_id_updates_the_row_of_its_credentials_id) {
    ASSERT_TRUE(save(credentials("username|a", "first")));
    auto before = find({"username|a"});
    ASSERT_TRUE(before);
    ASSERT_EQ(before->size(), 1u);

    auto changed = credentials("username|a", "second");
    changed.credentials_value = R"({"userName":"a","password":"x"})";
    ASSERT_TRUE(save(changed));
    auto rows = list(100, 0);
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].id, (*before)[0].id);
    EXPECT_EQ((*rows)[0].name, "second");
    EXPECT_EQ((*rows)[0].credentials_value, changed.credentials_value);
}

TEST_P(metadata_store_contract, save_with_id_updates_that_row_including_its_credentials_id) {
    auto c = credentials("username|old");
    c.id = "00000000-0000-4000-8000-000000000001";
    ASSERT_TRUE(save(c));
    c.credentials_id = "username|new";
    c.type = client_type::application;
    ASSERT_TRUE(save(c));

    auto old_row = find({"username|old"});
    ASSERT_TRUE(old_row);
    EXPECT_TRUE(old_row->empty());
    auto new_row = find({"username|new"});
    ASSERT_TRUE(new_row);
    ASSERT_EQ(new_row->size(), 1u);
    EXPECT_EQ((*new_row)[0].id, c.id);
    EXPECT_EQ((*new_row)[0].type, client_type::application);
}

TEST_P(metadata_store_contract, credentials_id_of_another_row_is_rejected) {
    auto a = credentials("username|a");
    a.id = "00000000-0000-4000-8000-00000000000a";
    auto b = credentials("username|b");
    b.id = "00000000-0000-4000-8000-00000000000b";
    ASSERT_TRUE(save(a));
    ASSERT_TRUE(save(b));
    b.credentials_id = "username|a";
    auto st = save(b);
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), std::errc::file_exists) << st.error().message();
    auto still = find({"username|b"});
    ASSERT_TRUE(still);
    EXPECT_EQ(still->size(), 1u);
}

TEST_P(metadata_store_contract, credentials_without_lookup_key_are_rejected) {
    auto st = save(credentials(""));
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), std::errc::invalid_argument);
}

TEST_P(metadata_store_contract, delete_credentials_is_idempotent) {
    ASSERT_TRUE(save(credentials("username|a")));
    ASSERT_TRUE(save(credentials("username|b")));
    EXPECT_TRUE(remove_credentials("username|a"));
    EXPECT_TRUE(remove_credentials("username|a"));
    EXPECT_TRUE(remove_credentials("never|there"));
    auto rows = list(100, 0);
    ASSERT_TRUE(rows);
    EXPECT_EQ(credentials_ids(*rows), (std::vector<std::string>{"username|b"}));
}

TEST_P(metadata_store_contract, list_credentials_pages_in_creation_order) {
    for (int i = 0; i < 5; ++i) {
        auto c = credentials("username|u" + std::to_string(i));
        c.created_time_ms = 1000 + (4 - i);  // created in reverse name order
        ASSERT_TRUE(save(c));
    }
    auto first = list(2, 0);
    auto second = list(2, 2);
    auto third = list(2, 4);
    auto beyond = list(2, 5);
    ASSERT_TRUE(first && second && third && beyond);
    EXPECT_EQ(credentials_ids(*first), (std::vector<std::string>{"username|u4", "username|u3"}));
    EXPECT_EQ(credentials_ids(*second), (std::vector<std::string>{"username|u2", "username|u1"}));
    EXPECT_EQ(credentials_ids(*third), (std::vector<std::string>{"username|u0"}));
    EXPECT_TRUE(beyond->empty());
    auto none = list(0, 0);
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST_P(metadata_store_contract, count_credentials_follows_saves_and_deletes) {
    ASSERT_EQ(count().value(), 0U);
    ASSERT_TRUE(save(credentials("username|a")));
    ASSERT_TRUE(save(credentials("username|b")));
    ASSERT_TRUE(save(credentials("username|a")));  // an update, not a new row
    EXPECT_EQ(count().value(), 2U);
    ASSERT_TRUE(remove_credentials("username|a"));
    EXPECT_EQ(count().value(), 1U);
}

// --- session contexts ------------------------------------------------------------------------

TEST_P(metadata_store_contract, session_context_round_trip) {
    auto missing = load_session("c1");
    ASSERT_TRUE(missing) << missing.error().message();
    EXPECT_FALSE(missing->has_value());

    ASSERT_TRUE(save_session(
        {.client_id = "c1", .last_updated_ms = 1700000000000, .qos2_packet_ids = {7, 1, 65535}}));
    auto loaded = load_session("c1");
    ASSERT_TRUE(loaded);
    ASSERT_TRUE(loaded->has_value());
    EXPECT_EQ((*loaded)->client_id, "c1");
    EXPECT_EQ((*loaded)->last_updated_ms, 1700000000000);
    EXPECT_EQ((*loaded)->qos2_packet_ids, (std::vector<std::uint16_t>{7, 1, 65535}));

    ASSERT_TRUE(save_session({.client_id = "c1", .last_updated_ms = 0, .qos2_packet_ids = {}}));
    loaded = load_session("c1");
    ASSERT_TRUE(loaded && loaded->has_value());
    EXPECT_TRUE((*loaded)->qos2_packet_ids.empty());
    EXPECT_EQ((*loaded)->last_updated_ms, clock_.epoch_ms());  // 0: stamped with now

    ASSERT_TRUE(delete_session("c1"));
    ASSERT_TRUE(delete_session("c1"));
    loaded = load_session("c1");
    ASSERT_TRUE(loaded);
    EXPECT_FALSE(loaded->has_value());
}

TEST_P(metadata_store_contract, application_context_round_trip) {
    auto missing = load_application("app");
    ASSERT_TRUE(missing) << missing.error().message();
    EXPECT_FALSE(missing->has_value());

    const std::int64_t big = std::numeric_limits<std::int64_t>::max();
    application_session_context ctx{
        .client_id = "app",
        .last_updated_ms = 1700000000456,
        .publish_offsets = {{1, 0}, {65535, big}, {3, 42}},
        .pubrel_offsets = {{9, 17}},
    };
    ASSERT_TRUE(save_application(ctx));
    auto loaded = load_application("app");
    ASSERT_TRUE(loaded);
    ASSERT_TRUE(loaded->has_value());
    EXPECT_EQ((*loaded)->client_id, "app");
    EXPECT_EQ((*loaded)->last_updated_ms, ctx.last_updated_ms);
    EXPECT_EQ((*loaded)->publish_offsets, ctx.publish_offsets);
    EXPECT_EQ((*loaded)->pubrel_offsets, ctx.pubrel_offsets);

    ctx.publish_offsets.clear();
    ctx.pubrel_offsets = {{2, 5}};
    ASSERT_TRUE(save_application(ctx));
    loaded = load_application("app");
    ASSERT_TRUE(loaded && loaded->has_value());
    EXPECT_TRUE((*loaded)->publish_offsets.empty());
    EXPECT_EQ((*loaded)->pubrel_offsets, ctx.pubrel_offsets);

    ASSERT_TRUE(delete_application("app"));
    ASSERT_TRUE(delete_application("app"));
    loaded = load_application("app");
    ASSERT_TRUE(loaded);
    EXPECT_FALSE(loaded->has_value());
}

TEST_P(metadata_store_contract, session_and_application_contexts_are_separate) {
    ASSERT_TRUE(save_session({.client_id = "c", .qos2_packet_ids = {1}}));
    auto app = load_application("c");
    ASSERT_TRUE(app);
    EXPECT_FALSE(app->has_value());
}

// --- unauthorized-client log -------------------------------------------------------------------

TEST_P(metadata_store_contract, unauthorized_log_lists_newest_first_one_row_per_client) {
    const std::int64_t now = clock_.epoch_ms();
    ASSERT_TRUE(record_unauthorized({.client_id = "a",
                                     .ip_address = "10.0.0.1",
                                     .ts_ms = now - 3000,
                                     .username = "alice",
                                     .password_provided = true,
                                     .tls_used = false,
                                     .reason = "bad password"}));
    ASSERT_TRUE(record_unauthorized({.client_id = "b",
                                     .ip_address = "10.0.0.2",
                                     .ts_ms = now - 2000,
                                     .username = "",
                                     .password_provided = false,
                                     .tls_used = false,
                                     .reason = "x"}));
    ASSERT_TRUE(record_unauthorized({.client_id = "c",
                                     .ip_address = "::1",
                                     .ts_ms = now - 1000,
                                     .username = "",
                                     .password_provided = false,
                                     .tls_used = true,
                                     .reason = "no credentials"}));

    auto rows = list_unauthorized(10);
    ASSERT_TRUE(rows) << rows.error().message();
    ASSERT_EQ(rows->size(), 3u);
    EXPECT_EQ((*rows)[0].client_id, "c");
    EXPECT_TRUE((*rows)[0].tls_used);
    EXPECT_FALSE((*rows)[0].password_provided);
    EXPECT_EQ((*rows)[0].ip_address, "::1");
    EXPECT_EQ((*rows)[2].client_id, "a");
    EXPECT_EQ((*rows)[2].username, "alice");
    EXPECT_TRUE((*rows)[2].password_provided);
    EXPECT_EQ((*rows)[2].reason, "bad password");
    EXPECT_EQ((*rows)[2].ts_ms, now - 3000);

    // A new failure of a known client replaces its row.
    ASSERT_TRUE(record_unauthorized({.client_id = "a",
                                     .ip_address = "10.0.0.1",
                                     .ts_ms = now,
                                     .username = "alice",
                                     .password_provided = false,
                                     .tls_used = false,
                                     .reason = "again"}));
    rows = list_unauthorized(2);
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ((*rows)[0].client_id, "a");
    EXPECT_EQ((*rows)[0].reason, "again");
    EXPECT_EQ((*rows)[1].client_id, "c");
}

// Fields come from the client (a client id may be 64 KiB): stored cut to the port's bounds, at a
// UTF-8 character boundary.
TEST_P(metadata_store_contract, unauthorized_log_stores_bounded_fields) {
    std::string username = "a";
    for (int i = 0; i < 500; ++i) {
        username += "\xc3\xa9";  // é: two bytes, so byte 256 falls inside one
    }
    ASSERT_TRUE(record_unauthorized({.client_id = std::string(64 * 1024, 'x'),
                                     .ip_address = "10.0.0.1",
                                     .ts_ms = clock_.epoch_ms(),
                                     .username = username,
                                     .password_provided = true,
                                     .tls_used = false,
                                     .reason = std::string(5000, 'r')}));
    auto rows = list_unauthorized(10);
    ASSERT_TRUE(rows) << rows.error().message();
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].client_id, std::string(unauthorized_max_id_bytes, 'x'));
    EXPECT_EQ((*rows)[0].username, username.substr(0, 255)) << "cut before the split é";
    EXPECT_EQ((*rows)[0].reason, std::string(unauthorized_max_reason_bytes, 'r'));
    // A second long id with the same first 256 bytes is the same row.
    ASSERT_TRUE(record_unauthorized({.client_id = std::string(300, 'x'),
                                     .ip_address = "10.0.0.2",
                                     .ts_ms = clock_.epoch_ms(),
                                     .reason = "again"}));
    rows = list_unauthorized(10);
    ASSERT_TRUE(rows);
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].reason, "again");
}

// A flood from one address writes a bounded number of rows (10 per minute by default), and
// reports success for the ones it drops; other addresses are not affected.
TEST_P(metadata_store_contract, unauthorized_log_rate_limits_each_address) {
    const std::int64_t now = clock_.epoch_ms();
    for (int i = 0; i < 50; ++i) {
        ASSERT_TRUE(record_unauthorized({.client_id = "flood-" + std::to_string(i),
                                         .ip_address = "203.0.113.9",
                                         .ts_ms = now,
                                         .reason = "bad password"}));
    }
    ASSERT_TRUE(record_unauthorized(
        {.client_id = "other", .ip_address = "203.0.113.10", .ts_ms = now, .reason = "x"}));
    auto rows = list_unauthorized(1000);
    ASSERT_TRUE(rows) << rows.error().message();
    std::size_t flood = 0;
    for (const auto& row : *rows) {
        flood += row.ip_address == "203.0.113.9" ? 1 : 0;
    }
    EXPECT_EQ(flood, 10u);
    EXPECT_EQ(rows->size(), 11u);
    // The bucket refills: one row per 6 s for that address.
    clock_.advance(std::chrono::seconds(6));
    ASSERT_TRUE(record_unauthorized({.client_id = "flood-late",
                                     .ip_address = "203.0.113.9",
                                     .ts_ms = clock_.epoch_ms(),
                                     .reason = "bad password"}));
    ASSERT_TRUE(record_unauthorized({.client_id = "flood-later",
                                     .ip_address = "203.0.113.9",
                                     .ts_ms = clock_.epoch_ms(),
                                     .reason = "bad password"}));
    rows = list_unauthorized(1000);
    ASSERT_TRUE(rows);
    EXPECT_EQ(rows->size(), 12u);
}

// Pages of the log are consistent with its total; textSearch is a case-insensitive literal
// substring of the client id ('%' and '_' are not wildcards).
TEST_P(metadata_store_contract, unauthorized_log_pages_and_searches) {
    const std::int64_t now = clock_.epoch_ms();
    const std::vector<std::string> ids = {"dev-1",   "dev-10",  "DEV-11", "gw-1",
                                          "50%_off", "500-off", "a\\b"};
    for (std::size_t i = 0; i < ids.size(); ++i) {
        // One address each: the per-address rate limit is not under test here.
        ASSERT_TRUE(record_unauthorized({.client_id = ids[i],
                                         .ip_address = "10.0.1." + std::to_string(i),
                                         .ts_ms = now - 1000 * static_cast<std::int64_t>(i),
                                         .reason = "r"}));
    }
    std::vector<std::string> paged;
    for (std::size_t offset = 0; offset < 9; offset += 3) {
        auto page = query_unauthorized({.limit = 3, .offset = offset});
        ASSERT_TRUE(page) << page.error().message();
        EXPECT_EQ(page->total, ids.size());
        for (const auto& row : page->rows) {
            paged.push_back(row.client_id);
        }
    }
    EXPECT_EQ(paged, ids) << "newest first, each row on exactly one page";

    auto search = [&](const std::string& text) {
        std::set<std::string> found;
        auto page = query_unauthorized({.limit = 100, .client_id_contains = text});
        EXPECT_TRUE(page) << page.error().message();
        if (page) {
            EXPECT_EQ(page->total, page->rows.size()) << text;
            for (const auto& row : page->rows) {
                found.insert(row.client_id);
            }
        }
        return found;
    };
    EXPECT_EQ(search("dev-1"), (std::set<std::string>{"dev-1", "dev-10", "DEV-11"}));
    EXPECT_EQ(search("dEv-11"), (std::set<std::string>{"DEV-11"}));
    EXPECT_EQ(search("0%_"), (std::set<std::string>{"50%_off"}));
    EXPECT_EQ(search("_"), (std::set<std::string>{"50%_off"}));
    EXPECT_EQ(search("\\"), (std::set<std::string>{"a\\b"}));
    EXPECT_EQ(search("absent"), (std::set<std::string>{}));
    auto limited = query_unauthorized({.limit = 1, .client_id_contains = "dev"});
    ASSERT_TRUE(limited);
    EXPECT_EQ(limited->rows.size(), 1u);
    EXPECT_EQ(limited->total, 3u);
}

TEST_P(metadata_store_contract, unauthorized_rows_are_found_deleted_and_cleared) {
    const std::int64_t now = clock_.epoch_ms();
    ASSERT_TRUE(record_unauthorized({.client_id = "a",
                                     .ip_address = "10.0.2.1",
                                     .ts_ms = now,
                                     .username = "alice",
                                     .password_provided = true,
                                     .tls_used = true,
                                     .reason = "bad password"}));
    ASSERT_TRUE(record_unauthorized(
        {.client_id = "b", .ip_address = "10.0.2.2", .ts_ms = now, .reason = "x"}));
    ASSERT_TRUE(record_unauthorized(
        {.client_id = "c", .ip_address = "10.0.2.3", .ts_ms = now, .reason = "x"}));

    auto found = find_unauthorized("a");
    ASSERT_TRUE(found) << found.error().message();
    ASSERT_TRUE(found->has_value());
    EXPECT_EQ((*found)->username, "alice");
    EXPECT_TRUE((*found)->password_provided);
    EXPECT_TRUE((*found)->tls_used);
    EXPECT_EQ((*found)->reason, "bad password");
    EXPECT_EQ((*found)->ts_ms, now);
    auto missing = find_unauthorized("A");
    ASSERT_TRUE(missing);
    EXPECT_FALSE(missing->has_value()) << "lookups by id are exact";

    auto removed = delete_unauthorized("a");
    ASSERT_TRUE(removed) << removed.error().message();
    EXPECT_TRUE(*removed);
    removed = delete_unauthorized("a");
    ASSERT_TRUE(removed);
    EXPECT_FALSE(*removed);
    found = find_unauthorized("a");
    ASSERT_TRUE(found);
    EXPECT_FALSE(found->has_value());

    auto cleared = clear_unauthorized();
    ASSERT_TRUE(cleared) << cleared.error().message();
    EXPECT_EQ(*cleared, 2u);
    auto rows = list_unauthorized(10);
    ASSERT_TRUE(rows);
    EXPECT_TRUE(rows->empty());
    cleared = clear_unauthorized();
    ASSERT_TRUE(cleared);
    EXPECT_EQ(*cleared, 0u);
}

// --- statistics series -------------------------------------------------------------------------

TEST_P(metadata_store_contract, stats_points_come_back_by_key_then_time_then_node) {
    ASSERT_TRUE(save_stats({
        {.entity_id = "node-b", .key = "sessions", .ts_ms = 60000, .value = 3},
        {.entity_id = "node-a", .key = "sessions", .ts_ms = 60000, .value = 5},
        {.entity_id = "node-a", .key = "incomingMsgs", .ts_ms = 120000, .value = 70},
        {.entity_id = "node-a", .key = "incomingMsgs", .ts_ms = 60000, .value = 10},
        {.entity_id = "node-a", .key = "sessions", .ts_ms = 0, .value = 1},
    }));
    auto all = read_stats({.keys = {"sessions", "incomingMsgs"}, .start_ms = 0, .end_ms = 120000});
    ASSERT_TRUE(all) << all.error().message();
    EXPECT_EQ(*all,
              (std::vector<stats_point>{
                  {.entity_id = "node-a", .key = "incomingMsgs", .ts_ms = 60000, .value = 10},
                  {.entity_id = "node-a", .key = "incomingMsgs", .ts_ms = 120000, .value = 70},
                  {.entity_id = "node-a", .key = "sessions", .ts_ms = 0, .value = 1},
                  {.entity_id = "node-a", .key = "sessions", .ts_ms = 60000, .value = 5},
                  {.entity_id = "node-b", .key = "sessions", .ts_ms = 60000, .value = 3},
              }));
}

TEST_P(metadata_store_contract, stats_query_filters_by_node_range_key_and_limit) {
    std::vector<stats_point> points;
    for (std::int64_t minute = 0; minute < 10; ++minute) {
        for (const char* node : {"n1", "n2"}) {
            points.push_back({.entity_id = node,
                              .key = "droppedMsgs",
                              .ts_ms = minute * 60000,
                              .value = minute});
            points.push_back({.entity_id = node,
                              .key = "retainedMsgs",
                              .ts_ms = minute * 60000,
                              .value = 100 + minute});
        }
    }
    ASSERT_TRUE(save_stats(points));
    // Both ends inclusive, one node, one key.
    auto one = read_stats(
        {.keys = {"droppedMsgs"}, .entity_id = "n2", .start_ms = 120000, .end_ms = 240000});
    ASSERT_TRUE(one);
    ASSERT_EQ(one->size(), 3U);
    EXPECT_EQ(one->front().ts_ms, 120000);
    EXPECT_EQ(one->back().ts_ms, 240000);
    for (const auto& p : *one) {
        EXPECT_EQ(p.entity_id, "n2");
        EXPECT_EQ(p.key, "droppedMsgs");
        EXPECT_EQ(p.value, p.ts_ms / 60000);
    }
    // The limit keeps the earliest points.
    auto limited =
        read_stats({.keys = {"retainedMsgs"}, .start_ms = 0, .end_ms = 600000, .limit = 3});
    ASSERT_TRUE(limited);
    ASSERT_EQ(limited->size(), 3U);
    EXPECT_EQ((*limited)[0].ts_ms, 0);
    EXPECT_EQ((*limited)[1].ts_ms, 0);
    EXPECT_EQ((*limited)[2].ts_ms, 60000);
    // Keys that are not statistics match nothing; neither does an empty or inverted range.
    auto unknown = read_stats({.keys = {"cpuUsage", "x' OR 1=1 --"}, .end_ms = 600000});
    ASSERT_TRUE(unknown);
    EXPECT_TRUE(unknown->empty());
    auto inverted = read_stats({.keys = {"droppedMsgs"}, .start_ms = 600000, .end_ms = 0});
    ASSERT_TRUE(inverted);
    EXPECT_TRUE(inverted->empty());
}

TEST_P(metadata_store_contract, a_second_point_at_the_same_time_replaces_the_first) {
    ASSERT_TRUE(
        save_stats({{.entity_id = "n", .key = "outgoingMsgs", .ts_ms = 60000, .value = 1}}));
    ASSERT_TRUE(
        save_stats({{.entity_id = "n", .key = "outgoingMsgs", .ts_ms = 60000, .value = 9}}));
    auto got = read_stats({.keys = {"outgoingMsgs"}, .start_ms = 0, .end_ms = 60000});
    ASSERT_TRUE(got);
    ASSERT_EQ(got->size(), 1U);
    EXPECT_EQ(got->front().value, 9);
}

TEST_P(metadata_store_contract, saving_an_unknown_stats_key_fails_and_saves_nothing) {
    auto st = save_stats({{.entity_id = "n", .key = "sessions", .ts_ms = 1, .value = 1},
                          {.entity_id = "n", .key = "cpuUsage", .ts_ms = 1, .value = 1}});
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), std::errc::invalid_argument);
    st = save_stats({{.entity_id = "", .key = "sessions", .ts_ms = 1, .value = 1}});
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), std::errc::invalid_argument);
    auto got = read_stats({.keys = {"sessions"}, .start_ms = 0, .end_ms = 10});
    ASSERT_TRUE(got);
    EXPECT_TRUE(got->empty());
}

TEST_P(metadata_store_contract, delete_stats_before_removes_only_older_points) {
    ASSERT_TRUE(save_stats({{.entity_id = "a", .key = "sessions", .ts_ms = 1000, .value = 1},
                            {.entity_id = "b", .key = "subscriptions", .ts_ms = 1999, .value = 2},
                            {.entity_id = "a", .key = "sessions", .ts_ms = 2000, .value = 3}}));
    auto removed = delete_stats_before(2000);
    ASSERT_TRUE(removed) << removed.error().message();
    EXPECT_EQ(*removed, 2U);
    auto left = read_stats({.keys = {"sessions", "subscriptions"}, .start_ms = 0, .end_ms = 5000});
    ASSERT_TRUE(left);
    ASSERT_EQ(left->size(), 1U);
    EXPECT_EQ(left->front().value, 3);
    EXPECT_EQ(delete_stats_before(2000).value(), 0U);
}

// --- settings ----------------------------------------------------------------------------------

TEST_P(metadata_store_contract, application_shared_subscription_found_by_filter_and_updated) {
    auto missing = find_shared("sensors/+/temp");
    ASSERT_TRUE(missing) << missing.error().message();
    EXPECT_FALSE(missing->has_value());

    ASSERT_TRUE(save_shared(
        {.id = "s1", .topic_filter = "sensors/+/temp", .partitions = 4, .name = "temperatures"}));
    auto found = find_shared("sensors/+/temp");
    ASSERT_TRUE(found && found->has_value());
    EXPECT_EQ((*found)->id, "s1");
    EXPECT_EQ((*found)->partitions, 4);
    EXPECT_EQ((*found)->name, "temperatures");
    EXPECT_GT((*found)->created_time_ms, 0);

    // The filter is unique: saving it again changes the partitions of the same entity.
    ASSERT_TRUE(save_shared({.id = "s2", .topic_filter = "sensors/+/temp", .partitions = 8}));
    found = find_shared("sensors/+/temp");
    ASSERT_TRUE(found && found->has_value());
    EXPECT_EQ((*found)->id, "s1");
    EXPECT_EQ((*found)->partitions, 8);

    EXPECT_FALSE(save_shared({.id = "s3", .topic_filter = "x", .partitions = 0}));
}

TEST_P(metadata_store_contract, application_shared_subscriptions_listed_by_filter_and_deleted) {
    auto none = list_shared();
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_TRUE(none->empty());
    ASSERT_TRUE(save_shared({.id = "b", .topic_filter = "z/#", .partitions = 2, .name = "zed"}));
    ASSERT_TRUE(save_shared({.id = "a", .topic_filter = "a/+", .partitions = 3}));
    auto all = list_shared();
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 2U);
    EXPECT_EQ((*all)[0].topic_filter, "a/+");
    EXPECT_EQ((*all)[0].id, "a");
    EXPECT_EQ((*all)[0].partitions, 3);
    EXPECT_GT((*all)[0].created_time_ms, 0);
    EXPECT_EQ((*all)[1].name, "zed");

    auto deleted = delete_shared("b");
    ASSERT_TRUE(deleted && *deleted);
    deleted = delete_shared("b");
    ASSERT_TRUE(deleted);
    EXPECT_FALSE(*deleted) << "deleting what is gone reports false";
    all = list_shared();
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 1U);
    EXPECT_EQ((*all)[0].id, "a");
    auto found = find_shared("z/#");
    ASSERT_TRUE(found);
    EXPECT_FALSE(found->has_value());
}

// --- integrations ------------------------------------------------------------------------------

TEST_P(metadata_store_contract, integrations_list_empty_when_none) {
    auto none = list_integrations();
    ASSERT_TRUE(none) << none.error().message();
    EXPECT_TRUE(none->empty());
}

TEST_P(metadata_store_contract, saved_integration_is_listed) {
    const integration_row row = integration("0b6f3d1e-5c1a-4e2f-9d7b-3a8c2e1f4b60", 1700000000123);
    ASSERT_TRUE(save_integration(row));
    auto all = list_integrations();
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 1U);
    EXPECT_EQ((*all)[0], row);

    // created_time_ms 0 is stamped with now; a disabled row with no additional info keeps both.
    integration_row bare = integration("b", 0, "");
    bare.enabled = false;
    bare.additional_info.clear();
    ASSERT_TRUE(save_integration(bare));
    all = list_integrations();
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 2U);
    bare.created_time_ms = clock_.epoch_ms();
    EXPECT_EQ((*all)[1], bare);
}

TEST_P(metadata_store_contract, integration_update_keeps_created_time_and_replaces_the_rest) {
    ASSERT_TRUE(save_integration(integration("i1", 1000, "first")));
    const integration_row changed{.id = "i1",
                                  .created_time_ms = 5000,
                                  .name = "second",
                                  .type = "KAFKA",
                                  .enabled = false,
                                  .configuration = R"({"bootstrapServers":"k:9092"})",
                                  .additional_info = ""};
    ASSERT_TRUE(save_integration(changed));
    auto all = list_integrations();
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 1U);
    integration_row expected = changed;
    expected.created_time_ms = 1000;  // the first value
    EXPECT_EQ((*all)[0], expected);
}

TEST_P(metadata_store_contract, integrations_listed_by_created_time_then_id) {
    ASSERT_TRUE(save_integration(integration("c", 2000)));
    ASSERT_TRUE(save_integration(integration("b", 1000)));
    ASSERT_TRUE(save_integration(integration("d", 1000)));
    ASSERT_TRUE(save_integration(integration("a", 3000)));
    auto all = list_integrations();
    ASSERT_TRUE(all) << all.error().message();
    std::vector<std::string> ids;
    for (const auto& row : *all) {
        ids.push_back(row.id);
    }
    EXPECT_EQ(ids, (std::vector<std::string>{"b", "d", "c", "a"}));
}

TEST_P(metadata_store_contract, integration_delete_reports_whether_there_was_one) {
    ASSERT_TRUE(save_integration(integration("i1", 1000)));
    ASSERT_TRUE(save_integration(integration("i2", 2000)));
    auto deleted = delete_integration("i1");
    ASSERT_TRUE(deleted) << deleted.error().message();
    EXPECT_TRUE(*deleted);
    deleted = delete_integration("i1");
    ASSERT_TRUE(deleted) << deleted.error().message();
    EXPECT_FALSE(*deleted) << "deleting what is gone reports false";
    deleted = delete_integration("never-saved");
    ASSERT_TRUE(deleted) << deleted.error().message();
    EXPECT_FALSE(*deleted);
    auto all = list_integrations();
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 1U);
    EXPECT_EQ((*all)[0].id, "i2");
}

TEST_P(metadata_store_contract, integration_large_configuration_round_trips) {
    integration_row row = integration("big", 1000);
    // A 1 MiB JSON document.
    const std::string prefix = R"({"headers":{"x":")";
    const std::string suffix = R"("}})";
    row.configuration =
        prefix + std::string((1U << 20) - prefix.size() - suffix.size(), 'v') + suffix;
    ASSERT_EQ(row.configuration.size(), 1U << 20);
    ASSERT_TRUE(save_integration(row));
    auto all = list_integrations();
    ASSERT_TRUE(all) << all.error().message();
    ASSERT_EQ(all->size(), 1U);
    EXPECT_EQ((*all)[0].configuration.size(), row.configuration.size());
    EXPECT_TRUE((*all)[0] == row);  // not EXPECT_EQ: a failure would print 1 MiB
}

TEST_P(metadata_store_contract, settings_round_trip_and_overwrite) {
    auto missing = get_setting("general");
    ASSERT_TRUE(missing) << missing.error().message();
    EXPECT_FALSE(missing->has_value());

    ASSERT_TRUE(put_setting("general", R"({"baseUrl":"http://localhost:8083"})"));
    ASSERT_TRUE(put_setting("mqttAuthorization", R"({"priorities":["MQTT_BASIC","X_509"]})"));
    auto general = get_setting("general");
    ASSERT_TRUE(general && general->has_value());
    EXPECT_EQ(**general, R"({"baseUrl":"http://localhost:8083"})");

    ASSERT_TRUE(put_setting("general", R"({"baseUrl":"https://broker"})"));
    general = get_setting("general");
    ASSERT_TRUE(general && general->has_value());
    EXPECT_EQ(**general, R"({"baseUrl":"https://broker"})");
    auto auth = get_setting("mqttAuthorization");
    ASSERT_TRUE(auth && auth->has_value());
    EXPECT_EQ(**auth, R"({"priorities":["MQTT_BASIC","X_509"]})");
}

TEST_P(metadata_store_contract, settings_must_be_json) {
    auto st = put_setting("general", "not json {");
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error(), std::errc::invalid_argument);
}

TEST_P(metadata_store_contract, is_healthy_when_open) { EXPECT_TRUE(store_->healthy()); }

}  // namespace starling::testing
