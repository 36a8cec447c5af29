#pragma once

// postgres_metadata_store: the cluster-mode metadata store (port include/starling/
// metadata_store.h) on PostgreSQL via libpqxx, with the same semantics as the SQLite adapter
// (src/adapters/embedded/README.md, "Metadata-store details") and the same versioned schema
// (pg_migrations.h).
//
// Lifecycle: open_postgres_metadata_store() connects every pooled connection, applies the
// migrations and starts the pool, or fails (unreachable server, bad credentials, a schema from
// a newer binary); stop() (or the destructor) runs the queued calls and closes the
// connections. Owned by the composition root; the clock must outlive the store.
// Concurrency: every port method is thread-safe and returns at once; the SQL runs on the
// store's pool (pg_pool: maximum_pool_size threads, one connection each), and the callback
// runs there too. Calls naming the same key (client id, credentials id, setting key) run in
// call order. A call that finds the queue full or the store stopped completes inline, on the
// caller's thread, with pg_errc::queue_full / pg_errc::stopped — the one case where a
// callback runs on the caller's thread (as with the SQLite adapter).
// Lost database: calls fail with pg_errc::unavailable (== std::errc::not_connected), never
// report a false success, and healthy() is false until a connection works again; connections
// are re-established with bounded exponential backoff. Every port operation is idempotent (an
// upsert or a delete), so a call whose connection broke is retried once on a fresh connection.

#include "adapters/postgres/pg_pool.h"
#include "adapters/unauthorized_log.h"
#include "base/result.h"
#include "config/postgres_metadata_config.h"
#include "starling/clock.h"
#include "starling/metadata_store.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace starling::adapters::postgres {

class postgres_metadata_store final : public metadata_store {
  public:
    // Tuning that is not operator configuration (tests shorten the intervals).
    struct tuning {
        std::int64_t unauthorized_ttl_ms = 3LL * 24 * 3600 * 1000;  // TBMQ keeps 3 days
        // Row cap and write rates of the unauthorized-client log (adapters/unauthorized_log.h).
        unauthorized_log_options unauthorized{};
        std::chrono::milliseconds backoff_initial{100};
        std::chrono::milliseconds backoff_max{5000};
        std::chrono::milliseconds keepalive{5000};
    };

    static result<std::unique_ptr<postgres_metadata_store>> open(
        const config::postgres_metadata_config& config, const clock& clk, tuning t);
    ~postgres_metadata_store() override;

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

    // Calls waiting for a connection, for a gauge.
    std::size_t queue_depth() const { return pool_.queue_depth(); }
    // Unauthorized-client rows dropped by the log's rate limits since open().
    std::uint64_t unauthorized_dropped() const { return unauthorized_limiter_.dropped(); }

  private:
    postgres_metadata_store(pg_pool::options pool_options, const clock& clk, tuning t);

    const clock& clock_;
    const tuning tuning_;
    unauthorized_log_limiter unauthorized_limiter_;
    pg_pool pool_;
};

// The factory the composition root calls (cluster mode): connects, migrates, starts the pool,
// or fails with a clear error (logged with the server's message): pg_errc::invalid_argument
// for a config the adapter cannot use, pg_errc::unavailable when the server cannot be reached
// or refuses the login, the migration runner's errors otherwise.
result<std::unique_ptr<postgres_metadata_store>> open_postgres_metadata_store(
    const config::postgres_metadata_config& config, const clock& clk);

// The libpq keyword/value connection string for `config` (exposed for tests and logs).
std::string postgres_conninfo(const config::postgres_metadata_config& config);

}  // namespace starling::adapters::postgres
