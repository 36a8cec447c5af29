#pragma once

// pattern: one compiled regular expression matched against client-supplied strings (topics,
// topic filters, client ids, usernames, certificate CNs). RE2 underneath: automata that run in
// time linear in the input and never recurse, so a 64 KiB topic cannot exhaust the stack as it
// does libstdc++'s backtracking std::regex, and `(a*)*b` costs what `a*b` costs.
//
// Syntax: RE2's (Perl-like: `.`, `*`, `+`, `?`, `{n,m}`, classes, `\d`, alternation, groups,
// `(?i)`), without backreferences or lookaround, which RE2 rejects. Matching is whole-string,
// as std::regex_match and Java's Pattern.matches(): `sensors/.*` matches `sensors/a`, not
// `x/sensors/a`. `.` does not match a newline. Texts are UTF-8 (the MQTT codec validates them).
//
// Lifecycle: compiled once by compile() (an invalid pattern is an error string, never an
// exception); copies share one immutable RE2 object. Concurrency: full_match() from any number
// of threads at once (RE2 is thread-safe for matching; its lazily built DFA cache is internally
// synchronized and bounded by `max_memory`).

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace re2 {
class RE2;
}

namespace starling::auth {

class pattern {
  public:
    // Memory one compiled pattern may use (program plus DFA cache). A pattern whose program
    // does not fit is refused at compile time ("pattern too large"); a DFA that outgrows it
    // falls back to RE2's NFA, still linear. Topic rules need a few kilobytes.
    static constexpr std::int64_t max_memory = std::int64_t{1} << 20;

    // Compiles `source`. nullopt when RE2 refuses it, with RE2's reason in `why` when given.
    static std::optional<pattern> compile(std::string_view source, std::string* why = nullptr);

    // Empty when `source` compiles, else why not (start-up validation of configured patterns).
    static std::string check(std::string_view source);

    // Compiles `source` for literals and tests; an invalid pattern matches nothing (fails
    // closed) and valid() is false. Code handling operator or client input uses compile().
    explicit pattern(std::string_view source);

    // True when the whole of `text` matches.
    bool full_match(std::string_view text) const;

    bool valid() const;
    const std::string& source() const;

  private:
    explicit pattern(std::shared_ptr<const re2::RE2> re) : re_(std::move(re)) {}

    // !ok() when the source did not compile; null only in a moved-from pattern.
    std::shared_ptr<const re2::RE2> re_;
};

}  // namespace starling::auth
