// libFuzzer target for the embedded log's segment recovery: the frame and record decoding
// (log_format::parse_record) as recovery meets it in a file left by a crash or damaged on disk,
// the segment scan that rebuilds the sparse index and cuts a torn tail (log_segment::recover),
// and the partition recovery that quarantines a damaged closed segment and keeps reading the
// next one (log_partition::recover, then log_partition::read of everything).
//
// Input: a mode byte, then the bytes of a segment file.
//   even mode: the bytes are the active segment (a bad tail is cut);
//   odd mode: they are a closed segment, followed by one valid record in the next (active)
//             segment, so the quarantine path and reading across the gap run.
//
// Properties (an abort is a finding): the accepted prefix re-parses frame by frame with
// increasing offsets; good + bad bytes = the file; a cut file ends at the good prefix; the index
// points inside the prefix in increasing order; after partition recovery every record read back
// parses and offsets increase, and the next segment's record is always there.

#include "adapters/embedded/log_config.h"
#include "adapters/embedded/log_format.h"
#include "adapters/embedded/log_partition.h"
#include "adapters/embedded/log_segment.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

using namespace starling::adapters::embedded;
namespace fs = std::filesystem;

constexpr std::int64_t next_base = 1000000;  // the active segment after a closed one

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_log_segment invariant violated: %s\n", what);
        std::abort();
    }
}

const fs::path& scratch() {
    static const fs::path dir = [] {
        spdlog::set_level(spdlog::level::off);  // recovery logs every cut and quarantine
        // tmpfs when there is one: recovery fsyncs, which a disk makes ~100x slower.
        const fs::path base =
            fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
        std::string pattern = (base / "fuzz-log-segment-XXXXXX").string();
        check(mkdtemp(pattern.data()) != nullptr, "mkdtemp");
        // Removed at exit (a plain buffer: no static object's lifetime to worry about).
        static char path[4096];
        check(pattern.size() < sizeof path, "temp path too long");
        pattern.copy(path, pattern.size());
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(fs::path(path), ec);
        });
        return fs::path(pattern);
    }();
    return dir;
}

void write_file(const fs::path& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    check(out.good(), "write");
}

void check_prefix(const std::string& file, const log_segment& segment) {
    std::size_t at = 0;
    std::int64_t last = -1;
    while (at < segment.size) {
        log_format::record_view record;
        std::size_t frame = 0;
        check(log_format::parse_record(file.data() + at, segment.size - at, record, frame) ==
                  log_format::parse_status::ok,
              "the accepted prefix does not re-parse");
        check(record.offset > last, "offsets do not increase");
        last = record.offset;
        at += frame;
    }
    check(at == segment.size, "the prefix does not end on a frame boundary");
    check(last == segment.last_offset, "last_offset disagrees with the prefix");
    std::uint32_t previous = 0;
    for (const auto& entry : segment.index) {
        check(entry.position > previous || previous == 0, "index positions do not increase");
        check(entry.position < segment.size, "index entry past the prefix");
        previous = entry.position;
    }
}

void segment_only(std::string_view bytes, bool cut) {
    const auto path = scratch() / log_segment::file_name(0);
    write_file(path, bytes);
    std::uint64_t bad = 0;
    auto segment = log_segment::recover(path, 0, 0, next_base, 64, cut, bad);
    check(segment.has_value(), "recover failed on a readable file");
    check((*segment)->size + bad == bytes.size(), "good + bad != file size");
    check(fs::file_size(path) == (cut ? (*segment)->size : bytes.size()),
          "the file was not cut to the prefix (or was cut when it should not be)");
    check_prefix(std::string(bytes), **segment);
}

void partition_with_next(std::string_view bytes) {
    const auto dir = scratch() / "p";
    const auto quarantine = scratch() / "q";
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::remove_all(quarantine, ec);
    fs::create_directories(dir);
    write_file(dir / log_segment::file_name(0), bytes);
    std::string next;
    log_format::append_record(next, next_base, 1, "k", "next-segment", {});
    write_file(dir / log_segment::file_name(next_base), next);

    embedded_log_config config;
    config.data_dir = scratch();
    config.index_interval_bytes = 64;
    log_partition partition("t", 0, dir, quarantine, config);
    check(partition.recover().has_value(), "partition recovery failed");
    std::vector<char> buffer(4096);
    std::vector<starling::log_record> records;
    std::int64_t position = partition.log_start_offset();
    for (int rounds = 0; rounds < 10000 && position < partition.end_offset(); ++rounds) {
        auto read = partition.read(position, 64, buffer, records);
        check(read.has_value(), "read failed");
        check(!read->out_of_range, "read out of range inside the log");
        if (read->next_position == position) {
            break;
        }
        position = read->next_position;
    }
    for (std::size_t i = 1; i < records.size(); ++i) {
        check(records[i].offset > records[i - 1].offset, "records out of order");
    }
    check(!records.empty() && records.back().offset == next_base &&
              records.back().value == "next-segment",
          "the record after a damaged segment was lost");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0 || size > (1U << 20)) {
        return 0;
    }
    const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] % 2 == 0) {
        segment_only(bytes, (data[0] & 2) != 0);
    } else {
        partition_with_next(bytes);
    }
    return 0;
}
