#pragma once

// tls_peer_info: what a TLS handshake established about the peer, kept for authentication
// (the broker turns it into auth::peer_certificate, see src/auth/provider.h). No Asio or
// OpenSSL here, so connection.h can carry it.

#include <string>
#include <vector>

namespace starling::net {

// Immutable once the handshake completed; owned by the transport (and copied into the
// connection), readable from any thread.
struct tls_peer_info {
    std::string protocol;  // "TLSv1.2", "TLSv1.3"
    std::string cipher;    // OpenSSL cipher name
    // The client's certificates, DER, leaf first; empty if none. When `verified`, the chain the
    // listener verified (leaf to trust anchor, SSL_get0_verified_chain), so nothing the client
    // merely appended; otherwise the certificates the client sent.
    std::vector<std::string> der_chain;
    std::string subject_cn;  // CN of the leaf ("" when none)
    // True when the client presented a certificate and the listener verified its chain against
    // the trust store (client_auth requested or required).
    bool verified = false;
};

}  // namespace starling::net
