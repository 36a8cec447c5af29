#include "ratelimit/shared_limit.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

namespace starling::ratelimit {

shared_limit::shared_limit(shared_counters& counters, std::string key,
                           std::vector<bandwidth> limits, std::chrono::milliseconds timeout)
    : counters_(counters), key_(std::move(key)), limits_(std::move(limits)), timeout_(timeout) {}

shared_limit::grant shared_limit::acquire(std::int64_t tokens) {
    if (tokens <= 0) {
        return {};
    }
    // Shared with the callback: on a timeout this call returns first and the late answer
    // lands in state nobody reads any more.
    struct waiter {
        std::mutex mutex;
        std::condition_variable cv;
        std::optional<result<std::int64_t>> answer;
    };
    auto w = std::make_shared<waiter>();
    counters_.try_consume(key_, limits_, tokens, [w](result<std::int64_t> r) {
        std::lock_guard lock(w->mutex);
        w->answer = std::move(r);
        w->cv.notify_all();
    });
    std::unique_lock lock(w->mutex);
    if (!w->cv.wait_for(lock, timeout_, [&] { return w->answer.has_value(); })) {
        return grant{.granted = tokens,
                     .failed_open = true,
                     .error = std::make_error_code(std::errc::timed_out)};
    }
    if (!*w->answer) {
        return grant{.granted = tokens, .failed_open = true, .error = w->answer->error()};
    }
    return grant{.granted = w->answer->value(), .failed_open = false, .error = {}};
}

}  // namespace starling::ratelimit
