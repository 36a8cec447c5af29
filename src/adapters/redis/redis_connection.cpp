#include "adapters/redis/redis_connection.h"

#include "adapters/redis/redis_errc.h"
#include "base/text.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <vector>

namespace starling::adapters::redis {

namespace {

timeval to_timeval(std::chrono::milliseconds ms) {
    timeval tv{};
    tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
    tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
    return tv;
}

// hiredis reports a socket timeout as REDIS_ERR_IO with errno EAGAIN (SO_RCVTIMEO expired) and
// a connect timeout as REDIS_ERR_IO with ETIMEDOUT / EINPROGRESS.
redis_errc classify(const redisContext& ctx, int saved_errno) {
    if (ctx.err == REDIS_ERR_IO && (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK ||
                                    saved_errno == ETIMEDOUT || saved_errno == EINPROGRESS)) {
        return redis_errc::timed_out;
    }
    return redis_errc::io_error;
}

// One command, blocking; nullptr on a transport failure (the context's errstr says why).
redisReply* raw_command(redisContext* context, std::span<const std::string_view> args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    argv.reserve(args.size());
    lengths.reserve(args.size());
    for (const auto& arg : args) {
        argv.push_back(arg.data());
        lengths.push_back(arg.size());
    }
    return static_cast<redisReply*>(
        redisCommandArgv(context, static_cast<int>(argv.size()), argv.data(), lengths.data()));
}

}  // namespace

void reply_deleter::operator()(redisReply* reply) const { freeReplyObject(reply); }

std::string_view reply_text(const redisReply& reply) {
    if (reply.type == REDIS_REPLY_STRING || reply.type == REDIS_REPLY_STATUS ||
        reply.type == REDIS_REPLY_ERROR) {
        return {reply.str, reply.len};
    }
    return {};
}

bool is_error_reply(const redisReply& reply) { return reply.type == REDIS_REPLY_ERROR; }

redis_connection::redis_connection(redis_endpoint endpoint) : endpoint_(std::move(endpoint)) {}

redis_connection::~redis_connection() { close(); }

void redis_connection::close() {
    if (context_ != nullptr) {
        free_context(context_);
        context_ = nullptr;
    }
    for (auto& l : links_) {
        if (l.context != nullptr) {
            free_context(l.context);
            l.context = nullptr;
        }
    }
    cluster_up_ = false;
}

std::error_code redis_connection::fail(std::error_code ec, std::string what) {
    last_error_ = std::move(what);
    close();
    return ec;
}

std::string redis_connection::address() const {
    if (!endpoint_.cluster.nodes.empty()) {
        if (current_ < links_.size()) {
            return fmt::format("cluster node {}:{}", links_[current_].host, links_[current_].port);
        }
        return fmt::format("cluster seeds {}", seed_list(endpoint_.cluster));
    }
    const auto where = fmt::format("{}:{}", host_.empty() ? endpoint_.host : host_,
                                   host_.empty() ? endpoint_.port : port_);
    if (endpoint_.sentinel.master.empty()) {
        return where;
    }
    return fmt::format("{} at {}", endpoint_.sentinel.master, host_.empty() ? "?" : where);
}

std::vector<std::string> redis_connection::cluster_masters() const {
    std::vector<std::string> out;
    for (const auto& l : links_) {
        out.push_back(fmt::format("{}:{}", l.host, l.port));
    }
    return out;
}

status redis_connection::connect() {
    close();
    if (!endpoint_.cluster.nodes.empty()) {
        return connect_cluster();
    }
    if (endpoint_.sentinel.master.empty()) {
        return open(endpoint_.host, endpoint_.port);
    }
    auto master = discover_master();
    if (!master) {
        return master.error();
    }
    if (auto st = open(master->first, master->second); !st) {
        return st;
    }
    return check_master();
}

result<redisContext*> redis_connection::dial(const std::string& host, std::uint16_t port,
                                             bool select_db) {
    // With TLS the bridge makes the connection and hiredis gets its plain end. Declared before
    // the context so that it is destroyed after it (the bridge outlives its hiredis end).
    std::unique_ptr<tls_bridge> bridge;
    if (endpoint_.tls.enabled) {
        if (!tls_context_) {
            auto made = make_tls_context(endpoint_.tls, last_error_);
            if (!made) {
                return made.error();
            }
            tls_context_ = std::move(made.value());
        }
        auto opened =
            tls_bridge::open(tls_context_, host, port, endpoint_.connect_timeout, last_error_);
        if (!opened) {
            return opened.error();
        }
        bridge = std::move(opened.value());
    }
    errno = 0;
    std::unique_ptr<redisContext, void (*)(redisContext*)> context(
        bridge ? redisConnectFd(bridge->take_plain_fd())
               : redisConnectWithTimeout(host.c_str(), port, to_timeval(endpoint_.connect_timeout)),
        redisFree);
    const int saved_errno = errno;
    if (!context) {
        last_error_ = "cannot allocate a hiredis context";
        return make_error_code(redis_errc::not_connected);
    }
    if (context->err != 0) {
        // Refused or unreachable: "not connected"; a connect that ran out of time: timed_out.
        last_error_ = fmt::format("connect to {}:{}: {}", host, port, context->errstr);
        return make_error_code(classify(*context, saved_errno) == redis_errc::timed_out
                                   ? redis_errc::timed_out
                                   : redis_errc::not_connected);
    }
    if (redisSetTimeout(context.get(), to_timeval(endpoint_.command_timeout)) != REDIS_OK) {
        last_error_ = "cannot set the socket timeout";
        return make_error_code(redis_errc::io_error);
    }
    if (!bridge) {
        // (On the bridge's socketpair keep-alive does not apply, and hiredis would mark the
        // context failed; the bridge sets it on its TCP connection.)
        (void)redisEnableKeepAlive(context.get());
    }

    auto handshake = [&](std::span<const std::string_view> args, std::string_view what) -> status {
        errno = 0;
        reply_ptr reply(raw_command(context.get(), args));
        const int errno_after = errno;
        if (!reply) {
            last_error_ = fmt::format("{} on {}:{}: {}", what, host, port, context->errstr);
            return make_error_code(classify(*context, errno_after));
        }
        if (is_error_reply(*reply)) {
            last_error_ =
                fmt::format("{} refused by {}:{}: {}", what, host, port, reply_text(*reply));
            return make_error_code(redis_errc::auth_failed);
        }
        return {};
    };
    if (!endpoint_.password.empty()) {
        std::vector<std::string_view> auth{"AUTH"};
        if (!endpoint_.username.empty()) {
            auth.emplace_back(endpoint_.username);
        }
        auth.emplace_back(endpoint_.password);
        if (auto st = handshake(auth, "AUTH"); !st) {
            return st.error();
        }
    }
    if (select_db && endpoint_.db != 0) {
        const auto db = std::to_string(endpoint_.db);
        const std::string_view select[] = {"SELECT", db};
        if (auto st = handshake(select, "SELECT " + db); !st) {
            return st.error();
        }
    }
    if (bridge) {
        bridges_[context.get()] = std::move(bridge);
    }
    return context.release();
}

void redis_connection::free_context(redisContext* context) {
    redisFree(context);  // first: the bridge's pump then sees its end closed
    bridges_.erase(context);
}

status redis_connection::open(const std::string& host, std::uint16_t port) {
    close();
    host_ = host;
    port_ = port;
    auto context = dial(host, port, true);
    if (!context) {
        return context.error();
    }
    context_ = *context;
    return {};
}

result<std::pair<std::string, std::uint16_t>> redis_connection::discover_master() {
    const auto& s = endpoint_.sentinel;
    std::string errors;
    for (std::size_t i = 0; i < s.sentinels.size(); ++i) {
        const std::size_t index = (next_sentinel_ + i) % s.sentinels.size();
        const auto& [host, port] = s.sentinels[index];
        errno = 0;
        std::unique_ptr<redisContext, void (*)(redisContext*)> sentinel(
            redisConnectWithTimeout(host.c_str(), port, to_timeval(endpoint_.connect_timeout)),
            redisFree);
        auto ask = [&sentinel](std::vector<std::string_view> args) -> reply_ptr {
            std::vector<const char*> argv;
            std::vector<std::size_t> lengths;
            for (const auto& arg : args) {
                argv.push_back(arg.data());
                lengths.push_back(arg.size());
            }
            return reply_ptr(static_cast<redisReply*>(redisCommandArgv(
                sentinel.get(), static_cast<int>(argv.size()), argv.data(), lengths.data())));
        };
        std::string why;
        if (!sentinel || sentinel->err != 0) {
            why = sentinel ? sentinel->errstr : "cannot allocate a hiredis context";
        } else if (redisSetTimeout(sentinel.get(), to_timeval(endpoint_.command_timeout)) !=
                   REDIS_OK) {
            why = "cannot set the socket timeout";
        } else if (reply_ptr auth = s.password.empty() ? nullptr : ask({"AUTH", s.password});
                   !s.password.empty() && (!auth || is_error_reply(*auth))) {
            why = auth ? fmt::format("AUTH refused: {}", reply_text(*auth)) : sentinel->errstr;
        } else if (reply_ptr reply = ask({"SENTINEL", "get-master-addr-by-name", s.master});
                   !reply) {
            why = sentinel->errstr;
        } else if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
                   reply->element[0]->type == REDIS_REPLY_STRING &&
                   reply->element[1]->type == REDIS_REPLY_STRING) {
            const std::string master_host(reply_text(*reply->element[0]));
            const auto master_port =
                base::parse_number<std::uint16_t>(base::trim(reply_text(*reply->element[1])));
            if (master_port && *master_port != 0) {
                next_sentinel_ = index;
                return std::pair{master_host, *master_port};
            }
            why = fmt::format("answered an invalid port \"{}\"", reply_text(*reply->element[1]));
        } else if (is_error_reply(*reply)) {
            why = std::string(reply_text(*reply));
        } else {
            why = fmt::format("does not know a master named \"{}\"", s.master);
        }
        errors += fmt::format("{}sentinel {}:{}: {}", errors.empty() ? "" : "; ", host, port, why);
    }
    host_.clear();
    return fail(redis_errc::not_connected,
                fmt::format("no sentinel gave the address of master \"{}\" ({})", s.master,
                            errors.empty() ? "no sentinels configured" : errors));
}

status redis_connection::check_master() {
    // Right after a failover a sentinel may still name the old master, now a replica: refuse it
    // and let the owner's next attempt ask again.
    const std::string_view role[] = {"ROLE"};
    auto reply = command(role);
    if (!reply) {
        return reply.error();
    }
    const redisReply& r = **reply;
    if (r.type == REDIS_REPLY_ARRAY && r.elements > 0 &&
        reply_text(*r.element[0]) == std::string_view("master")) {
        return {};
    }
    return fail(redis_errc::not_connected,
                fmt::format("{}:{} is not the master of \"{}\" (a failover in progress?)", host_,
                            port_, endpoint_.sentinel.master));
}

result<reply_ptr> redis_connection::exec(redisContext* context, const std::string& host,
                                         std::uint16_t port,
                                         std::span<const std::string_view> args) {
    errno = 0;
    reply_ptr reply(raw_command(context, args));
    const int saved_errno = errno;
    if (!reply) {
        const auto ec = classify(*context, saved_errno);
        return fail(ec, fmt::format("{}:{}: {}", host, port, context->errstr));
    }
    if (is_error_reply(*reply) && reply_text(*reply).starts_with("READONLY")) {
        // A master demoted by a failover: the write did not run. Reconnect (through the
        // sentinels, or the cluster's new slot map) rather than hand the caller a server error
        // for every call.
        return fail(redis_errc::io_error, fmt::format("{}:{} is a read-only replica now: {}", host,
                                                      port, reply_text(*reply)));
    }
    return reply;
}

result<reply_ptr> redis_connection::command(std::span<const std::string_view> args) {
    if (!endpoint_.cluster.nodes.empty()) {
        return cluster_command(args);
    }
    if (context_ == nullptr) {
        return make_error_code(redis_errc::not_connected);
    }
    return exec(context_, host_, port_, args);
}

}  // namespace starling::adapters::redis
