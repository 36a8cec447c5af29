#pragma once

// A throwaway Redis Cluster on loopback for tests: `masters` redis-server processes with
// cluster mode on, private ports and a private directory, joined by `redis-cli --cluster
// create`, each master with `replicas` replicas. Killed (SIGKILL) when the object dies.
// Needs the redis-server and redis-cli binaries (Debian's redis-server package brings both).

#include "adapters/redis/redis_connection.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace starling::testing {

class private_redis_cluster {
  public:
    using endpoint = std::pair<std::string, std::uint16_t>;

    private_redis_cluster() {
        // Its own directory rather than support/temp_dir.h: contract_support.h, included
        // beside this header by contract tests, has a temp_dir of its own.
        std::string pattern =
            (std::filesystem::temp_directory_path() / "starling-redis-cluster-XXXXXX").string();
        if (::mkdtemp(pattern.data()) != nullptr) {
            dir_ = pattern;
        }
    }
    ~private_redis_cluster() {
        for (std::size_t i = 0; i < pids_.size(); ++i) {
            kill(i);
        }
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    private_redis_cluster(const private_redis_cluster&) = delete;
    private_redis_cluster& operator=(const private_redis_cluster&) = delete;

    static bool tools_available() {
        return std::system(
                   "command -v redis-server >/dev/null 2>&1 && "
                   "command -v redis-cli >/dev/null 2>&1") == 0;
    }

    // Starts the servers, creates the cluster and waits (bounded) until every node reports
    // cluster_state:ok and agrees on the slot map. false (with error()) on any failure.
    bool start(int masters, int replicas = 0) {
        if (dir_.empty()) {
            return failed("cannot create a temporary directory");
        }
        const int total = masters * (1 + replicas);
        for (int i = 0; i < total; ++i) {
            const auto port = unused_port();
            if (port == 0) {
                return failed("no free port");
            }
            ports_.push_back(port);
            pids_.push_back(-1);
            if (!launch(ports_.size() - 1)) {
                return failed("redis-server did not start on port " + std::to_string(port));
            }
        }
        std::string command = "redis-cli --cluster create";
        for (const auto port : ports_) {
            command += " 127.0.0.1:" + std::to_string(port);
        }
        const auto log = (std::filesystem::path(dir_) / "create.log").string();
        command +=
            " --cluster-replicas " + std::to_string(replicas) + " --cluster-yes >" + log + " 2>&1";
        if (std::system(command.c_str()) != 0) {
            return failed("redis-cli --cluster create failed: " + read_file(log));
        }
        if (!wait_until_ok(std::chrono::seconds(30))) {
            return failed("the cluster did not reach cluster_state:ok");
        }
        return true;
    }

    // Every node's address (masters and replicas), as seed nodes for a client.
    std::vector<endpoint> nodes() const {
        std::vector<endpoint> out;
        for (const auto port : ports_) {
            out.emplace_back("127.0.0.1", port);
        }
        return out;
    }
    std::uint16_t port(std::size_t i) const { return ports_[i]; }
    std::size_t size() const { return ports_.size(); }
    const std::string& error() const { return error_; }

    void kill(std::size_t i) {
        if (pids_[i] > 0) {
            ::kill(pids_[i], SIGKILL);
            int wstatus = 0;
            ::waitpid(pids_[i], &wstatus, 0);
            pids_[i] = -1;
        }
    }
    void pause(std::size_t i) const { ::kill(pids_[i], SIGSTOP); }
    void resume(std::size_t i) const { ::kill(pids_[i], SIGCONT); }

    // A plain (non-cluster) connection to node i, for assertions and slot surgery.
    std::unique_ptr<adapters::redis::redis_connection> connect_to(std::size_t i) const {
        auto conn = std::make_unique<adapters::redis::redis_connection>(
            adapters::redis::redis_endpoint{.host = "127.0.0.1",
                                            .port = ports_[i],
                                            .connect_timeout = std::chrono::seconds(2),
                                            .command_timeout = std::chrono::seconds(10)});
        if (!conn->connect()) {
            return nullptr;
        }
        return conn;
    }

    // The text reply of one command on node i ("<error>" when it could not be sent).
    std::string text(std::size_t i, std::vector<std::string_view> args) const {
        auto conn = connect_to(i);
        if (!conn) {
            return "<error>";
        }
        auto reply = conn->command(args);
        if (!reply) {
            return "<error>";
        }
        return std::string(adapters::redis::reply_text(**reply));
    }

    // The index of the node whose port is `port`, or size() when none.
    std::size_t index_of(std::uint16_t port) const {
        for (std::size_t i = 0; i < ports_.size(); ++i) {
            if (ports_[i] == port) {
                return i;
            }
        }
        return ports_.size();
    }

    // Polls every live node until each says cluster_state:ok (there is no event to wait on).
    bool wait_until_ok(std::chrono::seconds limit) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            bool all = true;
            for (std::size_t i = 0; i < ports_.size() && all; ++i) {
                if (pids_[i] > 0) {
                    all =
                        text(i, {"CLUSTER", "INFO"}).find("cluster_state:ok") != std::string::npos;
                }
            }
            if (all) {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

  private:
    bool launch(std::size_t i) {
        const auto port = std::to_string(ports_[i]);
        const auto& dir = dir_;
        const auto conf = "nodes-" + port + ".conf";
        const auto logfile = dir + "/redis-" + port + ".log";
        const pid_t pid = ::fork();
        if (pid == 0) {
            const int devnull = ::open("/dev/null", O_WRONLY);
            ::dup2(devnull, 1);
            ::dup2(devnull, 2);
            ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no", "--dir", dir.c_str(), "--logfile",
                     logfile.c_str(), "--cluster-enabled", "yes", "--cluster-config-file",
                     conf.c_str(), "--cluster-node-timeout", "2000", static_cast<char*>(nullptr));
            ::_exit(127);
        }
        if (pid < 0) {
            return false;
        }
        pids_[i] = pid;
        // Polls: the server gives no other sign of readiness.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            if (text(i, {"PING"}) == "PONG") {
                return true;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }

    bool failed(std::string why) {
        error_ = std::move(why);
        return false;
    }

    static std::string read_file(const std::string& path) {
        std::ifstream in(path);
        std::stringstream out;
        out << in.rdbuf();
        return out.str();
    }

    // A TCP port nothing listens on right now (bound to port 0, then released).
    static std::uint16_t unused_port() {
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
            ::close(fd);
            return 0;
        }
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
        ::close(fd);
        // Redis Cluster's bus listens on port + 10000: keep both in range.
        const auto port = ntohs(addr.sin_port);
        return port < 55535 ? port : unused_port();
    }

    std::string dir_;
    std::vector<std::uint16_t> ports_;
    std::vector<pid_t> pids_;
    std::string error_;
};

}  // namespace starling::testing
