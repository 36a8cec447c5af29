// auth::pattern (RE2): whole-string matching, refusal of what RE2 cannot do, and linear time on
// the longest strings a client can send (a 64 KiB topic, client id or username) against
// patterns that make backtracking engines recurse or explode.

#include "auth/pattern.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace starling::auth {
namespace {

using namespace std::chrono_literals;

// The longest MQTT string: a topic, client id or username is a 2-byte length plus bytes.
constexpr std::size_t max_mqtt_string = 65535;

// Fails the test when `body` takes more than a generous bound (RE2 needs about a millisecond
// for 64 KiB; a backtracking engine takes seconds or crashes on these inputs).
template <class Body>
void within(std::chrono::milliseconds bound, Body body) {
    const auto start = std::chrono::steady_clock::now();
    body();
    EXPECT_LT(std::chrono::steady_clock::now() - start, bound);
}

TEST(pattern, matches_the_whole_string) {
    auto p = pattern::compile("sensors/[^/]+/temp");
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->valid());
    EXPECT_EQ(p->source(), "sensors/[^/]+/temp");
    EXPECT_TRUE(p->full_match("sensors/a/temp"));
    EXPECT_FALSE(p->full_match("sensors/a/temp/x"));
    EXPECT_FALSE(p->full_match("x/sensors/a/temp"));
    EXPECT_FALSE(p->full_match(""));
    // Alternation binds loosest, and the whole string must still match either side.
    auto alt = pattern::compile("a|ab");
    ASSERT_TRUE(alt);
    EXPECT_TRUE(alt->full_match("ab"));
    EXPECT_FALSE(alt->full_match("abc"));
}

TEST(pattern, supports_what_tbmq_rules_use) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {".*", "any/topic/at/all"},
        {"devices/\\d+/telemetry", "devices/42/telemetry"},
        {"gw-[0-9]+", "gw-17"},
        {"(a|b)+c?", "abab"},
        {"x{3}", "xxx"},
        {"x{2,4}y", "xxxy"},
        {"(?i)Sensor/.*", "sensor/1"},
        {"\\$share/[^/]+/cmd/#", "$share/g/cmd/#"},
        {"home/\\+/temp", "home/+/temp"},
        {"caf\u00e9/.", "caf\u00e9/\u00fc"},  // UTF-8: one character, two bytes
    };
    for (const auto& [source, text] : cases) {
        std::string why;
        auto p = pattern::compile(source, &why);
        ASSERT_TRUE(p) << source << ": " << why;
        EXPECT_TRUE(p->full_match(text)) << source << " vs " << text;
    }
}

TEST(pattern, refuses_invalid_and_unsupported_syntax_with_a_reason) {
    for (const std::string source :
         {"(", "a)", "[a-", "*a", "a{2,1}", "(?=a)b", "(?!a)b", "(?<=a)b", "(a)\\1"}) {
        std::string why;
        EXPECT_FALSE(pattern::compile(source, &why)) << source;
        EXPECT_FALSE(why.empty()) << source;
        EXPECT_FALSE(pattern::check(source).empty()) << source;
    }
    EXPECT_TRUE(pattern::check("a/.*").empty());
    // The literal constructor never throws: an invalid pattern matches nothing.
    const pattern broken("(");
    EXPECT_FALSE(broken.valid());
    EXPECT_FALSE(broken.full_match("("));
    EXPECT_FALSE(broken.full_match(""));
}

TEST(pattern, a_pattern_beyond_the_memory_bound_is_refused) {
    // 100 letters of any script: ~120 000 instructions, which RE2's default 8 MiB would accept
    // and pattern::max_memory does not.
    std::string why;
    EXPECT_FALSE(pattern::compile("\\pL{100}", &why));
    EXPECT_NE(why.find("too large"), std::string::npos) << why;
    EXPECT_TRUE(pattern::compile("\\pL{10}"));
    // RE2 also bounds counted repetition (1000) and its nesting.
    EXPECT_FALSE(pattern::compile("a{1001}"));
    EXPECT_FALSE(pattern::compile("((a{100}){100}){100}"));
}

TEST(pattern, longest_strings_against_adversarial_patterns_are_linear) {
    const std::string as(max_mqtt_string, 'a');
    const std::string topic = "sensors/" + std::string(max_mqtt_string - 8, 'x');
    struct probe {
        std::string source;
        std::string text;
        bool matches;
    };
    const std::vector<probe> probes{
        // std::regex recursed once per character here and crashed the broker (SIGSEGV).
        {"sensors/.*", topic, true},
        {"sensors/.*", topic + "\n", false},
        {"sensors/(.)*", topic, true},
        {"sensors/(x|y)*", topic, true},
        // Exponential for backtracking engines on a string of a's with no b or c.
        {"(a*)*b", as, false},
        {"(a|a)*c", as, false},
        {"(a|aa)*$", as, true},
        {"(a+)+b", as, false},
        {"(.*a){20}", as, true},
        {"(a*)*b", as + "b", true},
        {"(a|a)*c", as + "c", true},
    };
    for (const auto& p : probes) {
        auto compiled = pattern::compile(p.source);
        ASSERT_TRUE(compiled) << p.source;
        within(2s, [&] {
            EXPECT_EQ(compiled->full_match(p.text), p.matches)
                << p.source << " on " << p.text.size() << " bytes";
        });
    }
}

TEST(pattern, copies_share_one_program_and_match_from_many_threads) {
    const auto original = pattern::compile("(a|b)*c");
    ASSERT_TRUE(original);
    const std::string hit = std::string(10000, 'a') + "c";
    const std::string miss(10000, 'b');
    std::vector<std::thread> threads;
    std::vector<int> wrong(4, 0);
    for (std::size_t t = 0; t < wrong.size(); ++t) {
        threads.emplace_back([copy = *original, &hit, &miss, &wrong, t] {
            for (int i = 0; i < 200; ++i) {
                if (!copy.full_match(hit) || copy.full_match(miss)) {
                    ++wrong[t];
                }
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(wrong, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace starling::auth
