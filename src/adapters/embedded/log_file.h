#pragma once

// Thin POSIX file helpers for the embedded log: an owning descriptor, full-length pread/pwrite
// loops, fdatasync and directory fsync, and atomic small-file replacement. Every failure comes
// back as the errno that caused it (std::system_category). Stateless: safe from any thread.

#include "base/result.h"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

namespace starling::adapters::embedded {

// Owns one file descriptor; closes it on destruction. Move-only.
class unique_fd {
  public:
    unique_fd() = default;
    explicit unique_fd(int fd) : fd_(fd) {}
    unique_fd(unique_fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    unique_fd& operator=(unique_fd&& other) noexcept;
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd() { reset(); }

    int get() const { return fd_; }
    bool valid() const { return fd_ >= 0; }
    void reset();

  private:
    int fd_ = -1;
};

std::error_code errno_code();

// open(2) with O_CLOEXEC added; mode 0644 for created files.
result<unique_fd> open_file(const std::filesystem::path& path, int flags);

// Writes all `size` bytes at `position` (retrying short writes and EINTR).
status pwrite_all(int fd, const char* data, std::size_t size, std::uint64_t position);

// Reads up to `size` bytes at `position`; returns fewer only at end of file.
result<std::size_t> pread_full(int fd, char* data, std::size_t size, std::uint64_t position);

status sync_data(int fd);
status truncate_file(int fd, std::uint64_t size);
result<std::uint64_t> file_size(int fd);

// fsync of a directory, so a created, renamed or removed entry in it survives power loss.
status sync_directory(const std::filesystem::path& dir);

// Replaces `path` with `content` atomically: write `path`.tmp, fdatasync, rename, fsync the
// directory. A crash leaves either the old or the new file, never a mix.
status write_file_atomically(const std::filesystem::path& path, std::string_view content);

result<std::string> read_whole_file(const std::filesystem::path& path);

// mkdir -p that reports errors as result instead of throwing.
status make_directories(const std::filesystem::path& dir);

}  // namespace starling::adapters::embedded
