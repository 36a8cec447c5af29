#include "bench/topic_pattern.h"

#include <charconv>
#include <system_error>

namespace starling::bench {

result<topic_pattern> topic_pattern::parse(std::string_view text) {
    topic_pattern p;
    p.text_ = std::string(text);
    std::string literal;
    auto flush_literal = [&] {
        if (!literal.empty()) {
            p.pieces_.push_back({piece_kind::literal, std::move(literal)});
            literal.clear();
        }
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch != '%') {
            literal.push_back(ch);
            continue;
        }
        if (i + 1 == text.size()) {
            return std::make_error_code(std::errc::invalid_argument);
        }
        const char code = text[++i];
        piece_kind kind{};
        switch (code) {
            case '%':
                literal.push_back('%');
                continue;
            case 'i':
                kind = piece_kind::index;
                break;
            case 'c':
                kind = piece_kind::client_id;
                break;
            case 'g':
                kind = piece_kind::group;
                break;
            case 'm':
                kind = piece_kind::member;
                break;
            case 'r':
                kind = piece_kind::run_id;
                break;
            default:
                return std::make_error_code(std::errc::invalid_argument);
        }
        flush_literal();
        p.pieces_.push_back({kind, {}});
    }
    flush_literal();
    return p;
}

namespace {

void append_number(std::string& out, std::uint64_t value) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    (void)ec;  // 24 characters always hold a uint64
    out.append(buf, end);
}

}  // namespace

void topic_pattern::expand_into(const topic_vars& vars, std::string& out) const {
    const std::uint64_t group_size = vars.group_size == 0 ? 1 : vars.group_size;
    for (const auto& p : pieces_) {
        switch (p.kind) {
            case piece_kind::literal:
                out += p.literal;
                break;
            case piece_kind::index:
                append_number(out, vars.index);
                break;
            case piece_kind::client_id:
                out += vars.client_id;
                break;
            case piece_kind::group:
                append_number(out, vars.index / group_size);
                break;
            case piece_kind::member:
                append_number(out, vars.index % group_size);
                break;
            case piece_kind::run_id:
                out += vars.run_id;
                break;
        }
    }
}

std::string topic_pattern::expand(const topic_vars& vars) const {
    std::string out;
    expand_into(vars, out);
    return out;
}

bool topic_pattern::is_constant() const noexcept {
    for (const auto& p : pieces_) {
        if (p.kind != piece_kind::literal && p.kind != piece_kind::run_id) {
            return false;
        }
    }
    return true;
}

}  // namespace starling::bench
