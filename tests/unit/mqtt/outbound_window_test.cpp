#include "mqtt/outbound_window.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

namespace starling::mqtt {
namespace {

using window = outbound_window<std::string>;
using action = window::pubrec_action;
using stage = window::stage;

const auto no_reserved = [](std::uint16_t) { return false; };

TEST(outbound_window, a_qos1_publish_completes_at_its_puback) {
    window w;
    w.start(1, qos::at_least_once, "m");
    EXPECT_FALSE(w.on_pubcomp(1));
    EXPECT_EQ(w.on_pubrec(1, reason_code::success), action::ignore);
    ASSERT_TRUE(w.on_puback(1));
    EXPECT_EQ(w.finish(1), "m");
    EXPECT_FALSE(w.on_puback(1)) << "a repeated PUBACK finds nothing";
    EXPECT_TRUE(w.empty());
}

TEST(outbound_window, a_qos2_publish_goes_through_pubrec_and_pubcomp) {
    window w;
    w.start(2, qos::exactly_once, "m");
    EXPECT_FALSE(w.on_puback(2));
    EXPECT_FALSE(w.on_pubcomp(2)) << "no PUBCOMP before the PUBREL went out";
    EXPECT_EQ(w.on_pubrec(2, reason_code::success), action::send_pubrel);
    EXPECT_EQ(w.at(2), stage::awaiting_pubcomp);
    EXPECT_EQ(w.on_pubrec(2, reason_code::success), action::resend_pubrel)
        << "a repeated PUBREC gets the PUBREL again";
    ASSERT_TRUE(w.on_pubcomp(2));
    EXPECT_EQ(w.finish(2), "m");
}

TEST(outbound_window, a_refusing_pubrec_ends_the_exchange_without_pubrel) {
    window w;
    w.start(3, qos::exactly_once, "m");
    EXPECT_EQ(w.on_pubrec(3, reason_code::quota_exceeded), action::finish);
    EXPECT_EQ(w.at(3), stage::awaiting_pubrec) << "the caller finishes it";
    EXPECT_EQ(w.finish(3), "m");
}

TEST(outbound_window, a_pubrec_for_an_unknown_id_is_answered_not_found) {
    window w;
    EXPECT_EQ(w.on_pubrec(9, reason_code::success), action::pubrel_not_found);
}

TEST(outbound_window, an_interrupted_qos2_exchange_resumes_at_pubrel) {
    window w;
    w.resume_at_pubrel(4, "stored");
    EXPECT_FALSE(w.on_puback(4));
    ASSERT_TRUE(w.on_pubcomp(4));
    EXPECT_EQ(w.finish(4), "stored");
}

TEST(outbound_window, ids_skip_those_in_flight_and_reserved_and_wrap) {
    window w;
    w.start(1, qos::at_least_once, "");
    w.start(2, qos::at_least_once, "");
    EXPECT_EQ(w.next_id(0, no_reserved), 3);
    EXPECT_EQ(w.next_id(0, [](std::uint16_t id) { return id == 3; }), 4);
    EXPECT_EQ(w.next_id(65535, no_reserved), 3) << "after 65535 comes 1 (0 is never an id)";
    EXPECT_EQ(w.next_id(65534, no_reserved), 65535);
    EXPECT_EQ(w.next_id(7, [](std::uint16_t) { return true; }), 0) << "every id taken";
}

TEST(outbound_window, room_is_counted_against_the_maximum) {
    window w;
    EXPECT_TRUE(w.has_room(2));
    w.start(1, qos::at_least_once, "");
    w.start(2, qos::exactly_once, "");
    EXPECT_FALSE(w.has_room(2));
    ASSERT_EQ(w.on_pubrec(2, reason_code::success), action::send_pubrel);
    EXPECT_FALSE(w.has_room(2)) << "a QoS 2 PUBLISH counts until its PUBCOMP (section 4.9)";
    ASSERT_TRUE(w.on_pubcomp(2));
    w.finish(2);
    EXPECT_TRUE(w.has_room(2));
}

// Random, seeded sequences of sends (ids from next_id under a random reserved set, QoS 1 or 2,
// sometimes resumed at PUBREL) and acknowledgements of random ids, each with the caller's
// reaction (finish on completion), checked against a map of id → stage.
TEST(outbound_window, agrees_with_a_reference_model_on_random_sequences) {
    for (std::uint32_t seed = 1; seed <= 200; ++seed) {
        std::mt19937 rng(seed);
        window w;
        std::map<std::uint16_t, stage> model;
        std::uint16_t last = 0;
        const std::size_t maximum = 1 + rng() % 6;
        for (int step = 0; step < 500; ++step) {
            SCOPED_TRACE("seed " + std::to_string(seed) + " step " + std::to_string(step));
            const std::uint16_t id = static_cast<std::uint16_t>(1 + rng() % 10);
            switch (rng() % 6) {
                case 0: {  // send, if the window has room
                    ASSERT_EQ(w.has_room(maximum), model.size() < maximum);
                    if (!w.has_room(maximum)) {
                        break;
                    }
                    std::set<std::uint16_t> reserved;
                    for (int k = 0; k < 3; ++k) {
                        reserved.insert(static_cast<std::uint16_t>(1 + rng() % 12));
                    }
                    const std::uint16_t next =
                        w.next_id(last, [&](std::uint16_t c) { return reserved.contains(c); });
                    ASSERT_NE(next, 0);
                    ASSERT_FALSE(model.contains(next)) << "an id in flight was handed out";
                    ASSERT_FALSE(reserved.contains(next)) << "a reserved id was handed out";
                    last = next;
                    const int kind = static_cast<int>(rng() % 3);
                    if (kind == 2) {
                        w.resume_at_pubrel(next, std::to_string(next));
                        model[next] = stage::awaiting_pubcomp;
                    } else {
                        const qos level = kind == 0 ? qos::at_least_once : qos::exactly_once;
                        w.start(next, level, std::to_string(next));
                        model[next] = kind == 0 ? stage::awaiting_puback : stage::awaiting_pubrec;
                    }
                    break;
                }
                case 1: {  // PUBACK
                    const bool expected = model.contains(id) && model[id] == stage::awaiting_puback;
                    ASSERT_EQ(w.on_puback(id), expected);
                    if (expected) {
                        ASSERT_EQ(w.finish(id), std::to_string(id));
                        model.erase(id);
                    }
                    break;
                }
                case 2:
                case 3: {  // PUBREC, accepting or refusing
                    const reason_code code =
                        rng() % 4 == 0 ? reason_code::unspecified_error : reason_code::success;
                    action expected = action::pubrel_not_found;
                    if (model.contains(id)) {
                        switch (model[id]) {
                            case stage::awaiting_puback:
                                expected = action::ignore;
                                break;
                            case stage::awaiting_pubcomp:
                                expected = action::resend_pubrel;
                                break;
                            case stage::awaiting_pubrec:
                                expected = is_error(code) ? action::finish : action::send_pubrel;
                                break;
                        }
                    }
                    ASSERT_EQ(w.on_pubrec(id, code), expected);
                    if (expected == action::send_pubrel) {
                        model[id] = stage::awaiting_pubcomp;
                    } else if (expected == action::finish) {
                        ASSERT_EQ(w.finish(id), std::to_string(id));
                        model.erase(id);
                    }
                    break;
                }
                case 4: {  // PUBCOMP
                    const bool expected =
                        model.contains(id) && model[id] == stage::awaiting_pubcomp;
                    ASSERT_EQ(w.on_pubcomp(id), expected);
                    if (expected) {
                        ASSERT_EQ(w.finish(id), std::to_string(id));
                        model.erase(id);
                    }
                    break;
                }
                case 5:  // the connection ends and the session with it, now and then
                    if (rng() % 20 == 0) {
                        w.clear();
                        model.clear();
                    }
                    break;
                default:
                    break;
            }
            ASSERT_EQ(w.size(), model.size());
            for (const auto& [i, st] : model) {
                ASSERT_EQ(w.at(i), st);
            }
        }
    }
}

}  // namespace
}  // namespace starling::mqtt
