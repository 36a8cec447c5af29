#pragma once

// Helpers shared by the provider unit tests (JWT, HTTP): a bounded blocking authenticate()
// and a pattern-list check for the rules a provider returned.

#include "auth/provider.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

namespace starling::auth::test {

// Runs authenticate() and waits for the answer (bounded: a hung provider fails the test).
inline auth_result authenticate(auth_provider& provider, const auth_request& request) {
    std::promise<auth_result> promise;
    auto future = promise.get_future();
    provider.authenticate(request, [&promise](auth_result r) { promise.set_value(std::move(r)); });
    EXPECT_EQ(future.wait_for(std::chrono::seconds(10)), std::future_status::ready)
        << "provider never answered";
    return future.get();
}

// True when one pattern matches the whole topic (the patterns as the provider built them).
inline bool matches(const std::vector<pattern>& patterns, const std::string& topic) {
    for (const auto& p : patterns) {
        if (p.full_match(topic)) {
            return true;
        }
    }
    return false;
}

}  // namespace starling::auth::test
