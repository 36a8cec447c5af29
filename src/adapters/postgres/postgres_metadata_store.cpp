#include "adapters/postgres/postgres_metadata_store.h"

#include "adapters/postgres/pg_error.h"
#include "adapters/postgres/pg_migrations.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <random>
#include <unordered_set>
#include <utility>

namespace starling::adapters::postgres {

namespace {

using json = nlohmann::json;

constexpr const char* credentials_columns =
    "id, created_time, name, client_type, credentials_id, credentials_type, credentials_value";

std::string_view client_type_name(client_type t) {
    return t == client_type::application ? "APPLICATION" : "DEVICE";
}

// Unknown or missing types read as DEVICE (docs/architecture.md §4).
client_type parse_client_type(std::string_view s) {
    return s == "APPLICATION" ? client_type::application : client_type::device;
}

// NULL reads as "" (the SQLite adapter's column_text does the same).
std::string text_of(const pqxx::field& f) { return f.is_null() ? std::string() : f.c_str(); }

client_credentials read_credentials(const pqxx::row& row) {
    client_credentials c;
    c.id = text_of(row[0]);
    c.created_time_ms = row[1].as<std::int64_t>();
    c.name = text_of(row[2]);
    c.type = parse_client_type(text_of(row[3]));
    c.credentials_id = text_of(row[4]);
    c.credentials_type = text_of(row[5]);
    c.credentials_value = text_of(row[6]);
    return c;
}

std::int64_t to_sql_limit(std::size_t n) {
    return n > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(n);
}

// TBMQ's JSON layouts, as the SQLite adapter writes them (sqlite_metadata_store.cpp; the two
// must stay alike so data moves between the modes unchanged):
//   qos2_publish_packet_ids  [1, 2, 3]
//   publish/pubrel_msg_infos [{"packetId": 1, "offset": 42}, ...]
std::string encode_packet_ids(const std::vector<std::uint16_t>& ids) {
    json doc = json::array();
    for (const auto id : ids) {
        doc.push_back(id);
    }
    return doc.dump();
}

bool is_packet_id(const json& v) {
    return v.is_number_integer() && v.get<std::int64_t>() >= 0 && v.get<std::int64_t>() <= 65535;
}

result<std::vector<std::uint16_t>> decode_packet_ids(const std::string& text) {
    std::vector<std::uint16_t> ids;
    if (text.empty()) {
        return ids;
    }
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_array()) {
        return make_error_code(pg_errc::corrupt_record);
    }
    for (const auto& v : doc) {
        if (!is_packet_id(v)) {
            return make_error_code(pg_errc::corrupt_record);
        }
        ids.push_back(static_cast<std::uint16_t>(v.get<std::int64_t>()));
    }
    return ids;
}

using offset_map = std::vector<std::pair<std::uint16_t, std::int64_t>>;

std::string encode_offsets(const offset_map& entries) {
    json doc = json::array();
    for (const auto& [packet_id, offset] : entries) {
        doc.push_back({{"packetId", packet_id}, {"offset", offset}});
    }
    return doc.dump();
}

result<offset_map> decode_offsets(const std::string& text) {
    offset_map entries;
    if (text.empty()) {
        return entries;
    }
    const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_array()) {
        return make_error_code(pg_errc::corrupt_record);
    }
    for (const auto& v : doc) {
        if (!v.is_object() || !v.contains("packetId") || !v.contains("offset") ||
            !is_packet_id(v["packetId"]) || !v["offset"].is_number_integer()) {
            return make_error_code(pg_errc::corrupt_record);
        }
        entries.emplace_back(static_cast<std::uint16_t>(v["packetId"].get<std::int64_t>()),
                             v["offset"].get<std::int64_t>());
    }
    return entries;
}

// Version 4 (random) UUID text, the format TBMQ stores in its id columns. Any thread: the
// generator is per thread.
std::string new_uuid() {
    thread_local std::mt19937_64 random{std::random_device{}()};
    std::uint64_t hi = random();
    std::uint64_t lo = random();
    hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
    lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
    return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                       hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

// Runs `work(connection)` on the worker's connection. libpqxx throws; the exception becomes
// the call's error here. A connection that broke under the call is replaced and the call run
// once more: every port operation is an idempotent upsert, delete or read, so running it twice
// (even when the first COMMIT's outcome is unknown) leaves the same state as once.
template <class R, class Work>
R run_with_retry(pg_session& session, Work& work) {
    for (int attempt = 0;; ++attempt) {
        pqxx::connection_base* c = attempt == 0 ? session.connection() : session.reconnect_now();
        if (c == nullptr) {
            return R(boost::system::in_place_error, make_error_code(pg_errc::unavailable));
        }
        std::error_code ec;
        try {
            R r = work(*c);
            session.note_reachable();
            return r;
        } catch (const std::exception& e) {
            ec = error_from_exception(e);
        }
        if (!is_connection_loss(ec)) {
            session.note_reachable();  // the server answered, with an error
            return R(boost::system::in_place_error, ec);
        }
        session.mark_broken();
        if (attempt == 1) {
            return R(boost::system::in_place_error, ec);
        }
    }
}

// The shape of every port call: `work` runs on a pool thread and `done` gets its result there.
// A rejected post (queue full, stopped) completes `done` inline on the caller's thread.
template <class R, class Work>
void post_call(pg_pool& pool, const std::string* key, std::function<void(R)> done, Work work) {
    // `done` is copied into the task so it is still here to report a rejected post.
    pg_pool::task task = [done, work = std::move(work)](pg_session& session) mutable {
        done(run_with_retry<R>(session, work));
    };
    auto st = key != nullptr ? pool.post(std::hash<std::string>{}(*key), std::move(task))
                             : pool.post_any(std::move(task));
    if (!st) {
        done(R(boost::system::in_place_error, st.error()));
    }
}

// Values for libpq's keyword='value' syntax: single-quoted, \ and ' escaped.
std::string conninfo_value(std::string_view value) {
    std::string out = "'";
    for (const char c : value) {
        if (c == '\\' || c == '\'') {
            out += '\\';
        }
        out += c;
    }
    out += '\'';
    return out;
}

bool plain_identifier(std::string_view name) {
    return !name.empty() && name.size() <= 63 &&
           (std::isalpha(static_cast<unsigned char>(name.front())) != 0 || name.front() == '_') &&
           std::all_of(name.begin(), name.end(), [](char c) {
               return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
           });
}

}  // namespace

std::string postgres_conninfo(const config::postgres_metadata_config& config) {
    // libpq counts connect_timeout in whole seconds and treats values below 2 as 2.
    const auto timeout_s =
        std::max<std::int64_t>(2, (config.connection_timeout.count() + 999) / 1000);
    std::string options = fmt::format("-c statement_timeout={}", config.statement_timeout.count());
    if (!config.schema.empty()) {
        options += fmt::format(" -c search_path={}", config.schema);
    }
    std::string info = fmt::format(
        "host={} port={} dbname={} user={} password={} connect_timeout={} "
        "application_name=starling options={}",
        conninfo_value(config.host), config.port, conninfo_value(config.database),
        conninfo_value(config.username), conninfo_value(config.password), timeout_s,
        conninfo_value(options));
    for (const auto& [name, value] :
         {std::pair{"sslmode", &config.sslmode}, std::pair{"sslrootcert", &config.sslrootcert},
          std::pair{"sslcert", &config.sslcert}, std::pair{"sslkey", &config.sslkey}}) {
        if (!value->empty()) {
            info += fmt::format(" {}={}", name, conninfo_value(*value));
        }
    }
    return info;
}

postgres_metadata_store::postgres_metadata_store(pg_pool::options pool_options, const clock& clk,
                                                 tuning t)
    : clock_(clk),
      tuning_(t),
      unauthorized_limiter_(tuning_.unauthorized, clk),
      pool_(std::move(pool_options)) {}

result<std::unique_ptr<postgres_metadata_store>> postgres_metadata_store::open(
    const config::postgres_metadata_config& config, const clock& clk, tuning t) {
    const std::string description =
        fmt::format("{}:{}/{}{}{}", config.host, config.port, config.database,
                    config.schema.empty() ? "" : " schema ", config.schema);
    if (config.host.empty() || config.database.empty() || config.maximum_pool_size == 0 ||
        config.queue_capacity == 0 || t.unauthorized_ttl_ms <= 0 ||
        (!config.schema.empty() && !plain_identifier(config.schema))) {
        spdlog::error(
            "postgres {}: unusable configuration (host, database, pool size, queue "
            "capacity and a plain schema name are required)",
            description);
        return make_error_code(pg_errc::invalid_argument);
    }
    pg_pool::options pool_options{
        .conninfo = postgres_conninfo(config),
        .description = description,
        .size = config.maximum_pool_size,
        .queue_capacity = config.queue_capacity,
        .backoff_initial = t.backoff_initial,
        .backoff_max = t.backoff_max,
        .keepalive = t.keepalive,
        .thread_name = "pg-meta",
    };
    std::unique_ptr<postgres_metadata_store> store(
        new postgres_metadata_store(std::move(pool_options), clk, t));
    const std::string schema = config.schema;
    auto st = store->pool_.start([&](pqxx::connection_base& c) -> status {
        auto version = apply_pg_migrations(c, postgres_sql_migrations(), schema, clk.epoch_ms());
        if (!version) {
            return version.error();
        }
        spdlog::info("postgres {}: metadata schema at version {}", description, *version);
        return {};
    });
    if (!st) {
        spdlog::error("postgres {}: metadata store not started: {}", description,
                      st.error().message());
        return st.error();
    }
    return store;
}

result<std::unique_ptr<postgres_metadata_store>> open_postgres_metadata_store(
    const config::postgres_metadata_config& config, const clock& clk) {
    return postgres_metadata_store::open(config, clk, {});
}

postgres_metadata_store::~postgres_metadata_store() { stop(); }

void postgres_metadata_store::stop() { pool_.stop(); }

bool postgres_metadata_store::healthy() const { return pool_.running() && pool_.healthy(); }

// --- credentials ---------------------------------------------------------------------------

void postgres_metadata_store::save_credentials(client_credentials c, done_callback done) {
    const std::string key = c.credentials_id;
    post_call(pool_, &key, std::move(done),
              [this, c = std::move(c)](pqxx::connection_base& conn) mutable -> status {
                  if (c.credentials_id.empty() || c.credentials_type.empty()) {
                      return make_error_code(pg_errc::invalid_argument);
                  }
                  if (c.created_time_ms == 0) {
                      c.created_time_ms = clock_.epoch_ms();
                  }
                  // With an id: insert or update that row (credentials_id may change, but not
                  // onto another row's: unique_violation). Without one: the credentials_id
                  // names the row, a new one gets a fresh UUID.
                  const bool by_id = !c.id.empty();
                  const std::string id = by_id ? c.id : new_uuid();
                  pqxx::nontransaction tx(conn);
                  tx.exec_params(
                      by_id ? "INSERT INTO mqtt_client_credentials (id, created_time, name,"
                              " client_type, credentials_id, credentials_type, credentials_value)"
                              " VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET"
                              " name = excluded.name, client_type = excluded.client_type,"
                              " credentials_id = excluded.credentials_id,"
                              " credentials_type = excluded.credentials_type,"
                              " credentials_value = excluded.credentials_value"
                            : "INSERT INTO mqtt_client_credentials (id, created_time, name,"
                              " client_type, credentials_id, credentials_type, credentials_value)"
                              " VALUES ($1, $2, $3, $4, $5, $6, $7)"
                              " ON CONFLICT (credentials_id) DO UPDATE SET"
                              " name = excluded.name, client_type = excluded.client_type,"
                              " credentials_type = excluded.credentials_type,"
                              " credentials_value = excluded.credentials_value",
                      id, c.created_time_ms, c.name, std::string(client_type_name(c.type)),
                      c.credentials_id, c.credentials_type, c.credentials_value);
                  return {};
              });
}

void postgres_metadata_store::delete_credentials(std::string credentials_id, done_callback done) {
    const std::string key = credentials_id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(credentials_id)](pqxx::connection_base& conn) -> status {
                  pqxx::nontransaction tx(conn);
                  tx.exec_params("DELETE FROM mqtt_client_credentials WHERE credentials_id = $1",
                                 id);
                  return {};
              });
}

void postgres_metadata_store::find_credentials(std::vector<std::string> credentials_ids,
                                               callback<std::vector<client_credentials>> done) {
    post_call(pool_, nullptr, std::move(done),
              [ids = std::move(credentials_ids)](
                  pqxx::connection_base& conn) -> result<std::vector<client_credentials>> {
                  std::vector<client_credentials> found;
                  if (ids.empty()) {
                      return found;
                  }
                  // One read-only transaction, one indexed lookup per distinct id (a CONNECT
                  // asks for one to three).
                  std::unordered_set<std::string_view> seen;
                  std::vector<std::string> unique;
                  for (const auto& id : ids) {
                      if (seen.insert(id).second) {
                          unique.push_back(id);
                      }
                  }
                  pqxx::read_transaction tx(conn);
                  for (const auto& id : unique) {
                      const auto rows =
                          tx.exec_params(fmt::format("SELECT {} FROM mqtt_client_credentials"
                                                     " WHERE credentials_id = $1",
                                                     credentials_columns),
                                         id);
                      for (const auto& row : rows) {
                          found.push_back(read_credentials(row));
                      }
                  }
                  tx.commit();
                  return found;
              });
}

void postgres_metadata_store::count_credentials(callback<std::size_t> done) {
    post_call(pool_, nullptr, std::move(done),
              [](pqxx::connection_base& conn) -> result<std::size_t> {
                  pqxx::nontransaction tx(conn);
                  const auto row = tx.exec1("SELECT COUNT(*) FROM mqtt_client_credentials");
                  return static_cast<std::size_t>(row[0].as<std::int64_t>());
              });
}

void postgres_metadata_store::list_credentials(std::size_t limit, std::size_t offset,
                                               callback<std::vector<client_credentials>> done) {
    post_call(
        pool_, nullptr, std::move(done),
        [limit, offset](pqxx::connection_base& conn) -> result<std::vector<client_credentials>> {
            pqxx::nontransaction tx(conn);
            const auto rows =
                tx.exec_params(fmt::format("SELECT {} FROM mqtt_client_credentials"
                                           " ORDER BY created_time, id LIMIT $1 OFFSET $2",
                                           credentials_columns),
                               to_sql_limit(limit), to_sql_limit(offset));
            std::vector<client_credentials> out;
            out.reserve(rows.size());
            for (const auto& row : rows) {
                out.push_back(read_credentials(row));
            }
            return out;
        });
}

// --- inbound QoS 2 session state -------------------------------------------------------------

void postgres_metadata_store::save_session_context(session_context ctx, done_callback done) {
    const std::string key = ctx.client_id;
    post_call(pool_, &key, std::move(done),
              [this, ctx = std::move(ctx)](pqxx::connection_base& conn) -> status {
                  if (ctx.client_id.empty()) {
                      return make_error_code(pg_errc::invalid_argument);
                  }
                  const std::int64_t updated =
                      ctx.last_updated_ms != 0 ? ctx.last_updated_ms : clock_.epoch_ms();
                  pqxx::nontransaction tx(conn);
                  tx.exec_params(
                      "INSERT INTO generic_client_session_ctx"
                      " (client_id, last_updated_time, qos2_publish_packet_ids)"
                      " VALUES ($1, $2, $3) ON CONFLICT (client_id) DO UPDATE SET"
                      " last_updated_time = excluded.last_updated_time,"
                      " qos2_publish_packet_ids = excluded.qos2_publish_packet_ids",
                      ctx.client_id, updated, encode_packet_ids(ctx.qos2_packet_ids));
                  return {};
              });
}

void postgres_metadata_store::load_session_context(std::string client_id,
                                                   callback<std::optional<session_context>> done) {
    const std::string key = client_id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(client_id)](
                  pqxx::connection_base& conn) -> result<std::optional<session_context>> {
                  pqxx::nontransaction tx(conn);
                  const auto rows = tx.exec_params(
                      "SELECT last_updated_time, qos2_publish_packet_ids"
                      " FROM generic_client_session_ctx WHERE client_id = $1",
                      id);
                  if (rows.empty()) {
                      return std::optional<session_context>();
                  }
                  auto ids = decode_packet_ids(text_of(rows[0][1]));
                  if (!ids) {
                      return ids.error();
                  }
                  return std::optional<session_context>(session_context{
                      .client_id = id,
                      .last_updated_ms = rows[0][0].as<std::int64_t>(),
                      .qos2_packet_ids = std::move(*ids),
                  });
              });
}

void postgres_metadata_store::delete_session_context(std::string client_id, done_callback done) {
    const std::string key = client_id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(client_id)](pqxx::connection_base& conn) -> status {
                  pqxx::nontransaction tx(conn);
                  tx.exec_params("DELETE FROM generic_client_session_ctx WHERE client_id = $1", id);
                  return {};
              });
}

// --- APPLICATION in-flight maps --------------------------------------------------------------

void postgres_metadata_store::save_application_context(application_session_context ctx,
                                                       done_callback done) {
    const std::string key = ctx.client_id;
    post_call(pool_, &key, std::move(done),
              [this, ctx = std::move(ctx)](pqxx::connection_base& conn) -> status {
                  if (ctx.client_id.empty()) {
                      return make_error_code(pg_errc::invalid_argument);
                  }
                  const std::int64_t updated =
                      ctx.last_updated_ms != 0 ? ctx.last_updated_ms : clock_.epoch_ms();
                  pqxx::nontransaction tx(conn);
                  tx.exec_params(
                      "INSERT INTO application_session_ctx"
                      " (client_id, last_updated_time, publish_msg_infos, pubrel_msg_infos)"
                      " VALUES ($1, $2, $3, $4) ON CONFLICT (client_id) DO UPDATE SET"
                      " last_updated_time = excluded.last_updated_time,"
                      " publish_msg_infos = excluded.publish_msg_infos,"
                      " pubrel_msg_infos = excluded.pubrel_msg_infos",
                      ctx.client_id, updated, encode_offsets(ctx.publish_offsets),
                      encode_offsets(ctx.pubrel_offsets));
                  return {};
              });
}

void postgres_metadata_store::load_application_context(
    std::string client_id, callback<std::optional<application_session_context>> done) {
    const std::string key = client_id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(client_id)](pqxx::connection_base& conn)
                  -> result<std::optional<application_session_context>> {
                  pqxx::nontransaction tx(conn);
                  const auto rows = tx.exec_params(
                      "SELECT last_updated_time, publish_msg_infos, pubrel_msg_infos"
                      " FROM application_session_ctx WHERE client_id = $1",
                      id);
                  if (rows.empty()) {
                      return std::optional<application_session_context>();
                  }
                  auto publish = decode_offsets(text_of(rows[0][1]));
                  auto pubrel = decode_offsets(text_of(rows[0][2]));
                  if (!publish || !pubrel) {
                      return make_error_code(pg_errc::corrupt_record);
                  }
                  return std::optional<application_session_context>(application_session_context{
                      .client_id = id,
                      .last_updated_ms = rows[0][0].as<std::int64_t>(),
                      .publish_offsets = std::move(*publish),
                      .pubrel_offsets = std::move(*pubrel),
                  });
              });
}

void postgres_metadata_store::delete_application_context(std::string client_id,
                                                         done_callback done) {
    const std::string key = client_id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(client_id)](pqxx::connection_base& conn) -> status {
                  pqxx::nontransaction tx(conn);
                  tx.exec_params("DELETE FROM application_session_ctx WHERE client_id = $1", id);
                  return {};
              });
}

// --- APPLICATION shared-subscription entities -----------------------------------------------

void postgres_metadata_store::save_application_shared_subscription(
    application_shared_subscription entity, done_callback done) {
    const std::string key = entity.topic_filter;
    post_call(pool_, &key, std::move(done),
              [this, e = std::move(entity)](pqxx::connection_base& conn) -> status {
                  if (e.id.empty() || e.topic_filter.empty() || e.partitions < 1) {
                      return make_error_code(pg_errc::invalid_argument);
                  }
                  const std::int64_t created =
                      e.created_time_ms != 0 ? e.created_time_ms : clock_.epoch_ms();
                  pqxx::nontransaction tx(conn);
                  tx.exec_params(
                      "INSERT INTO application_shared_subscription"
                      " (id, created_time, topic, partitions, name) VALUES ($1, $2, $3, $4, $5)"
                      " ON CONFLICT (topic) DO UPDATE SET partitions = excluded.partitions,"
                      " name = excluded.name",
                      e.id, created, e.topic_filter, e.partitions, e.name);
                  return {};
              });
}

void postgres_metadata_store::find_application_shared_subscription(
    std::string topic_filter, callback<std::optional<application_shared_subscription>> done) {
    const std::string key = topic_filter;
    post_call(
        pool_, &key, std::move(done),
        [filter = std::move(topic_filter)](
            pqxx::connection_base& conn) -> result<std::optional<application_shared_subscription>> {
            pqxx::nontransaction tx(conn);
            const auto rows = tx.exec_params(
                "SELECT id, created_time, partitions, name FROM application_shared_subscription"
                " WHERE topic = $1",
                filter);
            if (rows.empty()) {
                return std::optional<application_shared_subscription>();
            }
            application_shared_subscription e;
            e.id = text_of(rows[0][0]);
            e.created_time_ms = rows[0][1].as<std::int64_t>();
            e.topic_filter = filter;
            e.partitions = rows[0][2].as<std::int32_t>();
            e.name = text_of(rows[0][3]);
            return std::optional<application_shared_subscription>(std::move(e));
        });
}

void postgres_metadata_store::list_application_shared_subscriptions(
    callback<std::vector<application_shared_subscription>> done) {
    post_call(
        pool_, nullptr, std::move(done),
        [](pqxx::connection_base& conn) -> result<std::vector<application_shared_subscription>> {
            pqxx::nontransaction tx(conn);
            const auto rows = tx.exec(
                "SELECT id, created_time, topic, partitions, name"
                " FROM application_shared_subscription ORDER BY topic");
            std::vector<application_shared_subscription> out;
            out.reserve(rows.size());
            for (const auto& row : rows) {
                out.push_back({.id = text_of(row[0]),
                               .created_time_ms = row[1].as<std::int64_t>(),
                               .topic_filter = text_of(row[2]),
                               .partitions = row[3].as<std::int32_t>(),
                               .name = text_of(row[4])});
            }
            return out;
        });
}

void postgres_metadata_store::delete_application_shared_subscription(std::string id,
                                                                     callback<bool> done) {
    post_call(pool_, nullptr, std::move(done),
              [id = std::move(id)](pqxx::connection_base& conn) -> result<bool> {
                  pqxx::nontransaction tx(conn);
                  const auto r = tx.exec_params(
                      "DELETE FROM application_shared_subscription WHERE id = $1", id);
                  return r.affected_rows() > 0;
              });
}

// --- integrations ---------------------------------------------------------------------------

void postgres_metadata_store::save_integration(integration_row row, done_callback done) {
    const std::string key = row.id;
    post_call(pool_, &key, std::move(done),
              [this, r = std::move(row)](pqxx::connection_base& conn) mutable -> status {
                  if (r.id.empty() || r.type.empty()) {
                      return make_error_code(pg_errc::invalid_argument);
                  }
                  if (r.created_time_ms == 0) {
                      r.created_time_ms = clock_.epoch_ms();
                  }
                  // An existing id keeps its created_time (port: metadata_store.h).
                  pqxx::nontransaction tx(conn);
                  tx.exec_params(
                      "INSERT INTO integration (id, created_time, name, type, enabled,"
                      " configuration, additional_info) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                      " ON CONFLICT (id) DO UPDATE SET name = excluded.name,"
                      " type = excluded.type, enabled = excluded.enabled,"
                      " configuration = excluded.configuration,"
                      " additional_info = excluded.additional_info",
                      r.id, r.created_time_ms, r.name, r.type, r.enabled, r.configuration,
                      r.additional_info);
                  return {};
              });
}

void postgres_metadata_store::list_integrations(callback<std::vector<integration_row>> done) {
    post_call(pool_, nullptr, std::move(done),
              [](pqxx::connection_base& conn) -> result<std::vector<integration_row>> {
                  pqxx::nontransaction tx(conn);
                  const auto rows = tx.exec(
                      "SELECT id, created_time, name, type, enabled, configuration,"
                      " additional_info FROM integration ORDER BY created_time, id");
                  std::vector<integration_row> out;
                  out.reserve(rows.size());
                  for (const auto& row : rows) {
                      out.push_back({.id = text_of(row[0]),
                                     .created_time_ms = row[1].as<std::int64_t>(),
                                     .name = text_of(row[2]),
                                     .type = text_of(row[3]),
                                     .enabled = row[4].as<bool>(),
                                     .configuration = text_of(row[5]),
                                     .additional_info = text_of(row[6])});
                  }
                  return out;
              });
}

void postgres_metadata_store::delete_integration(std::string id, callback<bool> done) {
    const std::string key = id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(id)](pqxx::connection_base& conn) -> result<bool> {
                  pqxx::nontransaction tx(conn);
                  const auto r = tx.exec_params("DELETE FROM integration WHERE id = $1", id);
                  return r.affected_rows() > 0;
              });
}

// --- statistics series (ts_kv) ----------------------------------------------------------------

void postgres_metadata_store::save_stats(std::vector<stats_point> points, done_callback done) {
    for (const auto& point : points) {
        if (point.entity_id.empty() || !stats_key_to_id(point.key)) {
            done(make_error_code(pg_errc::invalid_argument));
            return;
        }
    }
    post_call(
        pool_, nullptr, std::move(done),
        [pts = std::move(points)](pqxx::connection_base& conn) -> status {
            pqxx::work tx(conn);
            // The dictionary rows name the ids for whoever reads the tables with SQL; the
            // ids themselves are fixed by the port (stats_keys), so nodes never race.
            for (const auto& k : stats_keys) {
                tx.exec_params(
                    "INSERT INTO ts_kv_dictionary (key, key_id) VALUES ($1, $2)"
                    " ON CONFLICT DO NOTHING",
                    std::string(k.key), k.id);
            }
            for (const auto& p : pts) {
                tx.exec_params(
                    "INSERT INTO ts_kv (entity_id, key, ts, long_v) VALUES ($1, $2, $3, $4)"
                    " ON CONFLICT (entity_id, key, ts) DO UPDATE SET long_v = excluded.long_v",
                    p.entity_id, *stats_key_to_id(p.key), p.ts_ms, p.value);
            }
            tx.commit();
            return {};
        });
}

void postgres_metadata_store::read_stats(stats_query query,
                                         callback<std::vector<stats_point>> done) {
    post_call(
        pool_, nullptr, std::move(done),
        [q = std::move(query)](pqxx::connection_base& conn) -> result<std::vector<stats_point>> {
            // The ids come from the port's fixed table, never from the caller's text, so they
            // are written into the statement as numbers.
            std::string ids;
            for (const auto& key : q.keys) {
                if (auto id = stats_key_to_id(key)) {
                    ids += fmt::format("{}{}", ids.empty() ? "" : ", ", *id);
                }
            }
            std::vector<stats_point> points;
            if (ids.empty() || q.limit == 0 || q.end_ms < q.start_ms) {
                return points;
            }
            pqxx::nontransaction tx(conn);
            const auto rows = tx.exec_params(
                fmt::format("SELECT entity_id, key, ts, long_v FROM ts_kv WHERE key IN ({})"
                            " AND ts >= $1 AND ts <= $2 AND ($3 = '' OR entity_id = $3)"
                            " ORDER BY key, ts, entity_id LIMIT $4",
                            ids),
                q.start_ms, q.end_ms, q.entity_id, to_sql_limit(q.limit));
            points.reserve(rows.size());
            for (const auto& row : rows) {
                points.push_back(stats_point{
                    .entity_id = text_of(row[0]),
                    .key = std::string(stats_key_from_id(row[1].as<std::int32_t>())),
                    .ts_ms = row[2].as<std::int64_t>(),
                    .value = row[3].is_null() ? 0 : row[3].as<std::int64_t>(),
                });
            }
            return points;
        });
}

void postgres_metadata_store::delete_stats_before(std::int64_t ts_ms, callback<std::size_t> done) {
    post_call(pool_, nullptr, std::move(done),
              [ts_ms](pqxx::connection_base& conn) -> result<std::size_t> {
                  pqxx::nontransaction tx(conn);
                  return static_cast<std::size_t>(
                      tx.exec_params("DELETE FROM ts_kv WHERE ts < $1", ts_ms).affected_rows());
              });
}

// --- unauthorized-client log -----------------------------------------------------------------

void postgres_metadata_store::record_unauthorized(unauthorized_client entry, done_callback done) {
    if (entry.client_id.empty()) {
        done(make_error_code(pg_errc::invalid_argument));
        return;
    }
    // Rate limits first, on the caller's thread: a dropped row never takes a queue slot that
    // a credential lookup may need (port: metadata_store.h, unauthorized_client).
    if (!unauthorized_limiter_.admit(entry.ip_address)) {
        done(status{});
        return;
    }
    entry = clamp(std::move(entry));
    const std::string key = entry.client_id;
    post_call(pool_, &key, std::move(done),
              [this, e = std::move(entry)](pqxx::connection_base& conn) -> status {
                  const std::int64_t now = clock_.epoch_ms();
                  pqxx::work tx(conn);
                  // Expiring on the write path bounds the table without a timer (an indexed
                  // range delete that finds nothing is one index probe).
                  tx.exec_params("DELETE FROM unauthorized_client WHERE ts <= $1",
                                 now - tuning_.unauthorized_ttl_ms);
                  tx.exec_params(
                      "INSERT INTO unauthorized_client (client_id, ip_address, ts, username,"
                      " password_provided, tls_used, reason) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                      " ON CONFLICT (client_id) DO UPDATE SET ip_address = excluded.ip_address,"
                      " ts = excluded.ts, username = excluded.username,"
                      " password_provided = excluded.password_provided,"
                      " tls_used = excluded.tls_used, reason = excluded.reason",
                      e.client_id, e.ip_address, e.ts_ms != 0 ? e.ts_ms : now, e.username,
                      e.password_provided, e.tls_used, e.reason);
                  // Row cap: the newest max_rows stay.
                  tx.exec_params(
                      "DELETE FROM unauthorized_client WHERE client_id IN (SELECT client_id FROM"
                      " unauthorized_client ORDER BY ts DESC, client_id DESC OFFSET $1)",
                      static_cast<std::int64_t>(tuning_.unauthorized.max_rows));
                  tx.commit();
                  return {};
              });
}

namespace {

constexpr const char* unauthorized_columns =
    "client_id, ip_address, ts, username, password_provided, tls_used, reason";

unauthorized_client unauthorized_row(const pqxx::row& row) {
    return unauthorized_client{
        .client_id = text_of(row[0]),
        .ip_address = text_of(row[1]),
        .ts_ms = row[2].as<std::int64_t>(),
        .username = text_of(row[3]),
        .password_provided = row[4].as<bool>(),
        .tls_used = row[5].as<bool>(),
        .reason = text_of(row[6]),
    };
}

}  // namespace

void postgres_metadata_store::list_unauthorized(unauthorized_query query,
                                                callback<unauthorized_page> done) {
    post_call(
        pool_, nullptr, std::move(done),
        [this, q = std::move(query)](pqxx::connection_base& conn) -> result<unauthorized_page> {
            const std::string pattern = like_contains_pattern(q.client_id_contains);
            const std::int64_t oldest = clock_.epoch_ms() - tuning_.unauthorized_ttl_ms;
            // One snapshot for the count and the page, so `total` agrees with the rows.
            pqxx::read_transaction tx(conn);
            unauthorized_page page;
            page.total = tx.exec_params1(
                               "SELECT COUNT(*) FROM unauthorized_client"
                               " WHERE ts > $1 AND client_id ILIKE $2"
                               " ESCAPE '\\'",
                               oldest, pattern)[0]
                             .as<std::size_t>();
            const auto rows =
                tx.exec_params(fmt::format("SELECT {} FROM unauthorized_client WHERE ts > $1"
                                           " AND client_id ILIKE $2 ESCAPE '\\'"
                                           " ORDER BY ts DESC, client_id LIMIT $3 OFFSET $4",
                                           unauthorized_columns),
                               oldest, pattern, to_sql_limit(q.limit), to_sql_limit(q.offset));
            page.rows.reserve(rows.size());
            for (const auto& row : rows) {
                page.rows.push_back(unauthorized_row(row));
            }
            tx.commit();
            return page;
        });
}

void postgres_metadata_store::find_unauthorized(std::string client_id,
                                                callback<std::optional<unauthorized_client>> done) {
    post_call(pool_, nullptr, std::move(done),
              [this, id = std::move(client_id)](
                  pqxx::connection_base& conn) -> result<std::optional<unauthorized_client>> {
                  pqxx::nontransaction tx(conn);
                  const auto rows = tx.exec_params(
                      fmt::format("SELECT {} FROM unauthorized_client WHERE client_id = $1"
                                  " AND ts > $2",
                                  unauthorized_columns),
                      id, clock_.epoch_ms() - tuning_.unauthorized_ttl_ms);
                  if (rows.empty()) {
                      return std::optional<unauthorized_client>();
                  }
                  return std::optional<unauthorized_client>(unauthorized_row(rows[0]));
              });
}

void postgres_metadata_store::delete_unauthorized(std::string client_id, callback<bool> done) {
    const std::string key = client_id;
    post_call(pool_, &key, std::move(done),
              [id = std::move(client_id)](pqxx::connection_base& conn) -> result<bool> {
                  pqxx::nontransaction tx(conn);
                  return tx.exec_params("DELETE FROM unauthorized_client WHERE client_id = $1", id)
                             .affected_rows() > 0;
              });
}

void postgres_metadata_store::clear_unauthorized(callback<std::size_t> done) {
    post_call(pool_, nullptr, std::move(done),
              [](pqxx::connection_base& conn) -> result<std::size_t> {
                  pqxx::nontransaction tx(conn);
                  return static_cast<std::size_t>(
                      tx.exec("DELETE FROM unauthorized_client").affected_rows());
              });
}

// --- admin_settings --------------------------------------------------------------------------

void postgres_metadata_store::put_setting(std::string key, std::string json_value,
                                          done_callback done) {
    const std::string route = key;
    post_call(pool_, &route, std::move(done),
              [this, key = std::move(key),
               value = std::move(json_value)](pqxx::connection_base& conn) -> status {
                  if (key.empty() || !json::accept(value)) {
                      return make_error_code(pg_errc::invalid_argument);
                  }
                  pqxx::nontransaction tx(conn);
                  tx.exec_params(
                      "INSERT INTO admin_settings (id, created_time, key, json_value)"
                      " VALUES ($1, $2, $3, $4)"
                      " ON CONFLICT (key) DO UPDATE SET json_value = excluded.json_value",
                      new_uuid(), clock_.epoch_ms(), key, value);
                  return {};
              });
}

void postgres_metadata_store::get_setting(std::string key,
                                          callback<std::optional<std::string>> done) {
    const std::string route = key;
    post_call(
        pool_, &route, std::move(done),
        [key = std::move(key)](pqxx::connection_base& conn) -> result<std::optional<std::string>> {
            pqxx::nontransaction tx(conn);
            const auto rows =
                tx.exec_params("SELECT json_value FROM admin_settings WHERE key = $1", key);
            if (rows.empty()) {
                return std::optional<std::string>();
            }
            return std::optional<std::string>(text_of(rows[0][0]));
        });
}

}  // namespace starling::adapters::postgres
