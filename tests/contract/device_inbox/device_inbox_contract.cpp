#include "contract/device_inbox/device_inbox_contract.h"

#include <algorithm>
#include <chrono>
#include <random>

namespace starling::testing {

namespace {

using ids = std::vector<std::uint16_t>;
using std::chrono::milliseconds;

}  // namespace

TEST_P(device_inbox_contract, append_assigns_packet_ids_from_one_and_reads_them_back) {
    auto r = append("c1", {{"a", 0}, {"b", 0}, {"c", 0}});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->packet_ids, (ids{1, 2, 3}));
    EXPECT_EQ(r->trimmed, 0u);

    auto pending = read("c1");
    ASSERT_TRUE(pending) << pending.error().message();
    ASSERT_EQ(pending->size(), 3u);
    const char* records[] = {"a", "b", "c"};
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ((*pending)[i].packet_id, i + 1);
        EXPECT_EQ((*pending)[i].record, records[i]);
        EXPECT_FALSE((*pending)[i].pubrel);
        // expires_at_ms == 0 means the default TTL from the moment of the append.
        EXPECT_EQ((*pending)[i].expires_at_ms, clock_.epoch_ms() + settings_.default_ttl_ms);
    }
}

// Shared-group inboxes (broker/group_inbox.h) use keys that start with 0xFF, which no UTF-8
// client id contains: every operation must treat a key as bytes, and keep it apart from a
// client id that differs only in that byte.
TEST_P(device_inbox_contract, a_key_need_not_be_utf8) {
    const std::string group = "\xff$share/g/a/#";
    const std::string client = "$share/g/a/#";
    EXPECT_EQ(append_n(group, 3), (ids{1, 2, 3}));
    EXPECT_EQ(append_n(client, 1), (ids{1}));
    ASSERT_TRUE(remove(group, 2));
    EXPECT_EQ(pending_ids(group), (ids{1, 3}));
    EXPECT_EQ(pending_ids(client), (ids{1}));
}

TEST_P(device_inbox_contract, packet_ids_continue_across_batches) {
    EXPECT_EQ(append_n("c1", 2), (ids{1, 2}));
    EXPECT_EQ(append_n("c1", 3), (ids{3, 4, 5}));
    EXPECT_EQ(pending_ids("c1"), (ids{1, 2, 3, 4, 5}));
}

TEST_P(device_inbox_contract, empty_batch_changes_nothing) {
    auto r = append("c1", {});
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_TRUE(r->packet_ids.empty());
    EXPECT_EQ(r->trimmed, 0u);
    EXPECT_EQ(append_n("c1", 1), (ids{1}));
}

TEST_P(device_inbox_contract, clients_have_separate_ids_and_messages) {
    EXPECT_EQ(append_n("a", 2, "a"), (ids{1, 2}));
    EXPECT_EQ(append_n("b", 1, "b"), (ids{1}));
    auto b = read("b");
    ASSERT_TRUE(b);
    ASSERT_EQ(b->size(), 1u);
    EXPECT_EQ((*b)[0].record, "b0");
    ASSERT_TRUE(clear("a"));
    EXPECT_EQ(pending_ids("b"), (ids{1}));
    EXPECT_EQ(append_n("b", 1), (ids{2}));
}

TEST_P(device_inbox_contract, records_are_opaque_bytes) {
    const std::string binary("\0\x01\xff{\"json\":true}\n\0", 17);
    auto r = append("c1", {{binary, 0}, {"", 0}});
    ASSERT_TRUE(r) << r.error().message();
    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 2u);
    EXPECT_EQ((*pending)[0].record, binary);
    EXPECT_EQ((*pending)[1].record, "");
}

TEST_P(device_inbox_contract, read_of_unknown_client_is_empty) {
    auto pending = read("nobody");
    ASSERT_TRUE(pending) << pending.error().message();
    EXPECT_TRUE(pending->empty());
}

TEST_P(device_inbox_contract, read_returns_oldest_first_at_most_max) {
    append_n("c1", 5);
    auto first = read("c1", 2);
    ASSERT_TRUE(first);
    ASSERT_EQ(first->size(), 2u);
    EXPECT_EQ((*first)[0].packet_id, 1);
    EXPECT_EQ((*first)[1].packet_id, 2);
    // Reading does not consume.
    EXPECT_EQ(pending_ids("c1"), (ids{1, 2, 3, 4, 5}));
}

TEST_P(device_inbox_contract, packet_id_counter_survives_an_empty_inbox) {
    EXPECT_EQ(append_n("c1", 2), (ids{1, 2}));
    ASSERT_TRUE(remove("c1", 1));
    ASSERT_TRUE(remove("c1", 2));
    EXPECT_TRUE(pending_ids("c1").empty());
    EXPECT_EQ(append_n("c1", 1), (ids{3}));
}

TEST_P(device_inbox_contract, a_batch_removal_removes_exactly_the_named_messages) {
    EXPECT_EQ(append_n("c1", 6), (ids{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(append_n("c2", 2), (ids{1, 2}));
    ASSERT_TRUE(await<status>([&](auto done) {
        inbox_->remove_batch("c1", std::vector<std::uint16_t>{1, 3, 5, 999}, std::move(done));
    }));
    EXPECT_EQ(pending_ids("c1"), (ids{2, 4, 6}));
    EXPECT_EQ(pending_ids("c2"), (ids{1, 2})) << "another client's messages stay";
    // The count kept for trimming follows: room for exactly the limit again.
    ASSERT_TRUE(await<status>([&](auto done) {
        inbox_->remove_batch("c1", std::vector<std::uint16_t>{}, std::move(done));
    }));
    EXPECT_EQ(pending_ids("c1"), (ids{2, 4, 6}));
}

TEST_P(device_inbox_contract, packet_ids_wrap_from_65535_to_1) {
    // One oversized batch walks the counter to 65534 cheaply: all but max_messages of it are
    // trimmed at once, yet every entry is assigned an id.
    auto walk = append("c1", entries(65534));
    ASSERT_TRUE(walk) << walk.error().message();
    ASSERT_EQ(walk->packet_ids.size(), 65534u);
    EXPECT_EQ(walk->packet_ids.front(), 1);
    EXPECT_EQ(walk->packet_ids.back(), 65534);
    EXPECT_EQ(walk->trimmed, 65534u - settings_.max_messages);

    auto wrap = append("c1", entries(3, "w"));
    ASSERT_TRUE(wrap) << wrap.error().message();
    EXPECT_EQ(wrap->packet_ids, (ids{65535, 1, 2}));
    EXPECT_EQ(wrap->trimmed, 3u);

    const auto pending = pending_ids("c1");
    ASSERT_EQ(pending.size(), settings_.max_messages);
    EXPECT_EQ(pending.front(), 65535 - settings_.max_messages + 3);
    EXPECT_EQ((ids{pending.end() - 3, pending.end()}), (ids{65535, 1, 2}));
}

TEST_P(device_inbox_contract, wrapping_skips_ids_still_pending) {
    // A message that stays pending while 65,534 later ones come and go keeps its id; the
    // counter steps over it instead of handing the same id to a second message.
    inbox_ = make({.max_messages = 65535, .default_ttl_ms = 60000});
    EXPECT_EQ(append_n("c1", 1, "keep"), (ids{1}));
    // 65533 messages that are already expired: they hold ids 2..65534 until a read drops them.
    auto expired = append("c1", entries(65533, "x", clock_.epoch_ms() - 1));
    ASSERT_TRUE(expired) << expired.error().message();
    EXPECT_EQ(expired->packet_ids.back(), 65534);
    EXPECT_EQ(pending_ids("c1"), (ids{1}));

    EXPECT_EQ(append_n("c1", 3, "new"), (ids{65535, 2, 3}));
    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 4u);
    EXPECT_EQ((*pending)[0].record, "keep0");
    EXPECT_EQ((*pending)[1].record, "new0");
}

TEST_P(device_inbox_contract, trims_oldest_past_max_messages_and_counts_them) {
    inbox_ = make({.max_messages = 5, .default_ttl_ms = 60000});
    auto first = append("c1", entries(3));
    ASSERT_TRUE(first);
    EXPECT_EQ(first->trimmed, 0u);
    auto second = append("c1", entries(4));
    ASSERT_TRUE(second);
    EXPECT_EQ(second->packet_ids, (ids{4, 5, 6, 7}));
    EXPECT_EQ(second->trimmed, 2u);
    EXPECT_EQ(pending_ids("c1"), (ids{3, 4, 5, 6, 7}));
}

TEST_P(device_inbox_contract, batch_larger_than_max_keeps_its_newest_entries) {
    inbox_ = make({.max_messages = 5, .default_ttl_ms = 60000});
    append_n("c1", 2);
    auto r = append("c1", entries(8, "b"));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->packet_ids, (ids{3, 4, 5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(r->trimmed, 5u);  // both old messages and the batch's first three
    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 5u);
    EXPECT_EQ((*pending)[0].packet_id, 6);
    EXPECT_EQ((*pending)[0].record, "b3");
    EXPECT_EQ((*pending)[4].packet_id, 10);
}

TEST_P(device_inbox_contract, expired_messages_are_dropped_at_read) {
    const std::int64_t now = clock_.epoch_ms();
    auto r = append("c1", {{"short", now + 100}, {"long", now + 10000}, {"default", 0}});
    ASSERT_TRUE(r);
    EXPECT_EQ(pending_ids("c1"), (ids{1, 2, 3}));

    clock_.advance(milliseconds(99));
    EXPECT_EQ(pending_ids("c1"), (ids{1, 2, 3}));
    clock_.advance(milliseconds(1));  // expires_at_ms is the first instant it is gone
    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 2u);
    EXPECT_EQ((*pending)[0].record, "long");
    EXPECT_EQ((*pending)[0].expires_at_ms, now + 10000);

    clock_.advance(milliseconds(settings_.default_ttl_ms));
    EXPECT_TRUE(pending_ids("c1").empty());
}

TEST_P(device_inbox_contract, expired_messages_stop_counting_towards_the_limit) {
    inbox_ = make({.max_messages = 3, .default_ttl_ms = 50});
    append_n("c1", 3);
    clock_.advance(milliseconds(50));
    EXPECT_TRUE(pending_ids("c1").empty());
    auto r = append("c1", entries(3));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->trimmed, 0u);
    EXPECT_EQ(r->packet_ids, (ids{4, 5, 6}));
}

TEST_P(device_inbox_contract, mark_pubrel_keeps_record_and_expiry) {
    const std::int64_t expires = clock_.epoch_ms() + 500;
    auto r = append("c1", {{"q2", expires}, {"other", 0}});
    ASSERT_TRUE(r);
    ASSERT_TRUE(mark_pubrel("c1", 1));

    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 2u);
    EXPECT_TRUE((*pending)[0].pubrel);
    EXPECT_EQ((*pending)[0].expires_at_ms, expires);
    EXPECT_EQ((*pending)[0].record, "q2");
    EXPECT_FALSE((*pending)[1].pubrel);

    clock_.advance(milliseconds(500));  // the PUBREL marker expires with its message
    EXPECT_EQ(pending_ids("c1"), (ids{2}));
}

TEST_P(device_inbox_contract, mark_pubrel_of_unknown_id_succeeds) {
    append_n("c1", 1);
    EXPECT_TRUE(mark_pubrel("c1", 42));
    EXPECT_TRUE(mark_pubrel("nobody", 1));
    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 1u);
    EXPECT_FALSE((*pending)[0].pubrel);
}

TEST_P(device_inbox_contract, remove_is_idempotent) {
    append_n("c1", 3);
    EXPECT_TRUE(remove("c1", 2));
    EXPECT_TRUE(remove("c1", 2));
    EXPECT_TRUE(remove("c1", 999));
    EXPECT_TRUE(remove("nobody", 1));
    EXPECT_EQ(pending_ids("c1"), (ids{1, 3}));
}

TEST_P(device_inbox_contract, removed_messages_free_room_under_the_limit) {
    inbox_ = make({.max_messages = 3, .default_ttl_ms = 60000});
    append_n("c1", 3);
    ASSERT_TRUE(remove("c1", 1));
    ASSERT_TRUE(remove("c1", 2));
    auto r = append("c1", entries(2));
    ASSERT_TRUE(r);
    EXPECT_EQ(r->trimmed, 0u);
    EXPECT_EQ(pending_ids("c1"), (ids{3, 4, 5}));
}

TEST_P(device_inbox_contract, clear_removes_messages_and_resets_packet_ids) {
    append_n("c1", 3);
    ASSERT_TRUE(clear("c1"));
    EXPECT_TRUE(pending_ids("c1").empty());
    EXPECT_EQ(append_n("c1", 1), (ids{1}));
    EXPECT_TRUE(clear("nobody"));
}

TEST_P(device_inbox_contract, order_is_oldest_first_after_mixed_operations) {
    EXPECT_EQ(append_n("c1", 5), (ids{1, 2, 3, 4, 5}));
    ASSERT_TRUE(remove("c1", 2));
    ASSERT_TRUE(mark_pubrel("c1", 4));
    EXPECT_EQ(append_n("c1", 2, "late"), (ids{6, 7}));
    ASSERT_TRUE(remove("c1", 1));
    ASSERT_TRUE(mark_pubrel("c1", 6));
    EXPECT_EQ(append_n("c1", 1, "last"), (ids{8}));

    auto pending = read("c1");
    ASSERT_TRUE(pending);
    ASSERT_EQ(pending->size(), 6u);
    const ids expected_ids{3, 4, 5, 6, 7, 8};
    const bool expected_pubrel[] = {false, true, false, true, false, false};
    const char* expected_records[] = {"m2", "m3", "m4", "late0", "late1", "last0"};
    for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_EQ((*pending)[i].packet_id, expected_ids[i]) << i;
        EXPECT_EQ((*pending)[i].pubrel, expected_pubrel[i]) << i;
        EXPECT_EQ((*pending)[i].record, expected_records[i]) << i;
    }
}

TEST_P(device_inbox_contract, is_healthy_when_open) { EXPECT_TRUE(inbox_->healthy()); }

namespace {

// Entry "r<offset>" read from `log` at `offset`, its timestamp 1000 + offset + `epoch`.
inbox_entry log_entry(const std::string& log, std::int64_t offset, std::int64_t epoch = 0) {
    return inbox_entry{"r" + std::to_string(offset), 0,
                       log_position{log, offset, 1000 + offset + epoch}};
}

std::vector<inbox_entry> log_entries(const std::string& log, std::int64_t first, std::int64_t end,
                                     std::int64_t epoch = 0) {
    std::vector<inbox_entry> batch;
    for (std::int64_t o = first; o < end; ++o) {
        batch.push_back(log_entry(log, o, epoch));
    }
    return batch;
}

}  // namespace

TEST_P(device_inbox_contract, an_entry_read_again_from_its_log_is_stored_once) {
    auto first = append("c1", log_entries("t/0", 0, 4));
    ASSERT_TRUE(first) << first.error().message();
    EXPECT_EQ(first->packet_ids, (ids{1, 2, 3, 4}));
    EXPECT_EQ(first->repeats, 0u);
    // The batch read again from offset 2, with two entries more: only those are new.
    auto again = append("c1", log_entries("t/0", 2, 6));
    ASSERT_TRUE(again) << again.error().message();
    EXPECT_EQ(again->packet_ids, (ids{0, 0, 5, 6}));
    EXPECT_EQ(again->repeats, 2u);
    EXPECT_EQ(again->trimmed, 0u);
    auto pending = read("c1");
    ASSERT_TRUE(pending);
    std::vector<std::string> records;
    for (const auto& m : *pending) {
        records.push_back(m.record);
    }
    EXPECT_EQ(records, (std::vector<std::string>{"r0", "r1", "r2", "r3", "r4", "r5"}));
    // A batch of repeats only changes nothing.
    auto repeats = append("c1", log_entries("t/0", 0, 6));
    ASSERT_TRUE(repeats);
    EXPECT_EQ(repeats->repeats, 6u);
    EXPECT_EQ(pending_ids("c1"), (ids{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(append_n("c1", 1), (ids{7})) << "a repeat takes no packet id";
}

TEST_P(device_inbox_contract, log_positions_are_per_client_and_per_log) {
    EXPECT_EQ(append("a", log_entries("t/0", 0, 3))->packet_ids, (ids{1, 2, 3}));
    // The same offsets of another partition, and the same position for another client.
    EXPECT_EQ(append("a", log_entries("t/1", 0, 2))->packet_ids, (ids{4, 5}));
    EXPECT_EQ(append("b", log_entries("t/0", 0, 3))->packet_ids, (ids{1, 2, 3}));
    EXPECT_EQ(append("a", log_entries("t/0", 2, 4))->packet_ids, (ids{0, 6}));
    EXPECT_EQ(append("a", log_entries("t/1", 1, 3))->packet_ids, (ids{0, 7}));
}

TEST_P(device_inbox_contract, entries_not_from_the_log_are_never_repeats) {
    EXPECT_EQ(append_n("c1", 2), (ids{1, 2}));
    EXPECT_EQ(append_n("c1", 2), (ids{3, 4}));
    EXPECT_EQ(pending_ids("c1").size(), 4u);
}

TEST_P(device_inbox_contract, a_log_recreated_under_its_name_is_stored_from_offset_zero) {
    EXPECT_EQ(append("c1", log_entries("t/0", 0, 5))->packet_ids, (ids{1, 2, 3, 4, 5}));
    // Offsets start again, with later timestamps: new entries, not repeats.
    auto recreated = append("c1", log_entries("t/0", 0, 2, /*epoch=*/60000));
    ASSERT_TRUE(recreated) << recreated.error().message();
    EXPECT_EQ(recreated->packet_ids, (ids{6, 7}));
    // And the recreated log's own repeats are recognised.
    EXPECT_EQ(append("c1", log_entries("t/0", 1, 3, 60000))->packet_ids, (ids{0, 8}));
}

TEST_P(device_inbox_contract, clear_forgets_the_log_positions) {
    EXPECT_EQ(append("c1", log_entries("t/0", 0, 3))->packet_ids, (ids{1, 2, 3}));
    ASSERT_TRUE(clear("c1"));
    EXPECT_EQ(append("c1", log_entries("t/0", 0, 3))->packet_ids, (ids{1, 2, 3}));
    EXPECT_EQ(pending_ids("c1"), (ids{1, 2, 3}));
}

// Model: a consumer reads a log from its last commit, appends what it read and commits only
// now and then (a failed write elsewhere in its batch, or a crash, makes it read again from the
// commit). However the tries overlap, the inbox holds every entry read once, in log order.
TEST_P(device_inbox_contract, retried_batches_leave_each_log_entry_once_in_order) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 rng(seed);
        const std::string client = "model" + std::to_string(seed);
        constexpr std::int64_t total = 60;
        std::int64_t committed = 0;
        std::int64_t read_to = 0;
        while (read_to < total) {
            const std::int64_t end = std::min<std::int64_t>(
                total, committed + 1 + static_cast<std::int64_t>(rng() % 12));
            auto r = append(client, log_entries("t/3", committed, end));
            ASSERT_TRUE(r) << r.error().message();
            read_to = std::max(read_to, end);
            if (rng() % 3 == 0) {
                committed = end;
            }
        }
        auto pending = read(client);
        ASSERT_TRUE(pending) << pending.error().message();
        ASSERT_EQ(pending->size(), static_cast<std::size_t>(total));
        for (std::int64_t o = 0; o < total; ++o) {
            EXPECT_EQ((*pending)[static_cast<std::size_t>(o)].record, "r" + std::to_string(o));
            EXPECT_EQ((*pending)[static_cast<std::size_t>(o)].packet_id, o + 1);
        }
    }
}

}  // namespace starling::testing
