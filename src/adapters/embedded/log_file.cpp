#include "adapters/embedded/log_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace starling::adapters::embedded {

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
    if (this != &other) {
        reset();
        fd_ = other.fd_;
        other.fd_ = -1;
    }
    return *this;
}

void unique_fd::reset() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

std::error_code errno_code() { return {errno, std::system_category()}; }

result<unique_fd> open_file(const std::filesystem::path& path, int flags) {
    int fd = 0;
    do {
        fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        return errno_code();
    }
    return unique_fd(fd);
}

status pwrite_all(int fd, const char* data, std::size_t size, std::uint64_t position) {
    while (size > 0) {
        const ssize_t n = ::pwrite(fd, data, size, static_cast<off_t>(position));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno_code();
        }
        if (n == 0) {
            return std::error_code(EIO, std::system_category());
        }
        data += n;
        size -= static_cast<std::size_t>(n);
        position += static_cast<std::uint64_t>(n);
    }
    return {};
}

result<std::size_t> pread_full(int fd, char* data, std::size_t size, std::uint64_t position) {
    std::size_t done = 0;
    while (done < size) {
        const ssize_t n =
            ::pread(fd, data + done, size - done, static_cast<off_t>(position + done));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno_code();
        }
        if (n == 0) {
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    return done;
}

status sync_data(int fd) {
    if (::fdatasync(fd) != 0) {
        return errno_code();
    }
    return {};
}

status truncate_file(int fd, std::uint64_t size) {
    if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
        return errno_code();
    }
    return {};
}

result<std::uint64_t> file_size(int fd) {
    const off_t end = ::lseek(fd, 0, SEEK_END);
    if (end < 0) {
        return errno_code();
    }
    return static_cast<std::uint64_t>(end);
}

status sync_directory(const std::filesystem::path& dir) {
    auto fd = open_file(dir, O_RDONLY | O_DIRECTORY);
    if (!fd) {
        return fd.error();
    }
    if (::fsync(fd->get()) != 0) {
        return errno_code();
    }
    return {};
}

status write_file_atomically(const std::filesystem::path& path, std::string_view content) {
    std::filesystem::path tmp = path;
    tmp += ".tmp";
    {
        auto fd = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
        if (!fd) {
            return fd.error();
        }
        if (auto written = pwrite_all(fd->get(), content.data(), content.size(), 0); !written) {
            return written.error();
        }
        if (auto synced = sync_data(fd->get()); !synced) {
            return synced.error();
        }
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        return errno_code();
    }
    return sync_directory(path.parent_path());
}

result<std::string> read_whole_file(const std::filesystem::path& path) {
    auto fd = open_file(path, O_RDONLY);
    if (!fd) {
        return fd.error();
    }
    std::string content;
    char chunk[4096];
    std::uint64_t position = 0;
    for (;;) {
        auto n = pread_full(fd->get(), chunk, sizeof chunk, position);
        if (!n) {
            return n.error();
        }
        content.append(chunk, *n);
        position += *n;
        if (*n < sizeof chunk) {
            return content;
        }
    }
}

status make_directories(const std::filesystem::path& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        return ec;
    }
    return {};
}

}  // namespace starling::adapters::embedded
