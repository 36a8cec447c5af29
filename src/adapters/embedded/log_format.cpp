#include "adapters/embedded/log_format.h"

#include "adapters/embedded/log_crc32c.h"

#include <cstring>

namespace starling::adapters::embedded::log_format {

std::size_t begin_frame(std::string& out) {
    const std::size_t start = out.size();
    out.resize(start + frame_header_bytes);
    return start;
}

void finish_frame(std::string& out, std::size_t frame_start) {
    const std::size_t body_start = frame_start + frame_header_bytes;
    const std::size_t body_size = out.size() - body_start;
    char* header = out.data() + frame_start;
    put_u32(header, static_cast<std::uint32_t>(body_size));
    put_u32(header + 4, crc32c(out.data() + body_start, body_size));
}

std::size_t record_frame_size(std::string_view key, std::string_view value,
                              const std::vector<log_header>& headers) {
    std::size_t size = frame_header_bytes + record_fixed_bytes + key.size() + value.size();
    for (const auto& header : headers) {
        size += 8 + header.key.size() + header.value.size();
    }
    return size;
}

void append_record(std::string& out, std::int64_t offset, std::int64_t timestamp_ms,
                   std::string_view key, std::string_view value,
                   const std::vector<log_header>& headers) {
    const std::size_t start = out.size();
    out.resize(start + record_frame_size(key, value, headers));
    char* p = out.data() + start + frame_header_bytes;
    p[0] = static_cast<char>(record_version);
    p[1] = 0;
    put_u64(p + 2, static_cast<std::uint64_t>(offset));
    put_u64(p + 10, static_cast<std::uint64_t>(timestamp_ms));
    put_u32(p + 18, static_cast<std::uint32_t>(key.size()));
    put_u32(p + 22, static_cast<std::uint32_t>(value.size()));
    put_u32(p + 26, static_cast<std::uint32_t>(headers.size()));
    p += record_fixed_bytes;
    std::memcpy(p, key.data(), key.size());
    p += key.size();
    std::memcpy(p, value.data(), value.size());
    p += value.size();
    for (const auto& header : headers) {
        put_u32(p, static_cast<std::uint32_t>(header.key.size()));
        put_u32(p + 4, static_cast<std::uint32_t>(header.value.size()));
        p += 8;
        std::memcpy(p, header.key.data(), header.key.size());
        p += header.key.size();
        std::memcpy(p, header.value.data(), header.value.size());
        p += header.value.size();
    }
    finish_frame(out, start);
}

parse_status parse_frame(const char* data, std::size_t size, std::string_view& body,
                         std::size_t& frame_size) {
    frame_size = 0;
    if (size < frame_header_bytes) {
        return parse_status::incomplete;
    }
    const std::uint32_t body_size = get_u32(data);
    if (body_size == 0 || body_size > max_frame_body) {
        return parse_status::corrupt;
    }
    frame_size = frame_header_bytes + body_size;
    if (size < frame_size) {
        return parse_status::incomplete;
    }
    if (crc32c(data + frame_header_bytes, body_size) != get_u32(data + 4)) {
        return parse_status::corrupt;
    }
    body = std::string_view(data + frame_header_bytes, body_size);
    return parse_status::ok;
}

parse_status parse_record(const char* data, std::size_t size, record_view& record,
                          std::size_t& frame_size) {
    std::string_view body;
    const parse_status status = parse_frame(data, size, body, frame_size);
    if (status != parse_status::ok) {
        return status;
    }
    if (body.size() < record_fixed_bytes || static_cast<std::uint8_t>(body[0]) != record_version) {
        return parse_status::corrupt;
    }
    const char* p = body.data();
    record.offset = static_cast<std::int64_t>(get_u64(p + 2));
    record.timestamp_ms = static_cast<std::int64_t>(get_u64(p + 10));
    const std::uint64_t key_size = get_u32(p + 18);
    const std::uint64_t value_size = get_u32(p + 22);
    record.header_count = get_u32(p + 26);
    const std::uint64_t variable = body.size() - record_fixed_bytes;
    if (key_size + value_size > variable) {
        return parse_status::corrupt;
    }
    p += record_fixed_bytes;
    record.key = std::string_view(p, key_size);
    record.value = std::string_view(p + key_size, value_size);
    record.headers = std::string_view(p + key_size + value_size, variable - key_size - value_size);
    // Validate the header block now so materialize() can trust it.
    std::string_view rest = record.headers;
    for (std::uint32_t i = 0; i < record.header_count; ++i) {
        if (rest.size() < 8) {
            return parse_status::corrupt;
        }
        const std::uint64_t pair = std::uint64_t{get_u32(rest.data())} + get_u32(rest.data() + 4);
        if (pair > rest.size() - 8) {
            return parse_status::corrupt;
        }
        rest.remove_prefix(8 + pair);
    }
    if (!rest.empty() || record.offset < 0) {
        return parse_status::corrupt;
    }
    return parse_status::ok;
}

void materialize(const record_view& view, log_record& out) {
    out.offset = view.offset;
    out.timestamp_ms = view.timestamp_ms;
    out.key.assign(view.key);
    out.value.assign(view.value);
    out.headers.clear();
    out.headers.reserve(view.header_count);
    const char* p = view.headers.data();
    for (std::uint32_t i = 0; i < view.header_count; ++i) {
        const std::uint32_t name_size = get_u32(p);
        const std::uint32_t value_size = get_u32(p + 4);
        p += 8;
        out.headers.push_back(
            log_header{std::string(p, name_size), std::string(p + name_size, value_size)});
        p += name_size + value_size;
    }
}

}  // namespace starling::adapters::embedded::log_format
