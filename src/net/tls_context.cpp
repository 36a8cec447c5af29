#include "net/tls_context.h"

#include "base/text.h"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>

#include <ctime>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace starling::net {

namespace asio = boost::asio;

namespace {

std::string openssl_error(const boost::system::error_code& ec) {
    std::string out = ec.message();
    // The asio message is often just "error"; OpenSSL's own queue may say more.
    if (const unsigned long code = ERR_get_error(); code != 0) {
        std::array<char, 256> buffer{};
        ERR_error_string_n(code, buffer.data(), buffer.size());
        out = buffer.data();
    }
    ERR_clear_error();
    return out;
}

// Sorts the configured names into OpenSSL's TLS 1.3 ciphersuites and TLS <= 1.2 cipher list.
// IANA names of TLS 1.2 ciphers are mapped to OpenSSL's names.
std::string apply_cipher_suites(SSL_CTX* ctx, const std::string& configured) {
    std::string tls13;
    std::string tls12;
    std::size_t pos = 0;
    while (pos <= configured.size()) {
        const auto comma = configured.find(',', pos);
        const std::string name(base::trim(
            std::string_view(configured)
                .substr(pos, comma == std::string::npos ? std::string::npos : comma - pos)));
        pos = comma == std::string::npos ? configured.size() + 1 : comma + 1;
        if (name.empty()) {
            continue;
        }
        auto& list =
            name.starts_with("TLS_AES_") || name.starts_with("TLS_CHACHA20_") ? tls13 : tls12;
        std::string openssl_name = name;
        if (&list == &tls12 && name.starts_with("TLS_")) {
            const char* mapped = OPENSSL_cipher_name(name.c_str());
            if (mapped == nullptr || std::string_view(mapped) == "(NONE)") {
                return fmt::format("unknown cipher suite \"{}\"", name);
            }
            openssl_name = mapped;
        }
        if (!list.empty()) {
            list += ':';
        }
        list += openssl_name;
    }
    if (!tls13.empty() && SSL_CTX_set_ciphersuites(ctx, tls13.c_str()) != 1) {
        ERR_clear_error();
        return fmt::format("no usable TLS 1.3 cipher suite in \"{}\"", tls13);
    }
    if (!tls12.empty() && SSL_CTX_set_cipher_list(ctx, tls12.c_str()) != 1) {
        ERR_clear_error();
        return fmt::format("no usable TLS 1.2 cipher in \"{}\"", tls12);
    }
    return {};
}

}  // namespace

tls_context_build build_tls_context(const tls_options& options) {
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
    SSL_CTX* native = ctx->native_handle();
    boost::system::error_code ec;
    auto fail = [&](std::string why) { return tls_context_build{nullptr, std::move(why)}; };

    SSL_CTX_set_min_proto_version(
        native, options.min_protocol == tls_protocol::tls_1_3 ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_max_proto_version(native, TLS1_3_VERSION);
    // Idle connections give their OpenSSL record buffers back (tens of KB each).
    SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
    ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression |
                         asio::ssl::context::single_dh_use,
                     ec);

    if (!options.key_password.empty()) {
        ctx->set_password_callback(
            [password = options.key_password](std::size_t, asio::ssl::context::password_purpose) {
                return password;
            },
            ec);
    }
    ctx->use_certificate_chain_file(options.cert_file.string(), ec);
    if (ec) {
        return fail(
            fmt::format("certificate file {}: {}", options.cert_file.string(), openssl_error(ec)));
    }
    ctx->use_private_key_file(options.key_file.string(), asio::ssl::context::pem, ec);
    if (ec) {
        return fail(fmt::format("key file {}: {}", options.key_file.string(), openssl_error(ec)));
    }
    if (SSL_CTX_check_private_key(native) != 1) {
        ERR_clear_error();
        return fail(fmt::format("key file {} does not match certificate {}",
                                options.key_file.string(), options.cert_file.string()));
    }
    if (auto why = apply_cipher_suites(native, options.cipher_suites); !why.empty()) {
        return fail(why);
    }
    if (options.client_auth != client_auth_mode::none) {
        ctx->load_verify_file(options.trust_store.string(), ec);
        if (ec) {
            return fail(
                fmt::format("trust store {}: {}", options.trust_store.string(), openssl_error(ec)));
        }
        // Tell clients which CAs we accept, so one holding several certificates picks right.
        if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(options.trust_store.c_str())) {
            SSL_CTX_set_client_CA_list(native, names);
        }
        ERR_clear_error();
        if (options.client_auth == client_auth_mode::required) {
            ctx->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert,
                                 ec);
        } else {
            // Requested: ask, but let the handshake succeed whatever the outcome; the result
            // stays in SSL_get_verify_result() and becomes tls_peer_info::verified.
            ctx->set_verify_mode(asio::ssl::verify_peer, ec);
            ctx->set_verify_callback([](bool, asio::ssl::verify_context&) { return true; }, ec);
        }
    }
    return {std::move(ctx), {}};
}

std::optional<std::int64_t> certificate_not_after(asio::ssl::context& context) {
    X509* certificate = SSL_CTX_get0_certificate(context.native_handle());
    if (certificate == nullptr) {
        return std::nullopt;
    }
    const ASN1_TIME* not_after = X509_get0_notAfter(certificate);
    std::tm tm{};
    if (not_after == nullptr || ASN1_TIME_to_tm(not_after, &tm) != 1) {
        return std::nullopt;
    }
    return static_cast<std::int64_t>(timegm(&tm));  // ASN1 times are UTC
}

tls_peer_info read_tls_peer(SSL* ssl, client_auth_mode mode) {
    tls_peer_info info;
    info.protocol = SSL_get_version(ssl);
    if (const char* cipher = SSL_get_cipher_name(ssl)) {
        info.cipher = cipher;
    }
    auto to_der = [](X509* cert) {
        unsigned char* der = nullptr;
        const int n = i2d_X509(cert, &der);
        std::string out;
        if (n > 0) {
            out.assign(reinterpret_cast<const char*>(der), static_cast<std::size_t>(n));
        }
        OPENSSL_free(der);
        return out;
    };
    X509* leaf = SSL_get_peer_certificate(ssl);  // +1 reference
    if (leaf == nullptr) {
        return info;
    }
    info.der_chain.push_back(to_der(leaf));
    std::array<char, 256> cn{};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(leaf), NID_commonName, cn.data(),
                                  static_cast<int>(cn.size())) > 0) {
        info.subject_cn = cn.data();
    }
    info.verified = mode != client_auth_mode::none && SSL_get_verify_result(ssl) == X509_V_OK;
    // Verified: the chain OpenSSL built and verified, leaf to trust anchor. Never what the
    // client sent, which may carry extra certificates (a self-signed one with a privileged CN
    // appended) that X_509 authentication would otherwise read as issuers. Should the verified
    // chain be unknown (a resumed session keeps the verdict but not the chain), the leaf alone.
    // Not verified: what the client sent, for a provider with its own trust store to verify
    // (it then reads names only from the chain it verified itself). A server's view of the
    // peer chain may or may not repeat the leaf, depending on the OpenSSL version: skip it by
    // its bytes.
    STACK_OF(X509)* chain =
        info.verified ? SSL_get0_verified_chain(ssl) : SSL_get_peer_cert_chain(ssl);
    if (chain != nullptr) {
        for (int i = 0; i < sk_X509_num(chain); ++i) {
            auto der = to_der(sk_X509_value(chain, i));
            if (der != info.der_chain.front()) {
                info.der_chain.push_back(std::move(der));
            }
        }
    }
    X509_free(leaf);
    return info;
}

// ------------------------------------------------------------------------ provider

std::shared_ptr<tls_context_provider> tls_context_provider::create(asio::io_context& io,
                                                                   tls_options options) {
    auto built = build_tls_context(options);
    if (!built.context) {
        throw std::runtime_error(built.error);
    }
    return std::make_shared<tls_context_provider>(io, std::move(options), std::move(built.context));
}

tls_context_provider::tls_context_provider(asio::io_context& io, tls_options options,
                                           std::shared_ptr<asio::ssl::context> initial)
    : options_(std::move(options)), timer_(io), current_(std::move(initial)) {
    last_seen_ = stamp_files();
}

void tls_context_provider::start() {
    std::lock_guard lock(mutex_);
    if (options_.reload_interval.count() > 0 && !stopped_) {
        arm();
    }
}

void tls_context_provider::stop() {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    timer_.cancel();
}

void tls_context_provider::arm() {
    timer_.expires_after(options_.reload_interval);
    timer_.async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
        auto self = weak.lock();
        if (ec || !self) {
            return;
        }
        self->check_for_changes();
        std::lock_guard lock(self->mutex_);
        if (!self->stopped_) {
            self->arm();
        }
    });
}

std::shared_ptr<asio::ssl::context> tls_context_provider::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

std::vector<tls_context_provider::file_stamp> tls_context_provider::stamp_files() const {
    std::vector<file_stamp> out;
    for (const auto* path : {&options_.cert_file, &options_.key_file, &options_.trust_store}) {
        file_stamp stamp;
        std::error_code ec;
        if (!path->empty()) {
            stamp.mtime = std::filesystem::last_write_time(*path, ec);
            if (!ec) {
                stamp.size = std::filesystem::file_size(*path, ec);
                stamp.exists = !ec;
            }
        }
        out.push_back(stamp);
    }
    return out;
}

bool tls_context_provider::check_for_changes() {
    auto stamps = stamp_files();
    {
        std::lock_guard lock(mutex_);
        if (stamps == last_seen_) {
            return false;
        }
        // Remembered even when the build fails: a broken file is reported once, and retried
        // only when it changes again.
        last_seen_ = stamps;
    }
    auto built = build_tls_context(options_);
    const bool ok = built.context != nullptr;
    {
        std::lock_guard lock(mutex_);
        if (ok) {
            current_ = std::move(built.context);
            ++reloads_;
        } else {
            ++reload_failures_;
        }
    }
    if (ok) {
        spdlog::info("listener.{}: TLS credentials reloaded from {}", options_.listener,
                     options_.cert_file.string());
    } else {
        spdlog::error(
            "listener.{}: reloading TLS credentials failed, keeping the previous ones: {}",
            options_.listener, built.error);
    }
    if (options_.on_reload) {
        options_.on_reload(ok);
    }
    return ok;
}

std::optional<std::int64_t> tls_context_provider::certificate_not_after() const {
    const auto context = current();
    return context ? net::certificate_not_after(*context) : std::nullopt;
}

std::uint64_t tls_context_provider::reloads() const {
    std::lock_guard lock(mutex_);
    return reloads_;
}

std::uint64_t tls_context_provider::reload_failures() const {
    std::lock_guard lock(mutex_);
    return reload_failures_;
}

}  // namespace starling::net
