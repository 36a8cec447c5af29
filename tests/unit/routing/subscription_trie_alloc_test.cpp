// match() must not allocate on the common path (docs/architecture.md §7). This executable replaces
// the global operator new to count the calling thread's allocations while a flag is up.

#include "routing/subscription_trie.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <new>
#include <string>

namespace {
thread_local bool counting = false;
thread_local std::size_t allocations = 0;
}  // namespace

// GCC flags free() of what it inlined as `operator new` even though this file replaces both: a
// known false positive of -Wmismatched-new-delete with replacement allocation functions.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t size) {
    if (counting) {
        ++allocations;
    }
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        return p;
    }
    throw std::bad_alloc();
}

void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

#pragma GCC diagnostic pop

namespace starling::routing {
namespace {

TEST(subscription_trie_alloc, match_allocates_nothing) {
    rcu_reader_registration registration;
    subscription_trie trie;
    for (int i = 0; i < 500; ++i) {
        const std::string id = "client-with-a-long-identifier-" + std::to_string(i);
        trie.subscribe("devices/" + std::to_string(i) + "/telemetry", {id, {}, 7, ""});
        trie.subscribe("devices/+/telemetry", {id, {}, std::nullopt, "group"});
        trie.subscribe("devices/#", {id, {}, std::nullopt, ""});
    }
    trie.subscribe("#", {"all", {}, std::nullopt, ""});
    trie.subscribe("$SYS/#", {"sys", {}, std::nullopt, ""});

    std::size_t seen = 0;
    std::size_t filter_bytes = 0;
    const auto visit = [&](std::string_view filter, const subscription& s) {
        ++seen;
        filter_bytes += filter.size() + s.client_id.size();
    };
    counting = true;
    for (int i = 0; i < 500; ++i) {
        trie.match("devices/17/telemetry", visit);
        trie.match("devices/unknown/telemetry/extra/levels", visit);
        trie.match("$SYS/broker/load", visit);
        trie.match("nothing/here", visit);
    }
    counting = false;
    EXPECT_EQ(allocations, 0U);
    EXPECT_EQ(seen, 500U * (1 + 500 + 500 + 1) + 500U * (500 + 1) + 500U + 500U);
    EXPECT_GT(filter_bytes, 0U);

    // The probe itself works: subscribe does allocate.
    counting = true;
    trie.subscribe("x/y", {"probe", {}, std::nullopt, ""});
    counting = false;
    EXPECT_GT(allocations, 0U);
}

}  // namespace
}  // namespace starling::routing
