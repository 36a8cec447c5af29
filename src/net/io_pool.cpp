#include "net/io_pool.h"

#include "base/assert.h"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <pthread.h>

#include <algorithm>
#include <utility>

namespace starling::net {
namespace {

thread_local const io_pool* current_pool = nullptr;

}  // namespace

struct io_pool::work {
    explicit work(boost::asio::io_context& context) : guard(context.get_executor()) {}
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard;
};

io_pool::io_pool(std::string name, std::size_t threads)
    : name_(std::move(name)),
      thread_count_(std::max<std::size_t>(threads, 1)),
      // The hint only tunes Asio's scheduler (with 1 it skips waking other threads); posting
      // from any thread stays safe either way.
      context_(std::make_unique<boost::asio::io_context>(static_cast<int>(thread_count_))) {}

io_pool::~io_pool() { stop(); }

void io_pool::start() {
    std::lock_guard lock(lifecycle_mutex_);
    if (started_ || stopped_) {
        return;
    }
    started_ = true;
    work_ = std::make_unique<work>(*context_);
    threads_.reserve(thread_count_);
    for (std::size_t i = 0; i < thread_count_; ++i) {
        threads_.emplace_back([this, i] {
            std::string thread_name = name_.substr(0, 11) + "-" + std::to_string(i);
            thread_name.resize(std::min<std::size_t>(thread_name.size(), 15));
            pthread_setname_np(pthread_self(), thread_name.c_str());
            current_pool = this;
            // Handlers must not throw (docs/style.md rule 5); an escaping exception is a bug and
            // terminates, which beats an I/O thread silently gone.
            context_->run();
            current_pool = nullptr;
        });
    }
}

void io_pool::stop() {
    if (current_pool == this) {
        STARLING_PANIC("io_pool::stop() called from one of its own threads");
    }
    std::lock_guard lock(lifecycle_mutex_);
    if (stopped_) {
        return;
    }
    stopped_ = true;
    work_.reset();
    context_->stop();
    for (auto& thread : threads_) {
        thread.join();
    }
    threads_.clear();
}

}  // namespace starling::net
