#include "auth/password.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cstring>
#include <memory>

namespace starling::auth {

bool is_bcrypt_hash(std::string_view hash) {
    return hash.size() == 60 &&
           (hash.starts_with("$2b$") || hash.starts_with("$2a$") || hash.starts_with("$2y$"));
}

std::optional<std::string> bcrypt_hash(std::string_view password, unsigned cost) {
    std::array<char, CRYPT_GENSALT_OUTPUT_SIZE> salt{};
    if (crypt_gensalt_rn("$2b$", cost, nullptr, 0, salt.data(), static_cast<int>(salt.size())) ==
        nullptr) {
        return std::nullopt;
    }
    // crypt_data is ~32 KB: keep it off the stack of the calling thread.
    auto data = std::make_unique<crypt_data>();
    const std::string pw(password);  // crypt_rn needs a NUL-terminated string
    const char* out = crypt_rn(pw.c_str(), salt.data(), data.get(), sizeof(crypt_data));
    if (out == nullptr || out[0] == '*') {
        return std::nullopt;
    }
    return std::string(out);
}

bool bcrypt_verify(std::string_view password, std::string_view hash) {
    if (!is_bcrypt_hash(hash) || password.find('\0') != std::string_view::npos) {
        return false;
    }
    auto data = std::make_unique<crypt_data>();
    const std::string pw(password);
    const std::string setting(hash);
    const char* out = crypt_rn(pw.c_str(), setting.c_str(), data.get(), sizeof(crypt_data));
    if (out == nullptr || std::strlen(out) != hash.size()) {
        return false;
    }
    return CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

std::string sha256_hex(std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(length * 2);
    for (unsigned int i = 0; i < length; ++i) {
        out.push_back(hex[digest[i] >> 4]);
        out.push_back(hex[digest[i] & 0xF]);
    }
    return out;
}

}  // namespace starling::auth
