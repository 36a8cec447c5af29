#pragma once

// result<T>: a value or a std::error_code. The data path never throws (docs/style.md rule 5):
// network input, log and store results come back as result<T>. Boost.System's result is used
// rather than a home-grown one; std::expected arrives only with C++23.

#include <boost/system/result.hpp>

#include <system_error>

namespace starling {

template <class T>
using result = boost::system::result<T, std::error_code>;

using status = boost::system::result<void, std::error_code>;

}  // namespace starling
