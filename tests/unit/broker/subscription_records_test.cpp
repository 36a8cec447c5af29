// client.subscriptions as base + entry records (src/broker/subscription_records.h) and the
// actor's journal of them (subscription_journal.h).
//
// The model test runs seeded random sequences — subscribe, change options, unsubscribe, clear,
// a takeover by another writer, late writes of the previous writer, log compaction, a reader
// starting from a snapshot — against a reference model (the set each client should have) and
// checks after every step that
//   - a reader folding the records in order holds exactly the model's set, and its mirror
//     never sees a half-written generation;
//   - a reader loading the compacted log (order lost, tombstones gone) holds the same sets;
//   - collecting the garbage the fold reports leaves nothing in the compacted log but the live
//     sets' records;
//   - a change of one subscription writes one record.
// STARLING_SUBSCRIPTION_RECORDS_RUNS lengthens it; a failure names its seed and step.

#include "broker/subscription_records.h"

#include "broker/subscription_journal.h"

#include "proto/starling.pb.h"
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace starling::broker {
namespace {

using subscription_records::fold;
using subscription_set = std::map<std::string, stored_subscription>;

stored_subscription make_sub(std::string share, std::string filter, int qos,
                             std::optional<std::uint32_t> id) {
    stored_subscription sub;
    sub.filter = std::move(filter);
    sub.share_group = std::move(share);
    sub.options.qos = static_cast<mqtt::qos>(qos);
    sub.subscription_id = id;
    return sub;
}

// What a reader folds out of a client's set: entry key → (qos, subscription id).
using observed_set = std::map<std::string, std::pair<std::uint32_t, std::optional<std::uint32_t>>>;

observed_set observed(const std::optional<std::string>& serialized) {
    observed_set out;
    if (!serialized) {
        return out;
    }
    proto::client_subscriptions set;
    EXPECT_TRUE(set.ParseFromString(*serialized));
    for (const auto& ts : set.subscriptions()) {
        out[subscription_records::entry_key(ts.share_name(), ts.topic_filter())] = {
            ts.options().qos(), ts.has_subscription_id()
                                    ? std::optional<std::uint32_t>(ts.subscription_id())
                                    : std::nullopt};
    }
    return out;
}

observed_set expected(const subscription_set& model) {
    observed_set out;
    for (const auto& [key, sub] : model) {
        out[key] = {static_cast<std::uint32_t>(sub.options.qos), sub.subscription_id};
    }
    return out;
}

struct logged {
    std::string key;
    std::string value;
    std::string writer;
};

// Keeps the last record per key, in log order, without tombstones: what compaction may leave.
std::vector<logged> compacted(const std::vector<logged>& log) {
    std::unordered_map<std::string, std::size_t> last;
    for (std::size_t i = 0; i < log.size(); ++i) {
        last[log[i].key] = i;
    }
    std::vector<logged> out;
    for (std::size_t i = 0; i < log.size(); ++i) {
        if (last[log[i].key] == i && !log[i].value.empty()) {
            out.push_back(log[i]);
        }
    }
    return out;
}

struct model_run {
    std::mt19937 rng;
    std::vector<std::string> clients{"c1", "c2", "c3"};
    std::vector<std::string> writers{"node-a", "node-b"};
    std::map<std::string, subscription_set> model;  // what each client's set is
    std::map<std::string, std::string> owner;       // client → writer
    std::map<std::pair<std::string, std::string>, subscription_journal> journals;
    // What the previous owner still holds in memory after a takeover: its id, set and
    // journal (its late writes must not count).
    struct stale_owner {
        std::string writer;
        subscription_set set;
        subscription_journal journal;
    };
    std::map<std::string, stale_owner> previous;
    int clean_checks = 0;  // snapshots checked to hold nothing but live records
    std::vector<logged> log;
    fold reader;                  // follows the log in order
    std::size_t reader_next = 0;  // next log index the reader applies
    std::vector<std::string> garbage;

    explicit model_run(unsigned seed) : rng(seed) {
        for (const auto& c : clients) {
            owner[c] = writers[0];
        }
    }

    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }

    void write(const std::string& /*client*/, const std::string& writer,
               std::vector<subscription_records::record> records) {
        for (auto& [key, value] : records) {
            log.push_back({std::move(key), std::move(value), writer});
        }
    }

    // The reader applies what is new; its mirror is updated on `changed` only, and then must
    // equal the model unless the writer is the stale one. Dead and superseded records are
    // collected as the owning node's follower does.
    void follow(const std::string& where) {
        for (; reader_next < log.size(); ++reader_next) {
            const auto& rec = log[reader_next];
            auto r = reader.apply(rec.key, rec.value, rec.writer);
            ASSERT_NE(r.what, fold::outcome::unreadable) << where;
            if (r.what == fold::outcome::dead) {
                garbage.push_back(rec.key);
            }
            for (auto& k : r.superseded) {
                garbage.push_back(std::move(k));
            }
        }
        for (const auto& c : clients) {
            EXPECT_EQ(observed(reader.serialized_set(c)), expected(model[c]))
                << where << " client " << c;
        }
    }

    void collect_garbage() {
        for (auto& key : garbage) {
            log.push_back({std::move(key), std::string(), "gc"});
        }
        garbage.clear();
    }

    void check_snapshot(const std::string& where) {
        std::unordered_map<std::string, std::string> state;
        std::unordered_map<std::string, std::string> writers_of;
        for (const auto& rec : compacted(log)) {
            state[rec.key] = rec.value;
            writers_of[rec.key] = rec.writer;
        }
        fold loaded;
        const auto dead = loaded.load(state, writers_of);
        for (const auto& c : clients) {
            EXPECT_EQ(observed(loaded.serialized_set(c)), expected(model[c]))
                << where << " (snapshot) client " << c;
        }
        // After collection, nothing but live records: one base per client with subscriptions
        // and one record per subscription.
        std::size_t live = 0;
        for (const auto& c : clients) {
            live += model[c].empty() ? 0 : model[c].size() + 1;
        }
        if (garbage.empty()) {
            // Everything the in-order reader reported is collected: the snapshot holds no dead
            // record, and only the live sets' records.
            EXPECT_TRUE(dead.empty()) << where << ": " << dead.size() << " dead records";
            EXPECT_EQ(state.size(), live) << where;
            ++clean_checks;
        }
    }

    void step(int n) {
        const std::string where = "step " + std::to_string(n);
        const std::string& client = clients[pick(static_cast<int>(clients.size()))];
        const std::string& writer = owner[client];
        auto& set = model[client];
        auto& journal = journals[{client, writer}];
        static const std::vector<std::string> filters{"a", "a/b", "a/+", "#", "x/y/z", "s/1"};
        const int op = pick(12);
        if (op < 5) {  // SUBSCRIBE one filter (new or changed options)
            const bool shared = pick(4) == 0;
            auto sub =
                make_sub(shared ? "g" : "", filters[pick(6)], pick(3),
                         pick(3) == 0 ? std::optional<std::uint32_t>(pick(5) + 1) : std::nullopt);
            const auto key = subscription_records::entry_key(sub.share_group, sub.filter);
            const bool fresh_generation = journal.generation() == 0;
            const bool same = set.contains(key) && set[key].options == sub.options &&
                              set[key].subscription_id == sub.subscription_id;
            set.insert_or_assign(key, sub);
            auto records = journal.records_for(client, set);
            if (!fresh_generation) {
                // One change, one record: never the whole set.
                EXPECT_EQ(records.size(), same ? 0U : 1U) << where;
            } else {
                EXPECT_EQ(records.size(), set.size() + 1) << where;
            }
            write(client, writer, std::move(records));
        } else if (op < 7 && !set.empty()) {  // UNSUBSCRIBE one
            auto it = set.begin();
            std::advance(it, pick(static_cast<int>(set.size())));
            set.erase(it);
            write(client, writer, journal.records_for(client, set));
        } else if (op == 7) {  // the session ends / a clean start: the whole set goes
            set.clear();
            write(client, writer, journal.records_for(client, set));
        } else if (op == 8) {  // the session moves to the other writer, which adopts the set
            const std::string next = writers[writers[0] == writer ? 1 : 0];
            if (!set.empty() && journal.generation() != 0) {
                previous[client] = {writer, set, journal};
            } else {
                previous.erase(client);
            }
            journal.restart();
            owner[client] = next;
            auto& taken = journals[{client, next}];
            taken.restart();
            if (!set.empty()) {
                write(client, next, taken.records_for(client, set));
            }
        } else if (op == 9 && previous.contains(client)) {
            // A late write of the old owner, with the generation the new owner replaced.
            auto& stale = previous[client];
            if (stale.writer != writer) {
                stale.set.insert_or_assign(subscription_records::entry_key("", "late"),
                                           make_sub("", "late", pick(3), std::nullopt));
                write(client, stale.writer, stale.journal.records_for(client, stale.set));
            }
        } else if (op == 10) {
            collect_garbage();
        } else {  // compaction, and a reader that starts over from the compacted log
            follow(where);
            log = compacted(log);
            std::unordered_map<std::string, std::string> state;
            std::unordered_map<std::string, std::string> writers_of;
            for (const auto& rec : log) {
                state[rec.key] = rec.value;
                writers_of[rec.key] = rec.writer;
            }
            reader = fold();
            for (auto& key : reader.load(state, writers_of)) {
                garbage.push_back(std::move(key));
            }
            reader_next = log.size();
        }
        follow(where);
        check_snapshot(where);
    }
};

int runs() {
    const char* v = std::getenv("STARLING_SUBSCRIPTION_RECORDS_RUNS");
    return v != nullptr ? std::atoi(v) : 60;
}

TEST(subscription_records, seeded_operation_sequences_match_the_model) {
    for (int seed = 1; seed <= runs(); ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        model_run run(static_cast<unsigned>(seed));
        for (int n = 0; n < 300; ++n) {
            run.step(n);
            if (::testing::Test::HasFailure()) {
                return;
            }
        }
        EXPECT_GT(run.clean_checks, 0);
    }
}

TEST(subscription_records, a_whole_set_parses_with_out_of_range_options_clamped) {
    proto::client_subscriptions set;
    auto* plain = set.add_subscriptions();
    plain->set_topic_filter("a/#");
    plain->mutable_options()->set_qos(1);
    plain->mutable_options()->set_no_local(true);
    plain->set_subscription_id(7);
    auto* shared = set.add_subscriptions();
    shared->set_topic_filter("b/+");
    shared->set_share_name("g");
    shared->mutable_options()->set_qos(9);
    shared->mutable_options()->set_retain_handling(5);
    shared->mutable_options()->set_retain_as_published(true);

    auto parsed = subscription_records::parse_set(set.SerializeAsString());
    ASSERT_TRUE(parsed);
    ASSERT_EQ(parsed->size(), 2U);
    EXPECT_EQ((*parsed)[0].filter, "a/#");
    EXPECT_EQ((*parsed)[0].share_group, "");
    EXPECT_EQ((*parsed)[0].options.qos, mqtt::qos::at_least_once);
    EXPECT_TRUE((*parsed)[0].options.no_local);
    EXPECT_EQ((*parsed)[0].subscription_id, std::optional<std::uint32_t>(7));
    EXPECT_EQ((*parsed)[1].share_group, "g");
    EXPECT_EQ((*parsed)[1].options.qos, mqtt::qos::exactly_once);
    EXPECT_EQ((*parsed)[1].options.retain_handling, mqtt::retain_handling::do_not_send);
    EXPECT_TRUE((*parsed)[1].options.retain_as_published);
    EXPECT_FALSE((*parsed)[1].subscription_id);

    EXPECT_TRUE(subscription_records::parse_set("")->empty());
    EXPECT_FALSE(subscription_records::parse_set("\xff\xff\xff"));
}

TEST(subscription_records, subscribing_one_filter_at_a_time_writes_linear_bytes) {
    // 1,000 SUBSCRIBEs of one filter each: 1,001 records in all, each small. As whole sets
    // this was ~500,000 entries.
    subscription_journal journal;
    subscription_set set;
    proto::client_subscriptions whole;  // what the previous format wrote each time
    std::size_t records = 0;
    std::size_t bytes = 0;
    std::size_t whole_set_bytes = 0;
    for (int i = 0; i < 1000; ++i) {
        auto sub = make_sub("", "sensors/" + std::to_string(i) + "/temperature", 1, std::nullopt);
        set.insert_or_assign(subscription_records::entry_key("", sub.filter), sub);
        auto* ts = whole.add_subscriptions();
        ts->set_topic_filter(sub.filter);
        ts->mutable_options()->set_qos(1);
        whole_set_bytes += std::string("device-1").size() + whole.ByteSizeLong();
        for (const auto& [key, value] : journal.records_for("device-1", set)) {
            ++records;
            bytes += key.size() + value.size();
            EXPECT_LT(key.size() + value.size(), 120U);
        }
    }
    EXPECT_EQ(records, 1001U);
    EXPECT_LT(bytes, 120U * 1001U);
    EXPECT_LT(bytes * 100, whole_set_bytes);
    std::cout << "1,000 SUBSCRIBEs of one filter: " << records << " records, " << bytes
              << " bytes (whole sets: 1,000 records, " << whole_set_bytes << " bytes)\n";
}

TEST(subscription_records, a_reader_never_mirrors_a_half_written_generation) {
    subscription_journal journal;
    subscription_set set;
    for (int i = 0; i < 5; ++i) {
        auto sub = make_sub("", "t/" + std::to_string(i), 1, std::nullopt);
        set.insert_or_assign(subscription_records::entry_key("", sub.filter), sub);
    }
    const auto records = journal.records_for("c", set);
    ASSERT_EQ(records.size(), 6U);
    fold reader;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto r = reader.apply(records[i].first, records[i].second, "node-a");
        EXPECT_EQ(r.what,
                  i + 1 < records.size() ? fold::outcome::incomplete : fold::outcome::changed)
            << "record " << i;
    }
    EXPECT_EQ(observed(reader.serialized_set("c")).size(), 5U);
}

TEST(subscription_records, a_whole_set_record_of_an_earlier_release_is_read_and_replaced) {
    proto::client_subscriptions legacy;
    for (const char* f : {"old/1", "old/2"}) {
        auto* ts = legacy.add_subscriptions();
        ts->set_topic_filter(f);
        ts->mutable_options()->set_qos(1);
    }
    fold reader;
    EXPECT_EQ(reader.apply("c", legacy.SerializeAsString()).what, fold::outcome::changed);
    EXPECT_EQ(observed(reader.serialized_set("c")).size(), 2U);
    EXPECT_EQ(reader.generation_of("c"), 0U);

    // The restored actor continues from generation 0: its first write is a new generation,
    // whole, and the old record's entries are not garbage to collect (they live in its value).
    subscription_journal journal;
    subscription_set set;
    for (const char* f : {"old/1", "old/2", "new/3"}) {
        set.insert_or_assign(subscription_records::entry_key("", f), make_sub("", f, 1, {}));
    }
    journal.adopt(0, set);
    const auto records = journal.records_for("c", set);
    ASSERT_EQ(records.size(), 4U);
    for (const auto& [key, value] : records) {
        const auto r = reader.apply(key, value);
        EXPECT_TRUE(r.superseded.empty());
    }
    EXPECT_EQ(observed(reader.serialized_set("c")).size(), 3U);
    EXPECT_NE(reader.generation_of("c"), 0U);
}

TEST(subscription_records, malformed_keys_and_values_are_unreadable_not_fatal) {
    fold reader;
    EXPECT_EQ(reader.apply(std::string("c\0zz", 4), "x").what, fold::outcome::unreadable);
    EXPECT_EQ(reader
                  .apply(std::string("c\0"
                                     "0123456789abcdefX",
                                     18),
                         "")
                  .what,
              fold::outcome::unreadable);
    EXPECT_EQ(reader.apply("c", "\xff\xff\xff").what, fold::outcome::unreadable);
    const auto key =
        subscription_records::entry_record_key("c", 7, subscription_records::entry_key("", "t"));
    EXPECT_EQ(reader.apply(subscription_records::entry_record_key("c", 7, "t"), "").what,
              fold::outcome::unreadable);  // an entry key without its share separator
    reader.apply("c", subscription_records::base_record(7, 1));
    EXPECT_EQ(reader.apply(key, "\xff\xff").what, fold::outcome::unreadable);
    auto parsed = subscription_records::parse_key(key);
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(parsed->client_id, "c");
    EXPECT_EQ(parsed->generation, 7U);
    EXPECT_EQ(parsed->entry_key, std::string_view("\0t", 2));
}

}  // namespace
}  // namespace starling::broker
