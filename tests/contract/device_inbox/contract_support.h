#pragma once

// Helpers shared by the port contract suites (device inbox, metadata store, shared counters):
//   manual_clock  a clock the test moves by hand (docs/style.md rule 11)
//   temp_dir      a fresh directory, removed with everything in it on destruction
//   await<T>(f)   runs f(callback) and waits for the callback's value: adapters complete on
//                 their own threads, so tests block on a future, never sleep. A callback that
//                 runs twice aborts the test (promise already satisfied); one that never runs
//                 fails it after a generous timeout.
//   factory_name  names a parameterized contract instance after its adapter factory

#include "starling/clock.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

namespace starling::testing {

class manual_clock final : public clock {
  public:
    // Starts at the real time (so absolute expiry instants stay meaningful to servers that
    // also keep time, such as Redis), rounded down to a whole millisecond.
    manual_clock()
        : steady_base_(std::chrono::steady_clock::now()),
          system_base_(
              std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now())) {}

    steady_point steady_now() const override {
        return steady_base_ + std::chrono::nanoseconds(offset_ns_.load());
    }
    system_point system_now() const override {
        return system_base_ + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                  std::chrono::nanoseconds(offset_ns_.load()));
    }

    void advance(std::chrono::nanoseconds d) { offset_ns_ += d.count(); }

  private:
    const steady_point steady_base_;
    const system_point system_base_;
    std::atomic<std::int64_t> offset_ns_{0};
};

class temp_dir {
  public:
    temp_dir() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "starling-test-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) {
            throw std::system_error(errno, std::generic_category(), "mkdtemp");
        }
        path_ = pattern;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;

    const std::filesystem::path& path() const { return path_; }

  private:
    std::filesystem::path path_;
};

inline constexpr std::chrono::seconds await_timeout{60};

template <class T, class Start>
T await(Start&& start) {
    auto promise = std::make_shared<std::promise<T>>();
    auto future = promise->get_future();
    start(std::function<void(T)>([promise](T value) { promise->set_value(std::move(value)); }));
    if (future.wait_for(await_timeout) != std::future_status::ready) {
        throw std::runtime_error("callback never ran");  // gtest reports it as a failure
    }
    return future.get();
}

template <class Factory>
std::string factory_name(const ::testing::TestParamInfo<std::shared_ptr<Factory>>& info) {
    return info.param->name();
}

}  // namespace starling::testing
