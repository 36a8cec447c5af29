#pragma once

// tcp_proxy: a loopback TCP forwarder a test can cut and restore, to play a database that goes
// away and comes back without touching the real server. Each accepted connection is paired
// with a new connection to the target and pumped both ways by two threads.
//
// Lifecycle: the constructor binds (port 0 = any free port, or a given port to come back on)
// and starts accepting; stop() closes the listener and every forwarded connection and joins
// all threads (idempotent; the destructor calls it). Test-only; thread-safe.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace starling::testing {

class tcp_proxy {
  public:
    tcp_proxy(std::uint16_t target_port, std::uint16_t listen_port = 0) : target_(target_port) {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        const int one = 1;
        ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        sockaddr_in addr = loopback(listen_port);
        if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
            ::listen(listen_fd_, 64) != 0) {
            ::close(listen_fd_);
            throw std::runtime_error("tcp_proxy: cannot listen");
        }
        socklen_t len = sizeof addr;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    ~tcp_proxy() { stop(); }
    tcp_proxy(const tcp_proxy&) = delete;
    tcp_proxy& operator=(const tcp_proxy&) = delete;

    std::uint16_t port() const { return port_; }

    void stop() {
        if (stopped_.exchange(true)) {
            return;
        }
        ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
        acceptor_.join();
        ::close(listen_fd_);
        std::vector<std::thread> pumps;
        {
            std::lock_guard lock(mutex_);
            for (const int fd : fds_) {
                ::shutdown(fd, SHUT_RDWR);  // wakes the pumps' read()s
            }
            pumps.swap(pumps_);
        }
        for (auto& t : pumps) {
            t.join();
        }
        for (const int fd : fds_) {
            ::close(fd);
        }
        fds_.clear();
    }

  private:
    static sockaddr_in loopback(std::uint16_t port) {
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return addr;
    }

    void accept_loop() {
        for (;;) {
            const int client = ::accept(listen_fd_, nullptr, nullptr);
            if (client < 0) {
                return;  // listener shut down
            }
            const int upstream = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in addr = loopback(target_);
            if (::connect(upstream, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
                ::close(upstream);
                ::close(client);
                continue;
            }
            std::lock_guard lock(mutex_);
            if (stopped_) {
                ::close(upstream);
                ::close(client);
                return;
            }
            fds_.push_back(client);
            fds_.push_back(upstream);
            pumps_.emplace_back([client, upstream] { pump(client, upstream); });
            pumps_.emplace_back([client, upstream] { pump(upstream, client); });
        }
    }

    static void pump(int from, int to) {
        char buffer[16384];
        for (;;) {
            const ssize_t n = ::read(from, buffer, sizeof buffer);
            if (n <= 0) {
                break;
            }
            ssize_t sent = 0;
            while (sent < n) {
                const ssize_t w =
                    ::send(to, buffer + sent, static_cast<std::size_t>(n - sent), MSG_NOSIGNAL);
                if (w <= 0) {
                    ::shutdown(from, SHUT_RDWR);
                    return;
                }
                sent += w;
            }
        }
        ::shutdown(to, SHUT_RDWR);
    }

    const std::uint16_t target_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopped_{false};
    std::thread acceptor_;
    std::mutex mutex_;
    std::vector<int> fds_;            // guarded by mutex_ until stop()
    std::vector<std::thread> pumps_;  // guarded by mutex_
};

}  // namespace starling::testing
