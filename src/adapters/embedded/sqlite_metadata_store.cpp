#include "adapters/embedded/sqlite_metadata_store.h"

#include "adapters/embedded/sqlite_error.h"
#include "adapters/embedded/sqlite_migrations.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <limits>
#include <unordered_set>
#include <utility>

namespace starling::adapters::embedded {

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

client_credentials read_credentials(const sqlite_stmt& stmt) {
    client_credentials c;
    c.id = stmt.column_text(0);
    c.created_time_ms = stmt.column_int64(1);
    c.name = stmt.column_text(2);
    c.type = parse_client_type(stmt.column_text(3));
    c.credentials_id = stmt.column_text(4);
    c.credentials_type = stmt.column_text(5);
    c.credentials_value = stmt.column_text(6);
    return c;
}

// The only constraint a caller can break on purpose is a unique key; everything else is a
// storage problem and keeps SQLite's code.
std::error_code map_constraint(const std::error_code& ec) {
    if (ec.category() == sqlite_category() &&
        (ec.value() == SQLITE_CONSTRAINT_UNIQUE || ec.value() == SQLITE_CONSTRAINT_PRIMARYKEY)) {
        return make_error_code(store_errc::already_exists);
    }
    return ec;
}

std::int64_t to_sql_limit(std::size_t n) {
    return n > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max())
               ? std::numeric_limits<std::int64_t>::max()
               : static_cast<std::int64_t>(n);
}

// JSON layouts follow TBMQ's columns so its data reads the same:
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
        return make_error_code(store_errc::corrupt_record);
    }
    for (const auto& v : doc) {
        if (!is_packet_id(v)) {
            return make_error_code(store_errc::corrupt_record);
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
        return make_error_code(store_errc::corrupt_record);
    }
    for (const auto& v : doc) {
        if (!v.is_object() || !v.contains("packetId") || !v.contains("offset") ||
            !is_packet_id(v["packetId"]) || !v["offset"].is_number_integer()) {
            return make_error_code(store_errc::corrupt_record);
        }
        entries.emplace_back(static_cast<std::uint16_t>(v["packetId"].get<std::int64_t>()),
                             v["offset"].get<std::int64_t>());
    }
    return entries;
}

// Steps `stmt` to its last row, appending `read(stmt)` for each row to `out`.
template <typename T, typename Read>
status read_rows(sqlite_stmt& stmt, std::vector<T>& out, Read read) {
    for (;;) {
        auto row = stmt.step();
        if (!row) {
            return row.error();
        }
        if (!*row) {
            return {};
        }
        out.push_back(read(stmt));
    }
}

}  // namespace

sqlite_metadata_store::sqlite_metadata_store(options opts, const clock& clk)
    : options_(std::move(opts)),
      clock_(clk),
      unauthorized_limiter_(options_.unauthorized, clk),
      worker_(sqlite_worker::options{
          .path = options_.data_dir / "metadata.db",
          .queue_capacity = options_.queue_capacity,
          .thread_name = "sqlite-meta",
          .open = {.fsync_commits = options_.fsync_commits, .foreign_keys = true},
      }),
      uuid_random_(std::random_device{}()) {}

result<std::unique_ptr<sqlite_metadata_store>> sqlite_metadata_store::open(options opts,
                                                                           const clock& clk) {
    if (opts.queue_capacity == 0 || opts.unauthorized_ttl_ms <= 0) {
        return make_error_code(store_errc::invalid_argument);
    }
    std::error_code ec;
    std::filesystem::create_directories(opts.data_dir, ec);
    if (ec) {
        return ec;
    }
    std::unique_ptr<sqlite_metadata_store> store(new sqlite_metadata_store(std::move(opts), clk));
    auto* raw = store.get();
    auto st = store->worker_.start([&clk, raw](sqlite_db& db) -> status {
        raw->synchronous_.store(db.pragma_int("synchronous"), std::memory_order_relaxed);
        auto version = apply_sql_migrations(db, embedded_sql_migrations(), clk.epoch_ms());
        if (!version) {
            return version.error();
        }
        return {};
    });
    if (!st) {
        return st.error();
    }
    return store;
}

sqlite_metadata_store::~sqlite_metadata_store() { stop(); }

void sqlite_metadata_store::stop() { worker_.stop(); }

bool sqlite_metadata_store::healthy() const {
    return worker_.running() && storage_ok_.load(std::memory_order_relaxed);
}

std::string sqlite_metadata_store::new_uuid() {
    // Version 4 (random) UUID text, the format TBMQ stores in its id columns.
    std::uint64_t hi = uuid_random_();
    std::uint64_t lo = uuid_random_();
    hi = (hi & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
    lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
    return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff,
                       hi & 0xffff, lo >> 48, lo & 0xffffffffffffULL);
}

// --- credentials ---------------------------------------------------------------------------

void sqlite_metadata_store::save_credentials(client_credentials c, done_callback done) {
    submit(std::move(done), [this, c = std::move(c)](sqlite_db& db) mutable -> status {
        if (c.credentials_id.empty() || c.credentials_type.empty()) {
            return make_error_code(store_errc::invalid_argument);
        }
        if (c.created_time_ms == 0) {
            c.created_time_ms = clock_.epoch_ms();
        }
        // With an id: insert or update that row (credentials_id may change, but not onto
        // another row's). Without one: the credentials_id names the row, a new one gets a
        // fresh UUID.
        const bool by_id = !c.id.empty();
        if (!by_id) {
            c.id = new_uuid();
        }
        auto stmt = db.prepare(
            by_id ? "INSERT INTO mqtt_client_credentials (id, created_time, name, client_type,"
                    " credentials_id, credentials_type, credentials_value)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET"
                    " name = excluded.name, client_type = excluded.client_type,"
                    " credentials_id = excluded.credentials_id,"
                    " credentials_type = excluded.credentials_type,"
                    " credentials_value = excluded.credentials_value"
                  : "INSERT INTO mqtt_client_credentials (id, created_time, name, client_type,"
                    " credentials_id, credentials_type, credentials_value)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (credentials_id) DO UPDATE SET"
                    " name = excluded.name, client_type = excluded.client_type,"
                    " credentials_type = excluded.credentials_type,"
                    " credentials_value = excluded.credentials_value");
        if (!stmt) {
            return stmt.error();
        }
        stmt->bind(1, c.id)
            .bind(2, c.created_time_ms)
            .bind(3, c.name)
            .bind(4, client_type_name(c.type))
            .bind(5, c.credentials_id)
            .bind(6, c.credentials_type)
            .bind(7, c.credentials_value);
        if (auto st = stmt->run(); !st) {
            return map_constraint(st.error());
        }
        return {};
    });
}

void sqlite_metadata_store::delete_credentials(std::string credentials_id, done_callback done) {
    submit(std::move(done), [id = std::move(credentials_id)](sqlite_db& db) -> status {
        auto stmt = db.prepare("DELETE FROM mqtt_client_credentials WHERE credentials_id = ?");
        if (!stmt) {
            return stmt.error();
        }
        return stmt->bind(1, id).run();
    });
}

void sqlite_metadata_store::find_credentials(std::vector<std::string> credentials_ids,
                                             callback<std::vector<client_credentials>> done) {
    submit(std::move(done),
           [ids = std::move(credentials_ids)](
               sqlite_db& db) -> result<std::vector<client_credentials>> {
               auto stmt = db.prepare(
                   fmt::format("SELECT {} FROM mqtt_client_credentials WHERE credentials_id = ?",
                               credentials_columns));
               if (!stmt) {
                   return stmt.error();
               }
               std::vector<client_credentials> found;
               std::unordered_set<std::string_view> seen;
               for (const auto& id : ids) {
                   if (!seen.insert(id).second) {
                       continue;
                   }
                   stmt->bind(1, id);
                   auto row = stmt->step();
                   if (!row) {
                       return row.error();
                   }
                   if (*row) {
                       found.push_back(read_credentials(*stmt));
                   }
                   stmt->reset();
               }
               return found;
           });
}

void sqlite_metadata_store::count_credentials(callback<std::size_t> done) {
    submit(std::move(done), [](sqlite_db& db) -> result<std::size_t> {
        auto stmt = db.prepare("SELECT COUNT(*) FROM mqtt_client_credentials");
        if (!stmt) {
            return stmt.error();
        }
        auto row = stmt->step();
        if (!row) {
            return row.error();
        }
        return static_cast<std::size_t>(stmt->column_int64(0));
    });
}

void sqlite_metadata_store::list_credentials(std::size_t limit, std::size_t offset,
                                             callback<std::vector<client_credentials>> done) {
    submit(std::move(done),
           [limit, offset](sqlite_db& db) -> result<std::vector<client_credentials>> {
               auto stmt = db.prepare(
                   fmt::format("SELECT {} FROM mqtt_client_credentials ORDER BY created_time, id"
                               " LIMIT ? OFFSET ?",
                               credentials_columns));
               if (!stmt) {
                   return stmt.error();
               }
               stmt->bind(1, to_sql_limit(limit)).bind(2, to_sql_limit(offset));
               std::vector<client_credentials> rows;
               if (auto st = read_rows(*stmt, rows, read_credentials); !st) {
                   return st.error();
               }
               return rows;
           });
}

// --- inbound QoS 2 session state -------------------------------------------------------------

void sqlite_metadata_store::save_session_context(session_context ctx, done_callback done) {
    submit(std::move(done), [this, ctx = std::move(ctx)](sqlite_db& db) -> status {
        if (ctx.client_id.empty()) {
            return make_error_code(store_errc::invalid_argument);
        }
        auto stmt = db.prepare(
            "INSERT INTO generic_client_session_ctx"
            " (client_id, last_updated_time, qos2_publish_packet_ids) VALUES (?, ?, ?)"
            " ON CONFLICT (client_id) DO UPDATE SET last_updated_time = excluded.last_updated_time,"
            " qos2_publish_packet_ids = excluded.qos2_publish_packet_ids");
        if (!stmt) {
            return stmt.error();
        }
        const std::string ids = encode_packet_ids(ctx.qos2_packet_ids);
        const std::int64_t updated =
            ctx.last_updated_ms != 0 ? ctx.last_updated_ms : clock_.epoch_ms();
        return stmt->bind(1, ctx.client_id).bind(2, updated).bind(3, ids).run();
    });
}

void sqlite_metadata_store::load_session_context(std::string client_id,
                                                 callback<std::optional<session_context>> done) {
    submit(std::move(done),
           [id = std::move(client_id)](sqlite_db& db) -> result<std::optional<session_context>> {
               auto stmt = db.prepare(
                   "SELECT last_updated_time, qos2_publish_packet_ids"
                   " FROM generic_client_session_ctx WHERE client_id = ?");
               if (!stmt) {
                   return stmt.error();
               }
               auto row = stmt->bind(1, id).step();
               if (!row) {
                   return row.error();
               }
               if (!*row) {
                   return std::optional<session_context>();
               }
               auto ids = decode_packet_ids(stmt->column_text(1));
               if (!ids) {
                   return ids.error();
               }
               return std::optional<session_context>(session_context{
                   .client_id = id,
                   .last_updated_ms = stmt->column_int64(0),
                   .qos2_packet_ids = std::move(*ids),
               });
           });
}

void sqlite_metadata_store::delete_session_context(std::string client_id, done_callback done) {
    submit(std::move(done), [id = std::move(client_id)](sqlite_db& db) -> status {
        auto stmt = db.prepare("DELETE FROM generic_client_session_ctx WHERE client_id = ?");
        if (!stmt) {
            return stmt.error();
        }
        return stmt->bind(1, id).run();
    });
}

// --- APPLICATION in-flight maps --------------------------------------------------------------

void sqlite_metadata_store::save_application_context(application_session_context ctx,
                                                     done_callback done) {
    submit(std::move(done), [this, ctx = std::move(ctx)](sqlite_db& db) -> status {
        if (ctx.client_id.empty()) {
            return make_error_code(store_errc::invalid_argument);
        }
        auto stmt = db.prepare(
            "INSERT INTO application_session_ctx"
            " (client_id, last_updated_time, publish_msg_infos, pubrel_msg_infos)"
            " VALUES (?, ?, ?, ?)"
            " ON CONFLICT (client_id) DO UPDATE SET last_updated_time = excluded.last_updated_time,"
            " publish_msg_infos = excluded.publish_msg_infos,"
            " pubrel_msg_infos = excluded.pubrel_msg_infos");
        if (!stmt) {
            return stmt.error();
        }
        const std::string publish = encode_offsets(ctx.publish_offsets);
        const std::string pubrel = encode_offsets(ctx.pubrel_offsets);
        const std::int64_t updated =
            ctx.last_updated_ms != 0 ? ctx.last_updated_ms : clock_.epoch_ms();
        return stmt->bind(1, ctx.client_id).bind(2, updated).bind(3, publish).bind(4, pubrel).run();
    });
}

void sqlite_metadata_store::load_application_context(
    std::string client_id, callback<std::optional<application_session_context>> done) {
    submit(std::move(done),
           [id = std::move(client_id)](
               sqlite_db& db) -> result<std::optional<application_session_context>> {
               auto stmt = db.prepare(
                   "SELECT last_updated_time, publish_msg_infos, pubrel_msg_infos"
                   " FROM application_session_ctx WHERE client_id = ?");
               if (!stmt) {
                   return stmt.error();
               }
               auto row = stmt->bind(1, id).step();
               if (!row) {
                   return row.error();
               }
               if (!*row) {
                   return std::optional<application_session_context>();
               }
               auto publish = decode_offsets(stmt->column_text(1));
               auto pubrel = decode_offsets(stmt->column_text(2));
               if (!publish || !pubrel) {
                   return make_error_code(store_errc::corrupt_record);
               }
               return std::optional<application_session_context>(application_session_context{
                   .client_id = id,
                   .last_updated_ms = stmt->column_int64(0),
                   .publish_offsets = std::move(*publish),
                   .pubrel_offsets = std::move(*pubrel),
               });
           });
}

void sqlite_metadata_store::delete_application_context(std::string client_id, done_callback done) {
    submit(std::move(done), [id = std::move(client_id)](sqlite_db& db) -> status {
        auto stmt = db.prepare("DELETE FROM application_session_ctx WHERE client_id = ?");
        if (!stmt) {
            return stmt.error();
        }
        return stmt->bind(1, id).run();
    });
}

// --- APPLICATION shared-subscription entities -----------------------------------------------

void sqlite_metadata_store::save_application_shared_subscription(
    application_shared_subscription entity, done_callback done) {
    submit(std::move(done), [this, e = std::move(entity)](sqlite_db& db) -> status {
        if (e.id.empty() || e.topic_filter.empty() || e.partitions < 1) {
            return make_error_code(store_errc::invalid_argument);
        }
        auto stmt = db.prepare(
            "INSERT INTO application_shared_subscription (id, created_time, topic, partitions, "
            "name)"
            " VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (topic) DO UPDATE SET partitions = excluded.partitions,"
            " name = excluded.name");
        if (!stmt) {
            return stmt.error();
        }
        const std::int64_t created = e.created_time_ms != 0 ? e.created_time_ms : clock_.epoch_ms();
        return stmt->bind(1, e.id)
            .bind(2, created)
            .bind(3, e.topic_filter)
            .bind(4, std::int64_t{e.partitions})
            .bind(5, e.name)
            .run();
    });
}

void sqlite_metadata_store::find_application_shared_subscription(
    std::string topic_filter, callback<std::optional<application_shared_subscription>> done) {
    submit(std::move(done),
           [filter = std::move(topic_filter)](
               sqlite_db& db) -> result<std::optional<application_shared_subscription>> {
               auto stmt = db.prepare(
                   "SELECT id, created_time, partitions, name FROM application_shared_subscription"
                   " WHERE topic = ?");
               if (!stmt) {
                   return stmt.error();
               }
               auto row = stmt->bind(1, filter).step();
               if (!row) {
                   return row.error();
               }
               if (!*row) {
                   return std::optional<application_shared_subscription>();
               }
               application_shared_subscription e;
               e.id = stmt->column_text(0);
               e.created_time_ms = stmt->column_int64(1);
               e.topic_filter = filter;
               e.partitions = static_cast<std::int32_t>(stmt->column_int64(2));
               e.name = stmt->column_text(3);
               return std::optional<application_shared_subscription>(std::move(e));
           });
}

void sqlite_metadata_store::list_application_shared_subscriptions(
    callback<std::vector<application_shared_subscription>> done) {
    submit(std::move(done),
           [](sqlite_db& db) -> result<std::vector<application_shared_subscription>> {
               auto stmt = db.prepare(
                   "SELECT id, created_time, topic, partitions, name"
                   " FROM application_shared_subscription ORDER BY topic");
               if (!stmt) {
                   return stmt.error();
               }
               std::vector<application_shared_subscription> out;
               auto st = read_rows(*stmt, out, [](const sqlite_stmt& r) {
                   return application_shared_subscription{
                       .id = r.column_text(0),
                       .created_time_ms = r.column_int64(1),
                       .topic_filter = r.column_text(2),
                       .partitions = static_cast<std::int32_t>(r.column_int64(3)),
                       .name = r.column_text(4)};
               });
               if (!st) {
                   return st.error();
               }
               return out;
           });
}

void sqlite_metadata_store::delete_application_shared_subscription(std::string id,
                                                                   callback<bool> done) {
    submit(std::move(done), [id = std::move(id)](sqlite_db& db) -> result<bool> {
        auto stmt = db.prepare("DELETE FROM application_shared_subscription WHERE id = ?");
        if (!stmt) {
            return {boost::system::in_place_error, stmt.error()};
        }
        if (auto st = stmt->bind(1, id).run(); !st) {
            return {boost::system::in_place_error, st.error()};
        }
        return db.changes() > 0;
    });
}

// --- integrations ---------------------------------------------------------------------------

void sqlite_metadata_store::save_integration(integration_row row, done_callback done) {
    submit(std::move(done), [this, r = std::move(row)](sqlite_db& db) mutable -> status {
        if (r.id.empty() || r.type.empty()) {
            return make_error_code(store_errc::invalid_argument);
        }
        if (r.created_time_ms == 0) {
            r.created_time_ms = clock_.epoch_ms();
        }
        // An existing id keeps its created_time (port: metadata_store.h, save_integration).
        auto stmt = db.prepare(
            "INSERT INTO integration (id, created_time, name, type, enabled, configuration,"
            " additional_info) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET name = excluded.name, type = excluded.type,"
            " enabled = excluded.enabled, configuration = excluded.configuration,"
            " additional_info = excluded.additional_info");
        if (!stmt) {
            return stmt.error();
        }
        return stmt->bind(1, r.id)
            .bind(2, r.created_time_ms)
            .bind(3, r.name)
            .bind(4, r.type)
            .bind(5, std::int64_t{r.enabled})
            .bind(6, r.configuration)
            .bind(7, r.additional_info)
            .run();
    });
}

void sqlite_metadata_store::list_integrations(callback<std::vector<integration_row>> done) {
    submit(std::move(done), [](sqlite_db& db) -> result<std::vector<integration_row>> {
        auto stmt = db.prepare(
            "SELECT id, created_time, name, type, enabled, configuration, additional_info"
            " FROM integration ORDER BY created_time, id");
        if (!stmt) {
            return stmt.error();
        }
        std::vector<integration_row> out;
        auto st = read_rows(*stmt, out, [](const sqlite_stmt& r) {
            return integration_row{.id = r.column_text(0),
                                   .created_time_ms = r.column_int64(1),
                                   .name = r.column_text(2),
                                   .type = r.column_text(3),
                                   .enabled = r.column_int64(4) != 0,
                                   .configuration = r.column_text(5),
                                   .additional_info = r.column_text(6)};
        });
        if (!st) {
            return st.error();
        }
        return out;
    });
}

void sqlite_metadata_store::delete_integration(std::string id, callback<bool> done) {
    submit(std::move(done), [id = std::move(id)](sqlite_db& db) -> result<bool> {
        auto stmt = db.prepare("DELETE FROM integration WHERE id = ?");
        if (!stmt) {
            return {boost::system::in_place_error, stmt.error()};
        }
        if (auto st = stmt->bind(1, id).run(); !st) {
            return {boost::system::in_place_error, st.error()};
        }
        return db.changes() > 0;
    });
}

// --- unauthorized-client log -----------------------------------------------------------------

void sqlite_metadata_store::record_unauthorized(unauthorized_client entry, done_callback done) {
    if (entry.client_id.empty()) {
        done(make_error_code(store_errc::invalid_argument));
        return;
    }
    // Rate limits first, on the caller's thread: a dropped row never takes a queue slot that
    // a credential lookup may need (port: metadata_store.h, unauthorized_client).
    if (!unauthorized_limiter_.admit(entry.ip_address)) {
        done(status{});
        return;
    }
    submit(std::move(done), [this, e = clamp(std::move(entry))](sqlite_db& db) -> status {
        const std::int64_t now = clock_.epoch_ms();
        auto tx = sqlite_transaction::begin(db);
        if (!tx) {
            return tx.error();
        }
        // Expiring here, on the write path, bounds the table without a timer: an indexed range
        // delete that finds nothing costs one index probe.
        auto expire = db.prepare("DELETE FROM unauthorized_client WHERE ts <= ?");
        if (!expire) {
            return expire.error();
        }
        if (auto st = expire->bind(1, now - options_.unauthorized_ttl_ms).run(); !st) {
            return st;
        }
        auto stmt = db.prepare(
            "INSERT INTO unauthorized_client (client_id, ip_address, ts, username,"
            " password_provided, tls_used, reason) VALUES (?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (client_id) DO UPDATE SET ip_address = excluded.ip_address,"
            " ts = excluded.ts, username = excluded.username,"
            " password_provided = excluded.password_provided, tls_used = excluded.tls_used,"
            " reason = excluded.reason");
        if (!stmt) {
            return stmt.error();
        }
        stmt->bind(1, e.client_id)
            .bind(2, e.ip_address)
            .bind(3, e.ts_ms != 0 ? e.ts_ms : now)
            .bind(4, e.username)
            .bind(5, std::int64_t{e.password_provided})
            .bind(6, std::int64_t{e.tls_used})
            .bind(7, e.reason);
        if (auto st = stmt->run(); !st) {
            return st;
        }
        // Row cap: the newest max_rows stay (an index walk over the ts index).
        auto trim = db.prepare(
            "DELETE FROM unauthorized_client WHERE client_id IN (SELECT client_id FROM"
            " unauthorized_client ORDER BY ts DESC, client_id DESC LIMIT -1 OFFSET ?)");
        if (!trim) {
            return trim.error();
        }
        if (auto st =
                trim->bind(1, static_cast<std::int64_t>(options_.unauthorized.max_rows)).run();
            !st) {
            return st;
        }
        return tx->commit();
    });
}

namespace {

unauthorized_client unauthorized_row(const sqlite_stmt& stmt) {
    return unauthorized_client{
        .client_id = stmt.column_text(0),
        .ip_address = stmt.column_text(1),
        .ts_ms = stmt.column_int64(2),
        .username = stmt.column_text(3),
        .password_provided = stmt.column_int64(4) != 0,
        .tls_used = stmt.column_int64(5) != 0,
        .reason = stmt.column_text(6),
    };
}

}  // namespace

void sqlite_metadata_store::list_unauthorized(unauthorized_query query,
                                              callback<unauthorized_page> done) {
    submit(std::move(done),
           [this, q = std::move(query)](sqlite_db& db) -> result<unauthorized_page> {
               // SQLite's LIKE folds ASCII letters only, as the port promises.
               const std::string pattern = like_contains_pattern(q.client_id_contains);
               const std::int64_t oldest = clock_.epoch_ms() - options_.unauthorized_ttl_ms;
               unauthorized_page page;
               auto count = db.prepare(
                   "SELECT COUNT(*) FROM unauthorized_client WHERE ts > ?"
                   " AND client_id LIKE ? ESCAPE '\\'");
               if (!count) {
                   return count.error();
               }
               count->bind(1, oldest).bind(2, pattern);
               if (auto row = count->step(); !row) {
                   return row.error();
               } else if (*row) {
                   page.total = static_cast<std::size_t>(count->column_int64(0));
               }
               auto stmt = db.prepare(
                   "SELECT client_id, ip_address, ts, username, password_provided, tls_used,"
                   " reason FROM unauthorized_client WHERE ts > ?"
                   " AND client_id LIKE ? ESCAPE '\\'"
                   " ORDER BY ts DESC, client_id LIMIT ? OFFSET ?");
               if (!stmt) {
                   return stmt.error();
               }
               stmt->bind(1, oldest)
                   .bind(2, pattern)
                   .bind(3, to_sql_limit(q.limit))
                   .bind(4, to_sql_limit(q.offset));
               for (;;) {
                   auto row = stmt->step();
                   if (!row) {
                       return row.error();
                   }
                   if (!*row) {
                       return page;
                   }
                   page.rows.push_back(unauthorized_row(*stmt));
               }
           });
}

void sqlite_metadata_store::find_unauthorized(std::string client_id,
                                              callback<std::optional<unauthorized_client>> done) {
    submit(std::move(done),
           [this, id = std::move(client_id)](
               sqlite_db& db) -> result<std::optional<unauthorized_client>> {
               auto stmt = db.prepare(
                   "SELECT client_id, ip_address, ts, username, password_provided, tls_used,"
                   " reason FROM unauthorized_client WHERE client_id = ? AND ts > ?");
               if (!stmt) {
                   return stmt.error();
               }
               stmt->bind(1, id).bind(2, clock_.epoch_ms() - options_.unauthorized_ttl_ms);
               auto row = stmt->step();
               if (!row) {
                   return row.error();
               }
               if (!*row) {
                   return std::optional<unauthorized_client>();
               }
               return std::optional<unauthorized_client>(unauthorized_row(*stmt));
           });
}

void sqlite_metadata_store::delete_unauthorized(std::string client_id, callback<bool> done) {
    submit(std::move(done), [id = std::move(client_id)](sqlite_db& db) -> result<bool> {
        auto stmt = db.prepare("DELETE FROM unauthorized_client WHERE client_id = ?");
        if (!stmt) {
            return {boost::system::in_place_error, stmt.error()};
        }
        if (auto st = stmt->bind(1, id).run(); !st) {
            return {boost::system::in_place_error, st.error()};
        }
        return db.changes() > 0;
    });
}

void sqlite_metadata_store::clear_unauthorized(callback<std::size_t> done) {
    submit(std::move(done), [](sqlite_db& db) -> result<std::size_t> {
        auto stmt = db.prepare("DELETE FROM unauthorized_client");
        if (!stmt) {
            return {boost::system::in_place_error, stmt.error()};
        }
        if (auto st = stmt->run(); !st) {
            return {boost::system::in_place_error, st.error()};
        }
        return static_cast<std::size_t>(db.changes());
    });
}

// --- admin_settings --------------------------------------------------------------------------

void sqlite_metadata_store::put_setting(std::string key, std::string json_value,
                                        done_callback done) {
    submit(
        std::move(done),
        [this, key = std::move(key), value = std::move(json_value)](sqlite_db& db) -> status {
            if (key.empty() || !json::accept(value)) {
                return make_error_code(store_errc::invalid_argument);
            }
            auto stmt = db.prepare(
                "INSERT INTO admin_settings (id, created_time, key, json_value)"
                " VALUES (?, ?, ?, ?)"
                " ON CONFLICT (key) DO UPDATE SET json_value = excluded.json_value");
            if (!stmt) {
                return stmt.error();
            }
            const std::string id = new_uuid();
            return stmt->bind(1, id).bind(2, clock_.epoch_ms()).bind(3, key).bind(4, value).run();
        });
}

void sqlite_metadata_store::get_setting(std::string key,
                                        callback<std::optional<std::string>> done) {
    submit(std::move(done),
           [key = std::move(key)](sqlite_db& db) -> result<std::optional<std::string>> {
               auto stmt = db.prepare("SELECT json_value FROM admin_settings WHERE key = ?");
               if (!stmt) {
                   return stmt.error();
               }
               auto row = stmt->bind(1, key).step();
               if (!row) {
                   return row.error();
               }
               if (!*row) {
                   return std::optional<std::string>();
               }
               return std::optional<std::string>(stmt->column_text(0));
           });
}

// --- statistics series (ts_kv) ----------------------------------------------------------------

void sqlite_metadata_store::save_stats(std::vector<stats_point> points, done_callback done) {
    for (const auto& point : points) {
        if (point.entity_id.empty() || !stats_key_to_id(point.key)) {
            done(make_error_code(store_errc::invalid_argument));
            return;
        }
    }
    submit(std::move(done), [pts = std::move(points)](sqlite_db& db) -> status {
        auto tx = sqlite_transaction::begin(db);
        if (!tx) {
            return tx.error();
        }
        // The dictionary rows name the ids for whoever reads the tables with SQL; the ids
        // themselves are fixed by the port (stats_keys).
        auto dictionary = db.prepare(
            "INSERT INTO ts_kv_dictionary (key, key_id) VALUES (?, ?)"
            " ON CONFLICT DO NOTHING");
        if (!dictionary) {
            return dictionary.error();
        }
        for (const auto& k : stats_keys) {
            if (auto st = dictionary->bind(1, k.key).bind(2, std::int64_t{k.id}).run(); !st) {
                return st;
            }
            dictionary->reset();
        }
        auto stmt = db.prepare(
            "INSERT INTO ts_kv (entity_id, key, ts, long_v) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (entity_id, key, ts) DO UPDATE SET long_v = excluded.long_v");
        if (!stmt) {
            return stmt.error();
        }
        for (const auto& p : pts) {
            stmt->bind(1, p.entity_id)
                .bind(2, std::int64_t{*stats_key_to_id(p.key)})
                .bind(3, p.ts_ms)
                .bind(4, p.value);
            if (auto st = stmt->run(); !st) {
                return st;
            }
            stmt->reset();
        }
        return tx->commit();
    });
}

void sqlite_metadata_store::read_stats(stats_query query, callback<std::vector<stats_point>> done) {
    submit(std::move(done),
           [q = std::move(query)](sqlite_db& db) -> result<std::vector<stats_point>> {
               std::vector<std::int64_t> ids;
               for (const auto& key : q.keys) {
                   if (auto id = stats_key_to_id(key)) {
                       ids.push_back(*id);
                   }
               }
               std::vector<stats_point> points;
               if (ids.empty() || q.limit == 0 || q.end_ms < q.start_ms) {
                   return points;
               }
               std::string placeholders;
               for (std::size_t i = 0; i < ids.size(); ++i) {
                   placeholders += i == 0 ? "?" : ", ?";
               }
               auto stmt = db.prepare(
                   fmt::format("SELECT entity_id, key, ts, long_v FROM ts_kv WHERE key IN ({})"
                               " AND ts >= ? AND ts <= ? AND (? = '' OR entity_id = ?)"
                               " ORDER BY key, ts, entity_id LIMIT ?",
                               placeholders));
               if (!stmt) {
                   return {boost::system::in_place_error, stmt.error()};
               }
               int index = 1;
               for (auto id : ids) {
                   stmt->bind(index++, id);
               }
               stmt->bind(index, q.start_ms)
                   .bind(index + 1, q.end_ms)
                   .bind(index + 2, q.entity_id)
                   .bind(index + 3, q.entity_id)
                   .bind(index + 4, to_sql_limit(q.limit));
               for (;;) {
                   auto row = stmt->step();
                   if (!row) {
                       return {boost::system::in_place_error, row.error()};
                   }
                   if (!*row) {
                       break;
                   }
                   points.push_back(stats_point{
                       .entity_id = stmt->column_text(0),
                       .key = std::string(
                           stats_key_from_id(static_cast<std::int32_t>(stmt->column_int64(1)))),
                       .ts_ms = stmt->column_int64(2),
                       .value = stmt->column_is_null(3) ? 0 : stmt->column_int64(3),
                   });
               }
               return points;
           });
}

void sqlite_metadata_store::delete_stats_before(std::int64_t ts_ms, callback<std::size_t> done) {
    submit(std::move(done), [ts_ms](sqlite_db& db) -> result<std::size_t> {
        auto stmt = db.prepare("DELETE FROM ts_kv WHERE ts < ?");
        if (!stmt) {
            return {boost::system::in_place_error, stmt.error()};
        }
        if (auto st = stmt->bind(1, ts_ms).run(); !st) {
            return {boost::system::in_place_error, st.error()};
        }
        return static_cast<std::size_t>(db.changes());
    });
}

}  // namespace starling::adapters::embedded
