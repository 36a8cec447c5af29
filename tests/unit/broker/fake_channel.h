#pragma once

// fake_channel: a client_channel that records what a client actor writes and decodes it as a
// client would, so the broker's MQTT behaviour is tested without sockets. Shared by the broker
// unit tests (client actor, cluster, APPLICATION clients, the session model).
//
// Concurrency: the actor writes from its dispatcher thread, the test reads from its own; every
// member is guarded by one mutex, and the readers wait (bounded) on a condition variable.

#include "broker/client_channel.h"
#include "mqtt/decoder.h"
#include "mqtt/packet.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>

namespace starling::testing {

class fake_channel final : public broker::client_channel {
  public:
    fake_channel(std::uint64_t id, mqtt::protocol_version v)
        : id_(id), decoder_(mqtt::decoder_limits{}, mqtt::decoder_role::client) {
        decoder_.set_protocol_version(v);
    }

    void send(std::string bytes) override {
        std::lock_guard lock(mutex_);
        if (closed_) {
            ++sent_after_close_;
        }
        decoder_.feed(bytes);
        for (;;) {
            auto r = decoder_.next();
            auto* p = std::get_if<mqtt::packet>(&r);
            if (p == nullptr) {
                break;
            }
            packets_.push_back(std::move(*p));
        }
        cv_.notify_all();
    }
    void close() override {
        std::lock_guard lock(mutex_);
        closed_ = true;
        cv_.notify_all();
    }
    bool writable() const override { return true; }
    void resume_reading() override {
        paused_.store(false);
        ++resumed_;
    }
    bool reading_paused() const override { return paused_.load(); }
    // As the connection does when the actor's mailbox is full: stop reading until resumed.
    void pause_reading_for_test() { paused_.store(true); }
    int resumed() const { return resumed_.load(); }
    void hold_reading(bool held) override { held_.store(held); }
    const std::string& remote_address() const override { return address_; }
    std::uint64_t id() const override { return id_; }
    bool input_ended() const override { return input_ended_.load(); }

    // What mqtt_connection marks after forwarding a DISCONNECT or the end of the stream.
    void end_input() { input_ended_.store(true); }
    // Whether the actor asked the connection to stop reading (hold_reading).
    bool reading_held() const { return held_.load(); }

    // The next packet the actor wrote, waiting up to `timeout`.
    std::optional<mqtt::packet> next(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        std::unique_lock lock(mutex_);
        if (!cv_.wait_for(lock, timeout, [&] { return !packets_.empty(); })) {
            return std::nullopt;
        }
        auto p = std::move(packets_.front());
        packets_.pop_front();
        return p;
    }
    // The next packet, which must be a T (a test failure otherwise; then nullopt).
    template <class T>
    std::optional<T> expect_opt(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        auto p = next(timeout);
        if (!p) {
            ADD_FAILURE() << "no packet within timeout";
            return std::nullopt;
        }
        auto* t = std::get_if<T>(&*p);
        if (t == nullptr) {
            ADD_FAILURE() << "unexpected packet " << mqtt::to_string(mqtt::type_of(*p));
            return std::nullopt;
        }
        return std::move(*t);
    }
    // As expect_opt, with a default-constructed T on failure.
    template <class T>
    T expect(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        return expect_opt<T>(timeout).value_or(T{});
    }
    bool wait_closed(std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, timeout, [&] { return closed_; });
    }
    bool closed() {
        std::lock_guard lock(mutex_);
        return closed_;
    }
    // Packets the actor wrote after it closed the channel (a bug: they would be lost).
    std::size_t sent_after_close() {
        std::lock_guard lock(mutex_);
        return sent_after_close_;
    }

  private:
    std::uint64_t id_;
    std::string address_ = "127.0.0.1:1";
    std::mutex mutex_;
    std::condition_variable cv_;
    mqtt::decoder decoder_;
    std::deque<mqtt::packet> packets_;
    bool closed_ = false;
    std::size_t sent_after_close_ = 0;
    std::atomic<bool> input_ended_{false};
    std::atomic<bool> held_{false};
    std::atomic<bool> paused_{false};
    std::atomic<int> resumed_{0};
};

}  // namespace starling::testing
