#include "adapters/redis/tls_bridge.h"

#include "adapters/redis/redis_errc.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace starling::adapters::redis {

class tls_context {
  public:
    explicit tls_context(SSL_CTX* ctx, bool verify) : ctx_(ctx), verify_(verify) {}
    ~tls_context() { SSL_CTX_free(ctx_); }
    tls_context(const tls_context&) = delete;
    tls_context& operator=(const tls_context&) = delete;
    SSL_CTX* get() const { return ctx_; }
    bool verify() const { return verify_; }

  private:
    SSL_CTX* ctx_;
    bool verify_;
};

namespace {

std::string openssl_errors() {
    std::string out;
    while (const unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        out += out.empty() ? "" : "; ";
        out += buf;
    }
    return out.empty() ? std::string("unknown OpenSSL error") : out;
}

using clock_type = std::chrono::steady_clock;

int remaining_ms(clock_type::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
    return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

// A non-blocking TCP connection to host:port within the deadline; -1 with `error` set.
int connect_tcp(const std::string& host, std::uint16_t port, clock_type::time_point deadline,
                std::string& error) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const auto service = std::to_string(port);
    if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
        error = fmt::format("cannot resolve {}: {}", host, ::gai_strerror(rc));
        return -1;
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> list(found, ::freeaddrinfo);
    error = fmt::format("connect to {}:{}: no address", host, port);
    for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
        const int fd =
            ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            continue;
        }
        const int on = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);  // finds a dead peer
        const int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc == 0) {
            return fd;
        }
        if (errno == EINPROGRESS) {
            pollfd p{fd, POLLOUT, 0};
            const int ready = ::poll(&p, 1, remaining_ms(deadline));
            int so_error = ready > 0 ? 0 : ETIMEDOUT;
            socklen_t len = sizeof so_error;
            if (ready > 0) {
                ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
            }
            if (so_error == 0) {
                return fd;
            }
            error = fmt::format("connect to {}:{}: {}", host, port, std::strerror(so_error));
        } else {
            error = fmt::format("connect to {}:{}: {}", host, port, std::strerror(errno));
        }
        ::close(fd);
    }
    return -1;
}

}  // namespace

result<std::shared_ptr<tls_context>> make_tls_context(const redis_tls& tls, std::string& error) {
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == nullptr) {
        error = openssl_errors();
        return make_error_code(redis_errc::invalid_config);
    }
    auto context = std::make_shared<tls_context>(ctx, tls.verify_peer);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    const bool trusted =
        tls.ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) == 1
                            : SSL_CTX_load_verify_locations(ctx, tls.ca_file.c_str(), nullptr) == 1;
    if (!trusted) {
        error = fmt::format("redis.ssl.credentials.cert_file: cannot load \"{}\": {}", tls.ca_file,
                            openssl_errors());
        return make_error_code(redis_errc::invalid_config);
    }
    if (!tls.cert_file.empty()) {
        if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
            error = fmt::format("redis.ssl.credentials.user_cert_file: cannot load \"{}\": {}",
                                tls.cert_file, openssl_errors());
            return make_error_code(redis_errc::invalid_config);
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            error = fmt::format("redis.ssl.credentials.user_key_file: cannot load \"{}\": {}",
                                tls.key_file, openssl_errors());
            return make_error_code(redis_errc::invalid_config);
        }
    }
    SSL_CTX_set_verify(ctx, tls.verify_peer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nullptr);
    return context;
}

result<std::unique_ptr<tls_bridge>> tls_bridge::open(const std::shared_ptr<tls_context>& context,
                                                     const std::string& host, std::uint16_t port,
                                                     std::chrono::milliseconds timeout,
                                                     std::string& error) {
    const auto deadline = clock_type::now() + timeout;
    const int tcp = connect_tcp(host, port, deadline, error);
    if (tcp < 0) {
        return make_error_code(remaining_ms(deadline) == 0 ? redis_errc::timed_out
                                                           : redis_errc::not_connected);
    }
    SSL* ssl = SSL_new(context->get());
    auto give_up = [&](redis_errc ec, std::string why) -> result<std::unique_ptr<tls_bridge>> {
        error = std::move(why);
        if (ssl != nullptr) {
            SSL_free(ssl);
        }
        ::close(tcp);
        return make_error_code(ec);
    };
    if (ssl == nullptr || SSL_set_fd(ssl, tcp) != 1) {
        return give_up(redis_errc::not_connected, openssl_errors());
    }
    in6_addr ip{};
    const bool is_ip = ::inet_pton(AF_INET, host.c_str(), &ip) == 1 ||
                       ::inet_pton(AF_INET6, host.c_str(), &ip) == 1;
    if (!is_ip) {
        SSL_set_tlsext_host_name(ssl, host.c_str());  // SNI
    }
    if (context->verify()) {
        X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
        const int set = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
                              : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
        if (set != 1) {
            return give_up(redis_errc::not_connected, openssl_errors());
        }
    }
    for (;;) {
        ERR_clear_error();
        const int rc = SSL_connect(ssl);
        if (rc == 1) {
            break;
        }
        const int why = SSL_get_error(ssl, rc);
        if (why != SSL_ERROR_WANT_READ && why != SSL_ERROR_WANT_WRITE) {
            const long verify = SSL_get_verify_result(ssl);
            return give_up(redis_errc::not_connected,
                           fmt::format("TLS handshake with {}:{} failed: {}", host, port,
                                       verify != X509_V_OK ? X509_verify_cert_error_string(verify)
                                                           : openssl_errors()));
        }
        pollfd p{tcp, static_cast<short>(why == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT), 0};
        if (::poll(&p, 1, remaining_ms(deadline)) <= 0) {
            return give_up(redis_errc::timed_out,
                           fmt::format("TLS handshake with {}:{} timed out", host, port));
        }
    }
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        return give_up(redis_errc::not_connected, std::strerror(errno));
    }
    return std::unique_ptr<tls_bridge>(new tls_bridge(ssl, tcp, pair[0], pair[1]));
}

tls_bridge::tls_bridge(SSL* ssl, int tcp_fd, int plain_fd, int pump_fd)
    : ssl_(ssl), tcp_fd_(tcp_fd), plain_fd_(plain_fd), pump_fd_(pump_fd) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) {
        wake_[0] = wake_[1] = -1;
    }
    ::fcntl(pump_fd_, F_SETFL, ::fcntl(pump_fd_, F_GETFL) | O_NONBLOCK);
    thread_ = std::thread([this] { pump(); });
}

tls_bridge::~tls_bridge() {
    if (wake_[1] >= 0) {
        const char byte = 1;
        [[maybe_unused]] const auto n = ::write(wake_[1], &byte, 1);
    }
    if (thread_.joinable()) {
        thread_.join();
    }
    SSL_free(ssl_);
    ::close(tcp_fd_);
    ::close(pump_fd_);
    if (plain_fd_ >= 0) {
        ::close(plain_fd_);
    }
    for (const int fd : wake_) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

int tls_bridge::take_plain_fd() { return std::exchange(plain_fd_, -1); }

// Moves bytes both ways until either side ends: plain → TLS as SSL_write allows, TLS → plain
// as the socketpair takes them. Everything is non-blocking; poll waits for whatever the next
// step needs.
void tls_bridge::pump() {
    std::string to_tls;
    std::string to_plain;
    bool tls_wants_write = false;  // the last SSL call needs the socket writable
    char buf[16384];
    for (;;) {
        pollfd fds[3] = {
            {pump_fd_,
             static_cast<short>((to_tls.empty() ? POLLIN : 0) | (to_plain.empty() ? 0 : POLLOUT)),
             0},
            {tcp_fd_, static_cast<short>(POLLIN | (tls_wants_write ? POLLOUT : 0)), 0},
            {wake_[0], POLLIN, 0}};
        if (::poll(fds, wake_[0] >= 0 ? 3 : 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (wake_[0] >= 0 && (fds[2].revents & POLLIN) != 0) {
            break;  // the owner is going
        }
        if (to_tls.empty() && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            const auto n = ::read(pump_fd_, buf, sizeof buf);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                break;  // hiredis closed its end
            }
            if (n > 0) {
                to_tls.assign(buf, static_cast<std::size_t>(n));
            }
        }
        tls_wants_write = false;
        if (!to_tls.empty()) {
            ERR_clear_error();
            const int n = SSL_write(ssl_, to_tls.data(), static_cast<int>(to_tls.size()));
            if (n > 0) {
                to_tls.erase(0, static_cast<std::size_t>(n));
            } else {
                const int why = SSL_get_error(ssl_, n);
                if (why == SSL_ERROR_WANT_WRITE) {
                    tls_wants_write = true;
                } else if (why != SSL_ERROR_WANT_READ) {
                    break;
                }
            }
        }
        bool ended = false;
        while (to_plain.size() < (1U << 22)) {  // at most 4 MiB waiting for hiredis
            ERR_clear_error();
            const int n = SSL_read(ssl_, buf, sizeof buf);
            if (n > 0) {
                to_plain.append(buf, static_cast<std::size_t>(n));
                continue;
            }
            const int why = SSL_get_error(ssl_, n);
            if (why == SSL_ERROR_WANT_WRITE) {
                tls_wants_write = true;
            } else if (why != SSL_ERROR_WANT_READ) {
                ended = true;  // the server closed the session, or the network broke
            }
            break;
        }
        while (!to_plain.empty()) {
            // send, not write: a closed far end must not raise SIGPIPE in the process.
            const auto n = ::send(pump_fd_, to_plain.data(), to_plain.size(), MSG_NOSIGNAL);
            if (n > 0) {
                to_plain.erase(0, static_cast<std::size_t>(n));
                continue;
            }
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                break;
            }
            ended = true;
            break;
        }
        if (ended) {
            // A reply cut short by the end is as good as none: hiredis sees EOF either way
            // and its owner treats the command as failed (never as done).
            break;
        }
    }
    // hiredis sees EOF: a lost connection, which its owner handles as any other.
    ::shutdown(pump_fd_, SHUT_RDWR);
}

}  // namespace starling::adapters::redis
