#pragma once

// Random (version 4, RFC 4122) UUIDs from OpenSSL's CSPRNG: the ids of entities the management
// API creates (admin users, APPLICATION shared subscriptions), TBMQ's id format.

#include <string>

namespace starling::auth {

// "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", lowercase; "" when the CSPRNG has no entropy.
std::string random_uuid();

}  // namespace starling::auth
