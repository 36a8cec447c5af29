#include "mqtt/inbound_window.h"

#include "inbound_window_model.h"
#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace starling::mqtt {
namespace {

using arrival = inbound_window::arrival;

// Every answer ready now, as (packet id, reason code).
std::vector<std::pair<std::uint16_t, reason_code>> drain(inbound_window& w) {
    std::vector<std::pair<std::uint16_t, reason_code>> out;
    while (auto a = w.next_answer()) {
        out.emplace_back(a->packet_id, a->code);
    }
    return out;
}

using answers = std::vector<std::pair<std::uint16_t, reason_code>>;

TEST(inbound_window, answers_leave_in_arrival_order_when_decided_out_of_order) {
    inbound_window w;
    ASSERT_EQ(w.on_publish(1, qos::at_least_once, 0), arrival::accepted);
    ASSERT_EQ(w.on_publish(2, qos::exactly_once, 0), arrival::accepted);
    ASSERT_EQ(w.on_publish(3, qos::at_least_once, 0), arrival::accepted);
    EXPECT_TRUE(w.decide(3, reason_code::success));
    EXPECT_TRUE(w.decide(2, reason_code::success));
    EXPECT_EQ(drain(w), answers{}) << "1 is undecided: nothing may overtake it";
    EXPECT_TRUE(w.decide(1, reason_code::quota_exceeded));
    EXPECT_EQ(drain(w), (answers{{1, reason_code::quota_exceeded},
                                 {2, reason_code::success},
                                 {3, reason_code::success}}));
    EXPECT_EQ(w.unsent(), 0U);
}

TEST(inbound_window, a_qos2_resend_after_pubrec_is_answered_again_and_not_published) {
    inbound_window w;
    ASSERT_EQ(w.on_publish(7, qos::exactly_once, 0), arrival::accepted);
    ASSERT_TRUE(w.decide(7, reason_code::success));
    auto a = w.next_answer();
    ASSERT_TRUE(a);
    EXPECT_TRUE(a->awaiting_release_changed);
    EXPECT_TRUE(w.awaits_release(7));

    EXPECT_EQ(w.on_publish(7, qos::exactly_once, 0), arrival::resent);
    EXPECT_FALSE(w.decide(7, reason_code::success)) << "a resend is never written";
    a = w.next_answer();
    ASSERT_TRUE(a);
    EXPECT_EQ(a->code, reason_code::success);
    EXPECT_FALSE(a->awaiting_release_changed);

    EXPECT_EQ(w.on_pubrel(7), reason_code::success);
    EXPECT_EQ(w.on_pubrel(7), reason_code::packet_identifier_not_found);
    EXPECT_EQ(w.on_publish(7, qos::exactly_once, 0), arrival::accepted)
        << "after PUBCOMP the id is a new message";
}

TEST(inbound_window, a_qos2_resend_while_the_first_is_written_gets_the_same_pubrec_after_it) {
    // A 3.1.1 client may resend a PUBLISH on a timeout while the log is still writing the
    // first: the message must not be published twice (MQTT-4.3.3-10).
    inbound_window w;
    ASSERT_EQ(w.on_publish(5, qos::exactly_once, 0), arrival::accepted);
    ASSERT_EQ(w.on_publish(5, qos::exactly_once, 0), arrival::resent);
    EXPECT_EQ(drain(w), answers{});
    ASSERT_TRUE(w.decide(5, reason_code::success));
    EXPECT_EQ(drain(w), (answers{{5, reason_code::success}, {5, reason_code::success}}));
    EXPECT_EQ(w.outstanding(), 1U) << "one message awaiting its PUBREL";
}

TEST(inbound_window, a_refused_qos2_message_is_refused_for_its_resend_too_and_frees_the_window) {
    inbound_window w;
    ASSERT_EQ(w.on_publish(5, qos::exactly_once, 2), arrival::accepted);
    ASSERT_EQ(w.on_publish(5, qos::exactly_once, 2), arrival::resent);
    ASSERT_TRUE(w.decide(5, reason_code::quota_exceeded));
    EXPECT_EQ(drain(w),
              (answers{{5, reason_code::quota_exceeded}, {5, reason_code::quota_exceeded}}));
    EXPECT_FALSE(w.awaits_release(5));
    EXPECT_EQ(w.outstanding(), 0U);
}

TEST(inbound_window, a_qos1_resend_is_a_message_of_its_own) {
    inbound_window w;
    ASSERT_EQ(w.on_publish(9, qos::at_least_once, 0), arrival::accepted);
    ASSERT_EQ(w.on_publish(9, qos::at_least_once, 0), arrival::accepted);
    EXPECT_TRUE(w.decide(9, reason_code::success));
    EXPECT_TRUE(w.decide(9, reason_code::success));
    EXPECT_FALSE(w.decide(9, reason_code::success));
    EXPECT_EQ(drain(w), (answers{{9, reason_code::success}, {9, reason_code::success}}));
}

TEST(inbound_window, receive_maximum_counts_a_qos2_message_until_its_pubrel) {
    inbound_window w;
    ASSERT_EQ(w.on_publish(1, qos::exactly_once, 2), arrival::accepted);
    ASSERT_EQ(w.on_publish(2, qos::at_least_once, 2), arrival::accepted);
    EXPECT_EQ(w.on_publish(3, qos::at_least_once, 2), arrival::over_limit);
    EXPECT_EQ(w.unsent(), 2U) << "a refused arrival records nothing";
    ASSERT_TRUE(w.decide(1, reason_code::success));
    ASSERT_TRUE(w.decide(2, reason_code::success));
    EXPECT_EQ(drain(w).size(), 2U);
    EXPECT_EQ(w.outstanding(), 1U) << "PUBREC sent, PUBCOMP not yet";
    ASSERT_EQ(w.on_publish(3, qos::at_least_once, 2), arrival::accepted);
    EXPECT_EQ(w.on_publish(4, qos::at_least_once, 2), arrival::over_limit);
    EXPECT_EQ(w.on_pubrel(1), reason_code::success);
    EXPECT_EQ(w.on_publish(4, qos::at_least_once, 2), arrival::accepted);
}

TEST(inbound_window, resends_count_against_receive_maximum_until_answered) {
    // A client that floods resends of one id cannot grow the queue past its limit.
    inbound_window w;
    ASSERT_EQ(w.on_publish(1, qos::exactly_once, 3), arrival::accepted);
    ASSERT_EQ(w.on_publish(1, qos::exactly_once, 3), arrival::resent);
    ASSERT_EQ(w.on_publish(1, qos::exactly_once, 3), arrival::resent);
    EXPECT_EQ(w.on_publish(1, qos::exactly_once, 3), arrival::over_limit);
}

TEST(inbound_window, an_ended_connection_drops_its_answers_and_keeps_the_sessions_ids) {
    inbound_window w;
    ASSERT_EQ(w.on_publish(1, qos::exactly_once, 2), arrival::accepted);
    ASSERT_TRUE(w.decide(1, reason_code::success));
    ASSERT_EQ(drain(w).size(), 1U);
    ASSERT_EQ(w.on_publish(2, qos::at_least_once, 2), arrival::accepted);
    w.connection_ended();
    EXPECT_EQ(w.unsent(), 0U);
    EXPECT_FALSE(w.decide(2, reason_code::success)) << "the verdict came after the connection";
    EXPECT_EQ(w.outstanding(), 0U) << "the old connection's PUBLISHes count no more";
    EXPECT_EQ(w.awaiting_release(), std::vector<std::uint16_t>{1});
    // The new connection: a resend of 1 is answered again, its PUBREL completes it.
    ASSERT_EQ(w.on_publish(1, qos::exactly_once, 2), arrival::resent);
    EXPECT_EQ(drain(w), (answers{{1, reason_code::success}}));
    EXPECT_EQ(w.on_pubrel(1), reason_code::success);
    EXPECT_EQ(w.outstanding(), 0U);
}

TEST(inbound_window, restored_ids_are_answered_as_resends) {
    inbound_window w;
    const std::vector<std::uint16_t> stored{40, 3, 40};
    w.restore(stored);
    EXPECT_EQ(w.awaiting_release(), (std::vector<std::uint16_t>{3, 40}));
    EXPECT_EQ(w.on_publish(40, qos::exactly_once, 0), arrival::resent);
    EXPECT_EQ(w.on_publish(41, qos::exactly_once, 0), arrival::accepted);
    EXPECT_EQ(w.on_pubrel(3), reason_code::success);
    w.clear();
    EXPECT_TRUE(w.awaiting_release().empty());
    EXPECT_EQ(w.unsent(), 0U);
}

// Random, seeded operation sequences checked against the reference model
// (inbound_window_model.h): arrivals of QoS 1 and 2 PUBLISHes over six packet ids, with and
// without a Receive Maximum, verdicts in any order, sends, PUBRELs, ended connections, restarts
// from the stored ids, ended sessions.
TEST(inbound_window, agrees_with_the_reference_model_on_random_sequences) {
    for (std::uint32_t seed = 1; seed <= 300; ++seed) {
        std::mt19937 rng(seed);
        inbound_window w;
        testing::inbound_window_model m;
        for (int step = 0; step < 400; ++step) {
            const auto op = static_cast<std::uint8_t>(rng());
            const auto arg = static_cast<std::uint8_t>(rng());
            const std::string error = testing::run_inbound_window_step(w, m, op, arg);
            ASSERT_TRUE(error.empty()) << "seed " << seed << " step " << step << " (op "
                                       << int(op % 8) << ", arg " << int(arg) << "): " << error;
        }
    }
}

}  // namespace
}  // namespace starling::mqtt
