#pragma once

// sqlite_metadata_store: the embedded-mode metadata store (port include/starling/
// metadata_store.h) on one SQLite file, <data_dir>/metadata.db, with the versioned migrations
// of src/adapters/sql/migrations applied at open().
//
// Lifecycle: open() creates the directory and file if needed, applies the migrations and starts
// the worker; stop() (or the destructor) finishes the queued calls and closes the file. Owned
// by the composition root; the clock must outlive the store.
// Concurrency: every port method is thread-safe and returns at once; the SQL runs on the
// store's own thread (sqlite_worker, one connection) in call order, and the callback runs
// there too. A call that finds the queue full (options::queue_capacity waiting calls) or the
// store stopped completes inline, on the caller's thread, with store_errc::queue_full /
// store_errc::stopped — and so does a record_unauthorized that the log's rate limits drop
// (success) or that has no client id (invalid_argument); the only cases where a callback runs
// on the caller's thread.

#include "adapters/embedded/sqlite_worker.h"
#include "adapters/unauthorized_log.h"
#include "base/result.h"
#include "starling/clock.h"
#include "starling/metadata_store.h"

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

namespace starling::adapters::embedded {

class sqlite_metadata_store final : public metadata_store {
  public:
    struct options {
        std::filesystem::path data_dir{};    // the file is data_dir / "metadata.db"
        std::size_t queue_capacity = 10000;  // waiting calls; beyond: store_errc::queue_full
        bool fsync_commits = false;          // synchronous=FULL: survive power loss too
        std::int64_t unauthorized_ttl_ms = 3LL * 24 * 3600 * 1000;  // TBMQ keeps 3 days
        // Row cap and write rates of the unauthorized-client log (adapters/unauthorized_log.h).
        unauthorized_log_options unauthorized{};
    };

    static result<std::unique_ptr<sqlite_metadata_store>> open(options opts, const clock& clk);
    ~sqlite_metadata_store() override;

    void stop();

    void save_credentials(client_credentials c, done_callback done) override;
    void delete_credentials(std::string credentials_id, done_callback done) override;
    void find_credentials(std::vector<std::string> credentials_ids,
                          callback<std::vector<client_credentials>> done) override;
    void list_credentials(std::size_t limit, std::size_t offset,
                          callback<std::vector<client_credentials>> done) override;
    void count_credentials(callback<std::size_t> done) override;

    void save_session_context(session_context ctx, done_callback done) override;
    void load_session_context(std::string client_id,
                              callback<std::optional<session_context>> done) override;
    void delete_session_context(std::string client_id, done_callback done) override;

    void save_application_context(application_session_context ctx, done_callback done) override;
    void load_application_context(
        std::string client_id, callback<std::optional<application_session_context>> done) override;
    void delete_application_context(std::string client_id, done_callback done) override;
    void save_application_shared_subscription(application_shared_subscription entity,
                                              done_callback done) override;
    void find_application_shared_subscription(
        std::string topic_filter,
        callback<std::optional<application_shared_subscription>> done) override;
    void list_application_shared_subscriptions(
        callback<std::vector<application_shared_subscription>> done) override;
    void delete_application_shared_subscription(std::string id, callback<bool> done) override;

    void save_integration(integration_row row, done_callback done) override;
    void list_integrations(callback<std::vector<integration_row>> done) override;
    void delete_integration(std::string id, callback<bool> done) override;

    void record_unauthorized(unauthorized_client entry, done_callback done) override;
    void list_unauthorized(unauthorized_query query, callback<unauthorized_page> done) override;
    void find_unauthorized(std::string client_id,
                           callback<std::optional<unauthorized_client>> done) override;
    void delete_unauthorized(std::string client_id, callback<bool> done) override;
    void clear_unauthorized(callback<std::size_t> done) override;

    void save_stats(std::vector<stats_point> points, done_callback done) override;
    void read_stats(stats_query query, callback<std::vector<stats_point>> done) override;
    void delete_stats_before(std::int64_t ts_ms, callback<std::size_t> done) override;

    void put_setting(std::string key, std::string json_value, done_callback done) override;
    void get_setting(std::string key, callback<std::optional<std::string>> done) override;

    bool healthy() const override;
    // PRAGMA synchronous of the connection, read at open(): 1 = NORMAL, 2 = FULL (fsync_commits).
    std::int64_t synchronous_mode() const { return synchronous_.load(std::memory_order_relaxed); }

    std::size_t queue_depth() const { return worker_.queue_depth(); }
    // Unauthorized-client rows dropped by the log's rate limits since open().
    std::uint64_t unauthorized_dropped() const { return unauthorized_limiter_.dropped(); }

  private:
    sqlite_metadata_store(options opts, const clock& clk);

    template <class R, class Work>
    void submit(std::function<void(R)> done, Work work) {
        post_call(worker_, storage_ok_, std::move(done), std::move(work));
    }

    std::string new_uuid();  // worker thread only

    const options options_;
    const clock& clock_;
    unauthorized_log_limiter unauthorized_limiter_;
    sqlite_worker worker_;
    std::atomic<bool> storage_ok_{true};
    std::atomic<std::int64_t> synchronous_{-1};
    std::mt19937_64 uuid_random_;  // worker thread only
};

}  // namespace starling::adapters::embedded
