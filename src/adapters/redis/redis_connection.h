#pragma once

// redis_connection: one blocking hiredis connection, with AUTH and SELECT done at connect, a
// socket timeout on every command, and reconnection left to the owner.
//
// Standalone: it connects to host:port. Sentinel (endpoint.sentinel.master set): each
// connect() first asks the sentinels, in turn, for the current master's address (SENTINEL
// get-master-addr-by-name), connects there and checks with ROLE that it is a master, so a
// reconnect after a failover reaches the promoted replica. A former master that is now a
// replica answers writes with READONLY: command() treats that as a lost connection (closed, an
// io_error), so the owner reconnects — through the sentinels — as after any outage.
//
// Cluster (endpoint.cluster.nodes set): connect() asks the seed nodes, in turn, for the slot
// map (CLUSTER SLOTS) and connects to every master. command() sends each command to the master
// owning its key's slot (the key is the first key of EVAL/EVALSHA, else the first argument):
// MOVED refreshes the map and retries there, ASK retries once on the named node after ASKING,
// at most cluster.max_redirects times. SCRIPT goes to every master (a script must be loaded
// wherever EVALSHA may land); other keyless commands (PING, WAIT) go to the master used last,
// which is where WAIT must ask. The map is also re-read every cluster.topology_refresh. A
// transport failure on any master closes every link, so the owner's reconnect reads the map
// afresh from the seeds (a node restarted with a new address, a failover) — stale topology
// never outlives one failed call.
//
// Lifecycle: constructed disconnected; connect() opens it (bounded by connect_timeout);
// a transport failure (EOF, reset, timeout) closes it and every later command fails with
// redis_errc::not_connected until connect() succeeds again. Destruction closes it.
// Ownership and concurrency: not thread-safe; it belongs to the one worker thread that uses it
// (redis_device_inbox gives each worker its own). Blocking calls are the point: the worker
// thread exists so that no I/O or actor thread ever waits on Redis.

#include "adapters/redis/tls_bridge.h"
#include "base/result.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

struct redisContext;
struct redisReply;

namespace starling::adapters::redis {

// Redis Sentinel (redis.connection.type: sentinel): the master's name and the sentinels.
struct redis_sentinel {
    std::string master;  // empty: standalone
    std::vector<std::pair<std::string, std::uint16_t>> sentinels;
    std::string password;  // AUTH to the sentinels; empty: none
};

// Redis Cluster (redis.connection.type: cluster): the seed nodes and the redirect bound.
struct redis_cluster {
    std::vector<std::pair<std::string, std::uint16_t>> nodes;  // empty: not a cluster
    std::uint32_t max_redirects = 12;                          // MOVED/ASK hops per command
    std::chrono::milliseconds topology_refresh{60000};         // re-read CLUSTER SLOTS; 0 = never
};

// The Redis Cluster hash slot of a key (CRC16/XMODEM mod 16384 of the key, or of its hash tag:
// the text between the first '{' and the next '}' when that is not empty).
std::uint16_t key_slot(std::string_view key);
// "host:port,host:port" of the seed nodes, for log lines.
std::string seed_list(const redis_cluster& cluster);

// Where a config points, naming its mode, for start-up errors: "redis.standalone h:p",
// "redis.sentinel master \"m\"" or "redis.cluster nodes h:p,h:p".
std::string describe_endpoint(std::string_view host, std::uint16_t port,
                              const redis_sentinel& sentinel, const redis_cluster& cluster);

struct redis_endpoint {
    std::string host = "localhost";
    std::uint16_t port = 6379;
    std::uint32_t db = 0;
    std::string username;  // empty: AUTH <password> (Redis < 6 style); else AUTH <user> <pass>
    std::string password;  // empty: no AUTH
    std::chrono::milliseconds connect_timeout{30000};
    std::chrono::milliseconds command_timeout{60000};
    redis_sentinel sentinel;  // master set: host and port are unused
    redis_cluster cluster;    // nodes set: host and port are unused
    redis_tls tls;            // enabled: TLS to every server (not to the sentinels)
};

struct reply_deleter {
    void operator()(redisReply* reply) const;
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

class redis_connection {
  public:
    explicit redis_connection(redis_endpoint endpoint);
    ~redis_connection();
    redis_connection(const redis_connection&) = delete;
    redis_connection& operator=(const redis_connection&) = delete;

    // Connects, authenticates and selects the database; closes a previous connection first.
    status connect();
    void close();
    bool connected() const { return context_ != nullptr || cluster_up_; }

    // Sends one command and waits for its reply. A Redis error reply (REDIS_REPLY_ERROR) is a
    // *successful* result here, so the caller can react to it (NOSCRIPT); a transport failure
    // returns an error and closes the connection.
    result<reply_ptr> command(std::span<const std::string_view> args);

    // The text of the last connect or transport failure, for log lines.
    const std::string& last_error() const { return last_error_; }
    const redis_endpoint& endpoint() const { return endpoint_; }
    // "host:port" of the server connected to (or last tried), for log lines; in sentinel mode
    // "<master name> at host:port", in cluster mode "cluster node host:port".
    std::string address() const;
    // Cluster mode: the masters the slot map names (host:port), for tests and log lines.
    std::vector<std::string> cluster_masters() const;
    // Cluster mode: how often MOVED and ASK were followed, and the map re-read.
    std::uint64_t redirects() const { return redirects_; }
    std::uint64_t topology_refreshes() const { return refreshes_; }

  private:
    // One server connection of the cluster mode: a master the slot map names.
    struct link {
        std::string host;
        std::uint16_t port = 0;
        redisContext* context = nullptr;
    };
    static constexpr std::uint16_t no_node = 0xFFFF;

    std::error_code fail(std::error_code ec, std::string what);
    // Sentinel mode: the master's address from the first sentinel that knows it.
    result<std::pair<std::string, std::uint16_t>> discover_master();
    // A connected, authenticated context (and SELECTed unless `select_db` is false); on failure
    // nothing stays open and last_error_ says why.
    result<redisContext*> dial(const std::string& host, std::uint16_t port, bool select_db);
    // One command on `context`; a transport failure closes every connection.
    result<reply_ptr> exec(redisContext* context, const std::string& host, std::uint16_t port,
                           std::span<const std::string_view> args);
    status open(const std::string& host, std::uint16_t port);
    status check_master();
    // redisFree, and the TLS bridge behind the context if there is one.
    void free_context(redisContext* context);

    // Cluster mode.
    status connect_cluster();
    // Rebuilds the slot map from a CLUSTER SLOTS reply and connects to every master in it.
    status apply_slots(const redisReply& reply, const std::string& from);
    status refresh_topology();
    result<std::size_t> link_to(const std::string& host, std::uint16_t port);
    result<reply_ptr> cluster_command(std::span<const std::string_view> args);
    result<reply_ptr> on_link(std::size_t node, std::span<const std::string_view> args,
                              bool asking);

    redis_endpoint endpoint_;
    redisContext* context_ = nullptr;
    std::string last_error_;
    std::string host_;  // where connect() went last
    std::uint16_t port_ = 0;
    std::size_t next_sentinel_ = 0;             // the one that answered last is asked first
    std::shared_ptr<tls_context> tls_context_;  // made on the first TLS connect
    std::unordered_map<redisContext*, std::unique_ptr<tls_bridge>> bridges_;

    bool cluster_up_ = false;
    std::vector<link> links_;           // the masters, in CLUSTER SLOTS order
    std::vector<std::uint16_t> slots_;  // slot → index in links_ (no_node: unassigned)
    std::size_t current_ = 0;           // the master used last (keyless commands go there)
    std::size_t next_seed_ = 0;         // the seed that answered last is asked first
    std::chrono::steady_clock::time_point refresh_due_{};
    std::uint64_t redirects_ = 0;
    std::uint64_t refreshes_ = 0;
};

// The reply's text (status, error or bulk string); empty for other types.
std::string_view reply_text(const redisReply& reply);
bool is_error_reply(const redisReply& reply);

}  // namespace starling::adapters::redis
