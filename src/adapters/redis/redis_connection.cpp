#include "adapters/redis/redis_connection.h"

#include "adapters/redis/redis_errc.h"

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
        redisFree(context_);
        context_ = nullptr;
    }
}

std::error_code redis_connection::fail(std::error_code ec, std::string what) {
    last_error_ = std::move(what);
    close();
    return ec;
}

status redis_connection::connect() {
    close();
    errno = 0;
    context_ = redisConnectWithTimeout(endpoint_.host.c_str(), endpoint_.port,
                                       to_timeval(endpoint_.connect_timeout));
    const int saved_errno = errno;
    if (context_ == nullptr) {
        return fail(redis_errc::not_connected, "cannot allocate a hiredis context");
    }
    if (context_->err != 0) {
        // Refused or unreachable: "not connected"; a connect that ran out of time: timed_out.
        const auto ec = classify(*context_, saved_errno) == redis_errc::timed_out
                            ? redis_errc::timed_out
                            : redis_errc::not_connected;
        return fail(ec, fmt::format("connect to {}:{}: {}", endpoint_.host, endpoint_.port,
                                    context_->errstr));
    }
    if (redisSetTimeout(context_, to_timeval(endpoint_.command_timeout)) != REDIS_OK) {
        return fail(redis_errc::io_error, "cannot set the socket timeout");
    }
    (void)redisEnableKeepAlive(context_);

    auto handshake = [this](std::span<const std::string_view> args,
                            std::string_view what) -> status {
        auto reply = command(args);
        if (!reply) {
            return reply.error();
        }
        if (is_error_reply(**reply)) {
            return fail(redis_errc::auth_failed,
                        fmt::format("{} refused by {}:{}: {}", what, endpoint_.host, endpoint_.port,
                                    reply_text(**reply)));
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
            return st;
        }
    }
    if (endpoint_.db != 0) {
        const auto db = std::to_string(endpoint_.db);
        const std::string_view select[] = {"SELECT", db};
        if (auto st = handshake(select, "SELECT " + db); !st) {
            return st;
        }
    }
    return {};
}

result<reply_ptr> redis_connection::command(std::span<const std::string_view> args) {
    if (context_ == nullptr) {
        return make_error_code(redis_errc::not_connected);
    }
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    argv.reserve(args.size());
    lengths.reserve(args.size());
    for (const auto& arg : args) {
        argv.push_back(arg.data());
        lengths.push_back(arg.size());
    }
    errno = 0;
    auto* raw = static_cast<redisReply*>(
        redisCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()));
    const int saved_errno = errno;
    if (raw == nullptr) {
        const auto ec = classify(*context_, saved_errno);
        return fail(ec, fmt::format("{}:{}: {}", endpoint_.host, endpoint_.port, context_->errstr));
    }
    return reply_ptr(raw);
}

}  // namespace starling::adapters::redis
