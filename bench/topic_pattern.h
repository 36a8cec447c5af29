#pragma once

// topic_pattern: a topic name, topic filter or client id with per-client placeholders, parsed
// once and expanded for every client.
//
//   %i   the client's index within its group (0-based, plus --start-index)
//   %c   the client id (not available inside the client id pattern itself)
//   %g   the index divided by the group size (--group-size, default 1): clients 0..k-1 share 0
//   %m   the index modulo the group size: a client's position inside its group
//   %r   the run id (random per run, hex): keeps topics of separate runs apart
//   %%   a literal '%'
//
// "bench/%i/data" for client 7 is "bench/7/data"; "$share/g%g/bench/#" with group size 10
// puts clients 0-9 in group g0, 10-19 in g1. Any other character after '%' is an error, caught
// when the pattern is parsed, not when the first client expands it.
//
// Lifecycle and concurrency: an immutable value after parse(); expand() is const and
// thread-safe.

#include "base/result.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace starling::bench {

struct topic_vars {
    std::uint64_t index = 0;
    std::string_view client_id;
    std::uint64_t group_size = 1;
    std::string_view run_id;
};

class topic_pattern {
  public:
    topic_pattern() = default;

    // std::errc::invalid_argument for an unknown placeholder or a trailing '%'.
    static result<topic_pattern> parse(std::string_view text);

    std::string expand(const topic_vars& vars) const;
    void expand_into(const topic_vars& vars, std::string& out) const;

    const std::string& text() const noexcept { return text_; }
    // True when expansion does not depend on the client (no %i, %c, %g, %m).
    bool is_constant() const noexcept;

  private:
    enum class piece_kind : std::uint8_t { literal, index, client_id, group, member, run_id };
    struct piece {
        piece_kind kind;
        std::string literal;
    };
    std::string text_;
    std::vector<piece> pieces_;
};

}  // namespace starling::bench
