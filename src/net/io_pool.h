#pragma once

// io_pool: N threads running one shared Asio io_context (docs/architecture.md §6: the I/O threads
// that serve every listener and connection). Asio stays out of this header: users that need
// the context itself include <boost/asio/io_context.hpp>.

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace starling::net {

// Lifecycle: construct → start() → stop() (or destruction). Not restartable. Listeners and
// connections bound to context() must be destroyed before the pool (they own Asio objects that
// refer to it); handlers still queued at stop() are destroyed, not run, when the pool dies.
//
// stop() is abrupt by design: it stops the io_context and joins. Graceful shutdown is done
// above it (stop listeners, close connections, wait for their on_closed) before stop().
//
// Concurrency: start()/stop() from an owning thread, never from one of the pool's threads
// (stop() there panics: it would join itself). context() is thread-safe, as io_context is.
class io_pool {
  public:
    io_pool(std::string name, std::size_t threads);
    ~io_pool();

    io_pool(const io_pool&) = delete;
    io_pool& operator=(const io_pool&) = delete;

    void start();
    void stop();

    boost::asio::io_context& context() { return *context_; }
    std::size_t thread_count() const { return thread_count_; }
    const std::string& name() const { return name_; }

  private:
    struct work;  // the executor_work_guard keeping idle threads in run()

    const std::string name_;
    const std::size_t thread_count_;
    std::unique_ptr<boost::asio::io_context> context_;
    std::unique_ptr<work> work_;
    std::mutex lifecycle_mutex_;
    bool started_ = false;
    bool stopped_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace starling::net
