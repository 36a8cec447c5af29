#pragma once

// tls_bridge: TLS to a Redis server for a hiredis that has none (Debian 12 ships hiredis 0.14;
// TLS came in 1.0). It opens the TCP connection and the TLS session with OpenSSL, makes a
// socketpair, and pumps bytes between the pair's far end and the TLS session on a thread of its
// own; hiredis gets the near end through redisConnectFd and speaks plain RESP over it, with its
// usual socket timeouts (they work on a socketpair).
//
// Lifecycle: open() connects (bounded by the timeout) and starts the pump; the pump stops when
// either side closes — hiredis closing its end (redisFree), or the server or network ending the
// TLS session, which hiredis then sees as EOF, i.e. a lost connection. The destructor closes
// the far end and joins the pump. Free the hiredis context first, then the bridge.

#include "base/result.h"

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace starling::adapters::redis {

// redis.ssl.*: TLS to Redis (TBMQ's keys).
struct redis_tls {
    bool enabled = false;
    std::string ca_file;      // trusted CA(s), PEM; empty: the system's default store
    std::string cert_file;    // client certificate, PEM (mutual TLS); empty: none
    std::string key_file;     // its private key, PEM
    bool verify_peer = true;  // check the server's chain and name (host name or IP)
};

class tls_context;

// An OpenSSL client context made once per configuration (the files are read here).
result<std::shared_ptr<tls_context>> make_tls_context(const redis_tls& tls, std::string& error);

class tls_bridge {
  public:
    // Connects to host:port, completes the TLS handshake (verifying `host` when the context
    // verifies) and starts the pump. `error` says why on failure.
    static result<std::unique_ptr<tls_bridge>> open(const std::shared_ptr<tls_context>& context,
                                                    const std::string& host, std::uint16_t port,
                                                    std::chrono::milliseconds timeout,
                                                    std::string& error);
    ~tls_bridge();
    tls_bridge(const tls_bridge&) = delete;
    tls_bridge& operator=(const tls_bridge&) = delete;

    // The plain end for redisConnectFd; hiredis owns it from then on (redisFree closes it).
    int take_plain_fd();

  private:
    tls_bridge(SSL* ssl, int tcp_fd, int plain_fd, int pump_fd);
    void pump();

    SSL* ssl_;
    int tcp_fd_;
    int plain_fd_;            // handed to hiredis
    int pump_fd_;             // the pump's end of the pair
    int wake_[2] = {-1, -1};  // a pipe the destructor writes to end the pump
    std::thread thread_;
};

}  // namespace starling::adapters::redis
