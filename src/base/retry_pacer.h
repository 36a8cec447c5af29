#pragma once

// retry_pacer: how a background loop (a log consumer, a store writer) waits after a failure.
//
// A loop that retries at once on an error that does not go away — a consumer the log closed, a
// fatal Kafka error, a store that is down — spins a core and writes a log line per turn. The
// pacer makes the n-th failure in a row wait first·2^(n-1), capped, logs the 1st, 2nd, 4th, 8th…
// failure of a run (each line says how many in a row), and forgets the run at the first success.
// The wait ends early when the owner asks its loop to stop, so a backoff never delays a
// shutdown.
//
// One pacer per loop thread (it counts that thread's run); the stop_token comes from the
// owner's std::stop_source, shared by all its threads.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>

namespace starling::base {

class retry_pacer {
  public:
    struct options {
        std::chrono::milliseconds first_delay{100};
        std::chrono::milliseconds max_delay{5000};
    };

    // `loop` names the loop in log lines ("msg.all consumer 0").
    explicit retry_pacer(std::string loop, options opts);
    explicit retry_pacer(std::string loop) : retry_pacer(std::move(loop), options{}) {}

    // Records a failure of `what` ("poll", "inbox write") with its reason, logs it when it is
    // the 1st, 2nd, 4th… of the run, and waits the run's next delay. False when the loop was
    // asked to stop (before or during the wait): the caller leaves its loop.
    bool failed(std::string_view what, std::string_view reason, std::stop_token stop);

    // The same without the wait, for a loop that cannot sleep (a task on a shared thread): it
    // returns the delay the caller must let pass before the next try.
    [[nodiscard]] std::chrono::milliseconds record_failure(std::string_view what,
                                                           std::string_view reason);

    // The loop made progress: the next failure starts a new run at the first delay.
    void succeeded();

    // Failures in the current run, and the wait the next failure will bring.
    [[nodiscard]] std::size_t failures_in_a_row() const { return failures_; }
    [[nodiscard]] std::chrono::milliseconds next_delay() const;

    // Whether the n-th failure of a run is written to the log (1, 2, 4, 8, …).
    [[nodiscard]] static bool logged(std::size_t nth);

  private:
    std::string loop_;
    options opts_;
    std::size_t failures_ = 0;
    std::mutex mutex_;                  // only for the wait
    std::condition_variable_any wake_;  // signalled by the stop_token's stop request
};

}  // namespace starling::base
