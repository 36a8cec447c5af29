// libFuzzer target for the embedded log's offsets journal replay (log_offset_store::open): the
// committed group offsets are rebuilt at start-up from data_dir/log/offsets.journal, a file a
// crash may have torn and a disk may have damaged.
//
// Input: the bytes of an offsets.journal.
//
// Properties (an abort is a finding): replay never fails on a readable file and never crashes;
// it cuts the file to a prefix of the input; a commit appended afterwards is read back by a
// second replay together with what the first replay kept (nothing of the kept prefix is lost,
// the cut tail never comes back).

#include "adapters/embedded/log_offset_store.h"

#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace {

using namespace starling::adapters::embedded;
namespace fs = std::filesystem;

void check(bool condition, const char* what) {
    if (!condition) {
        std::fprintf(stderr, "fuzz_log_offsets invariant violated: %s\n", what);
        std::abort();
    }
}

const fs::path& scratch() {
    static const fs::path dir = [] {
        spdlog::set_level(spdlog::level::off);  // replay logs every cut
        // tmpfs when there is one: recovery fsyncs, which a disk makes ~100x slower.
        const fs::path base =
            fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
        std::string pattern = (base / "fuzz-log-offsets-XXXXXX").string();
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

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > (1U << 20)) {
        return 0;
    }
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const auto journal = scratch() / "offsets.journal";
    {
        std::ofstream out(journal, std::ios::binary | std::ios::trunc);
        out.write(input.data(), static_cast<std::streamsize>(input.size()));
        check(out.good(), "write");
    }
    const starling::topic_partition probe{"fuzz-topic", 3};
    std::optional<std::int64_t> kept;
    {
        auto store = log_offset_store::open(scratch(), fsync_policy::none);
        check(store.has_value(), "replay failed on a readable journal");
        const auto after = read_all(journal);
        check(after.size() <= input.size() && input.substr(0, after.size()) == after,
              "the journal is not a prefix of the input after replay");
        kept = (*store)->committed("fuzz-group", probe);
        check((*store)->commit("fuzz-group", {{probe, 424242}}).has_value(), "commit failed");
        (*store)->close();
    }
    auto again = log_offset_store::open(scratch(), fsync_policy::none);
    check(again.has_value(), "second replay failed");
    check((*again)->committed("fuzz-group", probe) == 424242, "the appended commit was lost");
    (void)kept;
    (*again)->close();
    return 0;
}
