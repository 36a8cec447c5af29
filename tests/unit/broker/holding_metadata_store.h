#pragma once

// holding_metadata_store: a metadata_store decorator that can hold session-context writes (the
// inbound QoS 2 ids a persistent session stores) before they reach the store below, and let them
// through when the test says. A broker test that claims "the PUBREC leaves only once its id is
// stored" holds the write and checks that the PUBREC waits for it.
//
// Everything else is passed through; while nothing is held it is invisible. Held writes go to
// the store below, in the order they came, at release() — and at destruction, so a test that
// forgot to release does not leave a caller waiting forever.
//
// Thread-safety: calls may come from any thread (actors); release() runs the held writes on the
// calling thread, their completions on the store's.

#include "starling/metadata_store.h"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <utility>
#include <vector>

namespace starling::testing {

class holding_metadata_store final : public metadata_store {
  public:
    explicit holding_metadata_store(metadata_store& inner) : inner_(inner) {}
    ~holding_metadata_store() override { release(); }
    holding_metadata_store(const holding_metadata_store&) = delete;
    holding_metadata_store& operator=(const holding_metadata_store&) = delete;

    // From now on, save_session_context waits for release().
    void hold_session_contexts() {
        std::lock_guard lock(mutex_);
        holding_ = true;
    }

    // Waits until `n` writes are held; false on timeout.
    bool wait_held(std::size_t n, std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return held_.size() >= n; });
    }

    // Stops holding and passes the held writes on, oldest first.
    void release() {
        std::vector<std::pair<session_context, done_callback>> held;
        {
            std::lock_guard lock(mutex_);
            holding_ = false;
            held.swap(held_);
        }
        for (auto& [ctx, done] : held) {
            inner_.save_session_context(std::move(ctx), std::move(done));
        }
    }

    void save_session_context(session_context ctx, done_callback done) override {
        {
            std::lock_guard lock(mutex_);
            if (holding_) {
                held_.emplace_back(std::move(ctx), std::move(done));
                changed_.notify_all();
                return;
            }
        }
        inner_.save_session_context(std::move(ctx), std::move(done));
    }

    // Passed through.
    void save_credentials(client_credentials c, done_callback done) override {
        inner_.save_credentials(std::move(c), std::move(done));
    }
    void delete_credentials(std::string credentials_id, done_callback done) override {
        inner_.delete_credentials(std::move(credentials_id), std::move(done));
    }
    void find_credentials(std::vector<std::string> ids,
                          callback<std::vector<client_credentials>> done) override {
        inner_.find_credentials(std::move(ids), std::move(done));
    }
    void list_credentials(std::size_t limit, std::size_t offset,
                          callback<std::vector<client_credentials>> done) override {
        inner_.list_credentials(limit, offset, std::move(done));
    }
    void count_credentials(callback<std::size_t> done) override {
        inner_.count_credentials(std::move(done));
    }
    void load_session_context(std::string client_id,
                              callback<std::optional<session_context>> done) override {
        inner_.load_session_context(std::move(client_id), std::move(done));
    }
    void delete_session_context(std::string client_id, done_callback done) override {
        inner_.delete_session_context(std::move(client_id), std::move(done));
    }
    void save_application_context(application_session_context ctx, done_callback done) override {
        inner_.save_application_context(std::move(ctx), std::move(done));
    }
    void load_application_context(
        std::string client_id, callback<std::optional<application_session_context>> done) override {
        inner_.load_application_context(std::move(client_id), std::move(done));
    }
    void delete_application_context(std::string client_id, done_callback done) override {
        inner_.delete_application_context(std::move(client_id), std::move(done));
    }
    void save_application_shared_subscription(application_shared_subscription entity,
                                              done_callback done) override {
        inner_.save_application_shared_subscription(std::move(entity), std::move(done));
    }
    void find_application_shared_subscription(
        std::string topic_filter,
        callback<std::optional<application_shared_subscription>> done) override {
        inner_.find_application_shared_subscription(std::move(topic_filter), std::move(done));
    }
    void list_application_shared_subscriptions(
        callback<std::vector<application_shared_subscription>> done) override {
        inner_.list_application_shared_subscriptions(std::move(done));
    }
    void delete_application_shared_subscription(std::string id, callback<bool> done) override {
        inner_.delete_application_shared_subscription(std::move(id), std::move(done));
    }
    void save_integration(integration_row row, done_callback done) override {
        inner_.save_integration(std::move(row), std::move(done));
    }
    void list_integrations(callback<std::vector<integration_row>> done) override {
        inner_.list_integrations(std::move(done));
    }
    void delete_integration(std::string id, callback<bool> done) override {
        inner_.delete_integration(std::move(id), std::move(done));
    }
    void record_unauthorized(unauthorized_client entry, done_callback done) override {
        inner_.record_unauthorized(std::move(entry), std::move(done));
    }
    void list_unauthorized(unauthorized_query query, callback<unauthorized_page> done) override {
        inner_.list_unauthorized(std::move(query), std::move(done));
    }
    void find_unauthorized(std::string client_id,
                           callback<std::optional<unauthorized_client>> done) override {
        inner_.find_unauthorized(std::move(client_id), std::move(done));
    }
    void delete_unauthorized(std::string client_id, callback<bool> done) override {
        inner_.delete_unauthorized(std::move(client_id), std::move(done));
    }
    void clear_unauthorized(callback<std::size_t> done) override {
        inner_.clear_unauthorized(std::move(done));
    }
    void save_stats(std::vector<stats_point> points, done_callback done) override {
        inner_.save_stats(std::move(points), std::move(done));
    }
    void read_stats(stats_query query, callback<std::vector<stats_point>> done) override {
        inner_.read_stats(std::move(query), std::move(done));
    }
    void delete_stats_before(std::int64_t ts_ms, callback<std::size_t> done) override {
        inner_.delete_stats_before(ts_ms, std::move(done));
    }
    void put_setting(std::string key, std::string json_value, done_callback done) override {
        inner_.put_setting(std::move(key), std::move(json_value), std::move(done));
    }
    void get_setting(std::string key, callback<std::optional<std::string>> done) override {
        inner_.get_setting(std::move(key), std::move(done));
    }
    bool healthy() const override { return inner_.healthy(); }

  private:
    metadata_store& inner_;
    std::mutex mutex_;
    std::condition_variable changed_;
    bool holding_ = false;
    std::vector<std::pair<session_context, done_callback>> held_;
};

}  // namespace starling::testing
