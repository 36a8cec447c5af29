#pragma once

// Test doubles for the auth tests: a clock the test moves, and a scripted provider.

#include "auth/provider.h"
#include "starling/clock.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace starling::auth::testing {

class manual_clock final : public starling::clock {
  public:
    steady_point steady_now() const override { return steady_point(offset()); }
    system_point system_now() const override {
        return system_point(std::chrono::duration_cast<system_point::duration>(offset()));
    }
    void advance(std::chrono::milliseconds by) { now_ms_ += by.count(); }

  private:
    std::chrono::milliseconds offset() const { return std::chrono::milliseconds(now_ms_.load()); }
    std::atomic<std::int64_t> now_ms_{1'000'000};
};

// Answers with a fixed result at once, or never (silent) to exercise the timeout.
class scripted_provider final : public auth_provider {
  public:
    scripted_provider(std::string name, std::optional<auth_result> answer)
        : name_(std::move(name)), answer_(std::move(answer)) {}

    std::string_view name() const override { return name_; }
    void authenticate(const auth_request& request, std::function<void(auth_result)> done) override {
        ++calls;
        last_client_id = request.client_id;
        if (answer_) {
            done(*answer_);
        } else {
            std::lock_guard lock(mutex_);
            parked_.push_back(std::move(done));  // never answered (until release_parked)
        }
    }
    void set_answer(std::optional<auth_result> answer) { answer_ = std::move(answer); }
    // Answers the calls parked so far (a late answer after a timeout).
    void release_parked(const auth_result& r) {
        std::vector<std::function<void(auth_result)>> parked;
        {
            std::lock_guard lock(mutex_);
            parked.swap(parked_);
        }
        for (auto& done : parked) {
            done(r);
        }
    }

    std::atomic<int> calls{0};
    std::string last_client_id;

  private:
    std::string name_;
    std::optional<auth_result> answer_;
    std::mutex mutex_;
    std::vector<std::function<void(auth_result)>> parked_;
};

inline auth_result allow_result() {
    return auth_result{.outcome = verdict::allow, .type = client_type::application};
}
inline auth_result deny_result(bool bad_credentials = true) {
    return auth_result{
        .outcome = verdict::deny, .reason = "nope", .bad_credentials = bad_credentials};
}
inline auth_result pass_result() { return auth_result{.outcome = verdict::not_applicable}; }
inline auth_result failed_result() {
    return auth_result{.outcome = verdict::deny, .reason = "store down", .failed = true};
}

}  // namespace starling::auth::testing
