#include "auth/pattern.h"

#include <re2/re2.h>

namespace starling::auth {
namespace {

std::shared_ptr<const re2::RE2> build(std::string_view source) {
    re2::RE2::Options options;
    options.set_max_mem(pattern::max_memory);
    options.set_log_errors(false);    // errors are returned, not printed to stderr
    options.set_never_capture(true);  // groups are never read: cheaper programs
    return std::make_shared<const re2::RE2>(re2::StringPiece(source.data(), source.size()),
                                            options);
}

}  // namespace

std::optional<pattern> pattern::compile(std::string_view source, std::string* why) {
    auto re = build(source);
    if (!re->ok()) {
        if (why != nullptr) {
            *why = re->error();
        }
        return std::nullopt;
    }
    return pattern(std::move(re));
}

std::string pattern::check(std::string_view source) {
    std::string why;
    if (!compile(source, &why)) {
        return why.empty() ? std::string("invalid pattern") : why;
    }
    return {};
}

pattern::pattern(std::string_view source) : re_(build(source)) {}

bool pattern::full_match(std::string_view text) const {
    // A pattern that did not compile (or was moved from) matches nothing.
    return valid() && re2::RE2::FullMatch(re2::StringPiece(text.data(), text.size()), *re_);
}

bool pattern::valid() const { return re_ != nullptr && re_->ok(); }

const std::string& pattern::source() const {
    static const std::string none;
    return re_ != nullptr ? re_->pattern() : none;
}

}  // namespace starling::auth
