#pragma once

// RFC 4648 §5 base64url, the alphabet of JWTs and JWKs. Pure functions.

#include <optional>
#include <string>
#include <string_view>

namespace starling::auth {

// Without padding (padding tolerated); nullopt on a bad character or an impossible length.
std::optional<std::string> base64url_decode(std::string_view text);

// Without padding, as JWS requires (RFC 7515 §2).
std::string base64url_encode(std::string_view bytes);

}  // namespace starling::auth
