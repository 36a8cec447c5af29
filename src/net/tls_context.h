#pragma once

// tls_context: the server-side TLS settings of one listener (ssl or wss) as an OpenSSL context,
// rebuilt when the certificate, key or trust-store files change on disk.

#include "net/tls_peer_info.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

struct ssl_st;

namespace starling::net {

// The lowest protocol version a listener accepts; the highest is always TLS 1.3.
enum class tls_protocol : std::uint8_t { tls_1_2, tls_1_3 };

// Whether the listener asks for a client certificate. `requested`: asked for, a missing or
// unverifiable one is accepted (tls_peer_info::verified tells which); `required`: the handshake
// fails without a certificate that verifies against the trust store.
enum class client_auth_mode : std::uint8_t { none, requested, required };

struct tls_options {
    std::string listener;             // "ssl", "wss": for logs and errors
    std::filesystem::path cert_file;  // PEM: the server certificate, then its chain
    std::filesystem::path key_file;   // PEM private key (encrypted if key_password is set)
    std::string key_password;
    tls_protocol min_protocol = tls_protocol::tls_1_2;
    // Comma-separated; IANA names (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, as TBMQ's Java
    // configuration spells them) or OpenSSL names. TLS 1.3 suites (TLS_AES_*, TLS_CHACHA20_*)
    // and TLS 1.2 ciphers are sorted into their two OpenSSL lists. Empty = OpenSSL's defaults.
    std::string cipher_suites;
    client_auth_mode client_auth = client_auth_mode::none;
    std::filesystem::path trust_store;  // PEM CA bundle; needed unless client_auth is none
    // How often the files' mtime and size are compared; 0 = never reload.
    std::chrono::milliseconds reload_interval{5000};
    // Called after each reload attempt (true = new context installed), for metrics.
    std::function<void(bool ok)> on_reload;
};

// Builds an OpenSSL server context from `options`; on failure returns why (naming the file).
struct tls_context_build {
    std::shared_ptr<boost::asio::ssl::context> context;  // null on failure
    std::string error;
};
tls_context_build build_tls_context(const tls_options& options);

// The notAfter of the certificate `context` serves, in seconds since the epoch.
std::optional<std::int64_t> certificate_not_after(boost::asio::ssl::context& context);

// Reads the peer's certificate chain, CN and the verification outcome after a handshake.
tls_peer_info read_tls_peer(ssl_st* ssl, client_auth_mode mode);

// Holds the current context of one listener and swaps in a new one when its files change.
//
// Lifecycle: create() (start-up: throws std::runtime_error naming the problem) → start() arms the
// reload timer on the io_context → stop() cancels it. Handshakes take current(); a context in
// use by an established connection stays alive through the transport's shared_ptr, so a reload
// never affects existing connections.
//
// Concurrency: current() from any thread (short mutex). The timer runs on an I/O thread; the
// check is a stat() of three files, and a rebuild (rare) parses PEM files — both short enough
// for an I/O thread. A file that fails to load keeps the old context and logs an error once per
// change.
class tls_context_provider : public std::enable_shared_from_this<tls_context_provider> {
  public:
    static std::shared_ptr<tls_context_provider> create(boost::asio::io_context& io,
                                                        tls_options options);
    tls_context_provider(boost::asio::io_context& io, tls_options options,
                         std::shared_ptr<boost::asio::ssl::context> initial);

    void start();
    void stop();

    std::shared_ptr<boost::asio::ssl::context> current() const;
    // When the certificate of the current context expires (notAfter, seconds since the epoch);
    // nullopt if it cannot be read.
    std::optional<std::int64_t> certificate_not_after() const;
    const tls_options& options() const { return options_; }

    // Compares the files with what was loaded last and rebuilds on a change. Returns true when a
    // new context was installed. The timer calls it; tests may call it directly.
    bool check_for_changes();
    std::uint64_t reloads() const;
    std::uint64_t reload_failures() const;

  private:
    struct file_stamp {
        std::filesystem::file_time_type mtime{};
        std::uintmax_t size = 0;
        bool exists = false;
        friend bool operator==(const file_stamp&, const file_stamp&) = default;
    };
    std::vector<file_stamp> stamp_files() const;
    void arm();

    const tls_options options_;
    boost::asio::steady_timer timer_;
    mutable std::mutex mutex_;
    std::shared_ptr<boost::asio::ssl::context> current_;
    std::vector<file_stamp> last_seen_;
    std::uint64_t reloads_ = 0;
    std::uint64_t reload_failures_ = 0;
    bool stopped_ = false;
};

}  // namespace starling::net
