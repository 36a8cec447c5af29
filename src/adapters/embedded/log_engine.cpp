#include "adapters/embedded/log_engine.h"

#include "adapters/embedded/embedded_log_consumer.h"
#include "adapters/embedded/log_errc.h"
#include "adapters/embedded/log_format.h"
#include "base/assert.h"

#include <fcntl.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <optional>
#include <sstream>

namespace starling::adapters::embedded {

namespace {

constexpr std::size_t max_topic_name = 249;  // Kafka's limit
constexpr std::int32_t max_partitions = 100000;
constexpr std::string_view meta_file = "topic.meta";
constexpr std::string_view meta_magic = "starling-embedded-log-topic 1";

// The log writer thread, so flush() called from a produce callback fails instead of waiting
// for itself.
thread_local const log_engine* current_writer = nullptr;

// Topic names become directory names: keep [A-Za-z0-9_-] and non-leading '.', %XX the rest.
std::string escape_name(std::string_view name) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0; i < name.size(); ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '_' || c == '-' || (c == '.' && i > 0);
        if (plain) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        }
    }
    return out;
}

bool unescape_name(std::string_view escaped, std::string& out) {
    out.clear();
    for (std::size_t i = 0; i < escaped.size(); ++i) {
        if (escaped[i] != '%') {
            out.push_back(escaped[i]);
            continue;
        }
        unsigned value = 0;
        if (i + 2 >= escaped.size()) {
            return false;
        }
        auto [end, ec] = std::from_chars(escaped.data() + i + 1, escaped.data() + i + 3, value, 16);
        if (ec != std::errc() || end != escaped.data() + i + 3) {
            return false;
        }
        out.push_back(static_cast<char>(value));
        i += 2;
    }
    return true;
}

std::string encode_meta(const topic_spec& spec) {
    std::ostringstream out;
    out << meta_magic << '\n'
        << "name " << escape_name(spec.name) << '\n'
        << "partitions " << spec.partitions << '\n'
        << "retention_ms " << spec.retention_ms << '\n'
        << "retention_bytes " << spec.retention_bytes << '\n'
        << "compacted " << (spec.compacted ? 1 : 0) << '\n';
    return out.str();
}

bool decode_meta(const std::string& text, topic_spec& spec) {
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != meta_magic) {
        return false;
    }
    int seen = 0;
    std::string key;
    std::string value;
    while (in >> key >> value) {
        if (key == "name") {
            if (!unescape_name(value, spec.name)) {
                return false;
            }
            seen |= 1;
            continue;
        }
        std::int64_t number = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
        if (ec != std::errc() || end != value.data() + value.size()) {
            return false;
        }
        if (key == "partitions") {
            if (number < 1 || number > max_partitions) {
                return false;
            }
            spec.partitions = static_cast<std::int32_t>(number);
            seen |= 2;
        } else if (key == "retention_ms") {
            spec.retention_ms = number;
        } else if (key == "retention_bytes") {
            spec.retention_bytes = number;
        } else if (key == "compacted") {
            spec.compacted = number != 0;
        }
    }
    return seen == 3;
}

bool valid_topic_name(std::string_view name) {
    return !name.empty() && name.size() <= max_topic_name && escape_name(name).size() <= 255;
}

void remove_tree(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) {
        spdlog::warn("embedded log: cannot remove {}: {}", path.string(), ec.message());
    }
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Start and stop

log_engine::log_engine(embedded_log_config config)
    : config_(std::move(config)),
      clock_(config_.time_source != nullptr ? *config_.time_source : system_clock::instance()),
      root_(config_.data_dir / "log"),
      monitor_disk_(config_.min_free_bytes > 0 || config_.slow_free_bytes > 0),
      disk_source_(config_.disk_space_for_test ? config_.disk_space_for_test
                                               : disk_space_source(statvfs_disk_space)) {}

result<std::shared_ptr<log_engine>> log_engine::open(embedded_log_config config) {
    if (config.data_dir.empty() || config.segment_bytes == 0 ||
        config.segment_bytes > (2ULL << 30) || config.max_record_bytes == 0 ||
        config.max_record_bytes > log_format::max_frame_body || config.max_queued_records == 0 ||
        config.index_interval_bytes == 0 || config.fetch_buffer_bytes == 0 ||
        (config.fsync == fsync_policy::interval && config.fsync_interval.count() <= 0) ||
        config.default_retention_bytes < -1 || config.disk_check_interval.count() < 0 ||
        (config.slow_free_bytes > 0 && config.slow_write_rate == 0)) {
        return make_error_code(log_errc::invalid_argument);
    }
    std::shared_ptr<log_engine> engine(new log_engine(std::move(config)));
    if (auto recovered = engine->recover(); !recovered) {
        return recovered.error();
    }
    engine->next_sync_ = std::chrono::steady_clock::now() + engine->config_.fsync_interval;
    engine->check_disk(true);  // before the writer starts: a full disk refuses from the start
    engine->writer_ = std::thread([raw = engine.get()] { raw->writer_loop(); });
    if (engine->config_.maintenance_interval.count() > 0) {
        engine->maintenance_ = std::thread([raw = engine.get()] { raw->maintenance_loop(); });
    }
    return engine;
}

log_engine::~log_engine() { stop(); }

status log_engine::recover() {
    for (const char* sub : {"topics", "trash"}) {
        if (auto made = make_directories(root_ / sub); !made) {
            return made.error();
        }
    }
    // One process per directory: two writers would interleave frames in the same files.
    auto lock = open_file(root_ / "lock", O_RDWR | O_CREAT);
    if (!lock) {
        return lock.error();
    }
    if (::flock(lock->get(), LOCK_EX | LOCK_NB) != 0) {
        return errno == EWOULDBLOCK ? std::make_error_code(std::errc::device_or_resource_busy)
                                    : errno_code();
    }
    lock_file_ = std::move(*lock);
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(root_ / "trash", ec)) {
        remove_tree(entry.path());  // a delete_topic interrupted by a crash
    }
    if (ec) {
        return ec;
    }
    for (const auto& entry : std::filesystem::directory_iterator(root_ / "topics", ec)) {
        if (!entry.is_directory()) {
            continue;
        }
        if (!std::filesystem::exists(entry.path() / meta_file)) {
            // create_topic writes the metadata last: this one never finished.
            spdlog::warn("embedded log: removing half-created topic {}", entry.path().string());
            remove_tree(entry.path());
            continue;
        }
        auto topic = load_topic(entry.path());
        if (!topic) {
            spdlog::error("embedded log: cannot load topic {}: {}", entry.path().string(),
                          topic.error().message());
            return topic.error();
        }
        for (const auto& partition : (*topic)->partitions) {
            quarantined_ += partition->quarantined();
        }
        std::string name = (*topic)->spec.name;
        topics_.emplace(std::move(name), std::move(*topic));
    }
    if (ec) {
        return ec;
    }
    auto offsets = log_offset_store::open(root_, config_.fsync);
    if (!offsets) {
        return offsets.error();
    }
    offsets_ = std::move(*offsets);
    return {};
}

result<std::shared_ptr<log_engine::topic_state>> log_engine::load_topic(
    const std::filesystem::path& dir) {
    auto text = read_whole_file(dir / meta_file);
    if (!text) {
        return text.error();
    }
    auto topic = std::make_shared<topic_state>();
    std::string expected_name;
    if (!decode_meta(*text, topic->spec) ||
        !unescape_name(dir.filename().string(), expected_name) ||
        expected_name != topic->spec.name) {
        return make_error_code(log_errc::corrupt_data);
    }
    topic->dir = dir;
    for (std::int32_t p = 0; p < topic->spec.partitions; ++p) {
        auto partition = std::make_shared<log_partition>(
            topic->spec.name, p, dir / std::to_string(p),
            root_ / "quarantine" / dir.filename() / std::to_string(p), config_);
        if (auto recovered = partition->recover(); !recovered) {
            return recovered.error();
        }
        topic->partitions.push_back(std::move(partition));
    }
    return topic;
}

void log_engine::stop() {
    if (current_writer == this) {
        // Joining the writer from itself would never return.
        STARLING_BUG(false, "embedded log stopped from inside a produce callback");
        return;
    }
    std::lock_guard stop_lock(stop_mutex_);
    {
        std::lock_guard lock(queue_mutex_);
        stopping_ = true;
    }
    queue_cv_.notify_all();
    if (writer_.joinable()) {
        writer_.join();
    }
    {
        std::lock_guard lock(maintenance_wait_mutex_);
        maintenance_stop_ = true;
    }
    maintenance_cv_.notify_all();
    if (maintenance_.joinable()) {
        maintenance_.join();
    }
    {
        std::lock_guard lock(groups_mutex_);
        stopped_.store(true, std::memory_order_release);
        for (embedded_log_consumer* consumer : consumers_) {
            consumer->notify_stopped();
        }
    }
    // Nothing writes any more (admin calls and commits check stopped()): another instance
    // may open the directory now, even while consumers keep this engine alive.
    std::lock_guard admin(admin_mutex_);
    if (offsets_ != nullptr) {
        offsets_->close();
    }
    lock_file_.reset();
}

// ---------------------------------------------------------------------------------------------
// Topics

std::shared_ptr<log_engine::topic_state> log_engine::find_topic(std::string_view name) const {
    std::shared_lock lock(topics_mutex_);
    auto it = topics_.find(name);
    return it == topics_.end() ? nullptr : it->second;
}

status log_engine::create_topic(const topic_spec& spec) {
    if (!valid_topic_name(spec.name) || spec.partitions < 1 || spec.partitions > max_partitions ||
        spec.retention_ms < -1 || spec.retention_bytes < -1) {
        return make_error_code(log_errc::invalid_argument);
    }
    {
        std::lock_guard admin(admin_mutex_);
        if (stopped()) {
            return make_error_code(log_errc::stopped);
        }
        if (find_topic(spec.name) != nullptr) {
            return {};  // idempotent: the existing topic (and its partition count) wins
        }
        auto topic = std::make_shared<topic_state>();
        topic->spec = spec;
        topic->dir = root_ / "topics" / escape_name(spec.name);
        remove_tree(topic->dir);  // a leftover without metadata (never a live topic)
        for (std::int32_t p = 0; p < spec.partitions; ++p) {
            auto partition = std::make_shared<log_partition>(
                spec.name, p, topic->dir / std::to_string(p),
                root_ / "quarantine" / escape_name(spec.name) / std::to_string(p), config_);
            if (auto recovered = partition->recover(); !recovered) {
                remove_tree(topic->dir);
                return recovered.error();
            }
            topic->partitions.push_back(std::move(partition));
        }
        // The metadata file is the commit point: recover() drops a topic directory without it.
        auto written = write_file_atomically(topic->dir / meta_file, encode_meta(spec));
        if (written) {
            written = sync_directory(root_ / "topics");
        }
        if (!written) {
            remove_tree(topic->dir);
            return written.error();
        }
        std::unique_lock lock(topics_mutex_);
        topics_.emplace(spec.name, std::move(topic));
    }
    rebalance_subscribers(spec.name);
    return {};
}

status log_engine::delete_topic(std::string_view name) {
    {
        std::lock_guard admin(admin_mutex_);
        if (stopped()) {
            return make_error_code(log_errc::stopped);
        }
        std::shared_ptr<topic_state> topic;
        {
            std::unique_lock lock(topics_mutex_);
            auto it = topics_.find(name);
            if (it == topics_.end()) {
                return make_error_code(log_errc::unknown_topic);
            }
            topic = std::move(it->second);
            topics_.erase(it);
        }
        for (const auto& partition : topic->partitions) {
            partition->mark_deleted();
        }
        // Move the directory aside while neither the writer nor maintenance touches files,
        // then delete it at leisure (a crash in between leaves it in trash/ for recover()).
        const auto trash =
            root_ / "trash" / (escape_name(name) + "." + std::to_string(++trash_counter_));
        {
            std::lock_guard maintenance(maintenance_mutex_);
            std::lock_guard io(io_mutex_);
            std::error_code ec;
            std::filesystem::rename(topic->dir, trash, ec);
            if (ec) {
                // Remove it in place rather than let the next start bring the topic back.
                spdlog::warn("embedded log: cannot move {} to trash: {}", topic->dir.string(),
                             ec.message());
                remove_tree(topic->dir);
            }
        }
        if (auto forgotten = offsets_->forget_topic(name); !forgotten) {
            spdlog::error("embedded log: cannot drop committed offsets of {}: {}", name,
                          forgotten.error().message());
        }
        remove_tree(trash);
    }
    rebalance_subscribers(name);
    return {};
}

result<std::int32_t> log_engine::partition_count(std::string_view topic) const {
    auto state = find_topic(topic);
    if (state == nullptr) {
        return make_error_code(log_errc::unknown_topic);
    }
    return state->spec.partitions;
}

result<std::shared_ptr<log_partition>> log_engine::find_partition(const topic_partition& tp) const {
    auto state = find_topic(tp.topic);
    if (state == nullptr) {
        return make_error_code(log_errc::unknown_topic);
    }
    if (tp.partition < 0 || tp.partition >= state->spec.partitions) {
        return make_error_code(log_errc::unknown_partition);
    }
    return state->partitions[static_cast<std::size_t>(tp.partition)];
}

std::size_t log_engine::segment_count_for_test(const topic_partition& tp) const {
    auto partition = find_partition(tp);
    return partition ? (*partition)->segment_count() : 0;
}

// ---------------------------------------------------------------------------------------------
// Produce and the writer thread

void log_engine::produce(std::string_view topic, std::string key, std::string value,
                         std::vector<log_header> headers, produce_callback done,
                         std::int32_t partition) {
    std::error_code error;
    std::shared_ptr<log_partition> target;
    bool state_topic = false;
    {
        std::shared_lock lock(topics_mutex_);
        auto it = topics_.find(topic);
        if (it == topics_.end()) {
            error = make_error_code(log_errc::unknown_topic);
        } else {
            const std::int32_t count = it->second->spec.partitions;
            state_topic = it->second->spec.compacted;
            if (partition < 0) {
                partition = partition_for_key(key, count);
            }
            if (partition >= count) {
                error = make_error_code(log_errc::unknown_partition);
            } else {
                target = it->second->partitions[static_cast<std::size_t>(partition)];
            }
        }
    }
    const std::size_t size = log_format::record_frame_size(key, value, headers);
    if (!error && size > config_.max_record_bytes) {
        error = make_error_code(log_errc::record_too_large);
    }
    const std::int64_t now = clock_.epoch_ms();

    std::unique_lock lock(queue_mutex_);
    if (writer_exited_) {
        // No log thread is left to run the callback: the one case it runs on the caller's.
        lock.unlock();
        done(make_error_code(log_errc::stopped));
        return;
    }
    if (!error && stopping_) {
        error = make_error_code(log_errc::stopped);
    }
    if (!error && queued_records_ > 0 &&
        (queued_records_ >= config_.max_queued_records ||
         queued_bytes_ + size > config_.max_queued_bytes)) {
        error = make_error_code(log_errc::queue_full);
    }
    pending_record& record = queue_.emplace_back();
    record.done = std::move(done);
    if (error) {
        record.error = error;
    } else {
        record.partition = std::move(target);
        record.key = std::move(key);
        record.value = std::move(value);
        record.headers = std::move(headers);
        record.timestamp_ms = now;
        record.state_topic = state_topic;
        ++queued_records_;
        queued_bytes_ += size;
    }
    ++issued_;
    const bool wake = writer_idle_;
    writer_idle_ = false;
    lock.unlock();
    if (wake) {
        queue_cv_.notify_one();
    }
}

void log_engine::writer_loop() {
    pthread_setname_np(pthread_self(), "slog-writer");
    current_writer = this;
    const bool interval = config_.fsync == fsync_policy::interval;
    std::vector<pending_record> batch;
    for (;;) {
        bool timer_due = false;
        {
            std::unique_lock lock(queue_mutex_);
            // Slowed (low disk): the next batch waits for the previous one's share of
            // slow_write_rate; records pile up in the bounded queue meanwhile.
            while (!stopping_ && std::chrono::steady_clock::now() < pace_until_) {
                queue_cv_.wait_until(lock, pace_until_);
            }
            while (queue_.empty() && !stopping_) {
                writer_idle_ = true;
                // Wake at least every fsync interval (journal commits and written segments get
                // their fdatasync even when no produce arrives) and every disk check interval
                // (a low-disk state ends without traffic).
                std::optional<std::chrono::steady_clock::time_point> wake;
                if (interval) {
                    wake = next_sync_;
                }
                if ((monitor_disk_ || space_error_) && config_.disk_check_interval.count() > 0) {
                    // (0 = a reading before every batch only; nothing to wake for.)
                    wake = wake ? std::min(*wake, next_disk_check_) : next_disk_check_;
                }
                if (!wake) {
                    queue_cv_.wait(lock);
                    continue;
                }
                if (std::chrono::steady_clock::now() >= *wake) {
                    timer_due = true;
                    break;
                }
                queue_cv_.wait_until(lock, *wake);
            }
            writer_idle_ = false;
            if (!timer_due) {
                if (queue_.empty()) {
                    break;  // stopping and drained
                }
                batch.swap(queue_);
                queued_records_ = 0;
                queued_bytes_ = 0;
            }
        }
        if (!timer_due) {
            process(batch);
            batch.clear();
        }
        if (interval && std::chrono::steady_clock::now() >= next_sync_) {
            sync_unsynced();
        }
        if (timer_due) {
            check_disk(false);
        }
    }
    // Clean stop: make everything written durable whatever the policy.
    sync_unsynced();
    if (config_.fsync == fsync_policy::none) {
        auto fd = open_file(root_, O_RDONLY | O_DIRECTORY);
        if (fd) {
            ::syncfs(fd->get());
        }
    }
    {
        std::lock_guard lock(queue_mutex_);
        writer_exited_ = true;
        // A produce() that raced with the exit may have queued after the last swap.
        batch.swap(queue_);
    }
    for (auto& record : batch) {
        record.error = make_error_code(log_errc::stopped);
        record.done(record.error);
    }
    {
        std::lock_guard lock(completion_mutex_);
        completed_ += batch.size();
    }
    completion_cv_.notify_all();
    current_writer = nullptr;
}

void log_engine::process(std::vector<pending_record>& batch) {
    check_disk(false);
    const bool refusing = current_disk_state() == disk_state::refusing;
    std::uint64_t batch_bytes = 0;
    bool failed = false;
    {
        std::lock_guard io(io_mutex_);
        std::error_code injected;
        {
            std::lock_guard lock(health_mutex_);
            injected = injected_error_;
        }
        touched_.clear();
        for (auto& record : batch) {
            if (record.error) {
                continue;
            }
            log_partition* partition = record.partition.get();
            if (refusing && !record.state_topic) {
                record.error = make_error_code(log_errc::disk_full);
                disk_refused_.fetch_add(1, std::memory_order_relaxed);
                continue;
            }
            if (partition->deleted()) {
                record.error = make_error_code(log_errc::unknown_topic);
                partition_written(partition);  // nothing of it left to be unhealthy about
                continue;
            }
            if (!partition->in_batch()) {
                partition->begin_batch();
                touched_.push_back(partition);
            }
            if (partition->batch_error()) {
                continue;
            }
            auto offset =
                partition->stage(record.timestamp_ms, record.key, record.value, record.headers);
            if (!offset) {
                partition->fail_batch(offset.error());
                continue;
            }
            record.offset = *offset;
            batch_bytes += log_format::record_frame_size(record.key, record.value, record.headers);
        }
        for (log_partition* partition : touched_) {
            if (partition->batch_error()) {
                continue;
            }
            if (injected) {
                partition->fail_batch(injected);
            } else if (auto written = partition->write_batch(); !written) {
                partition->fail_batch(written.error());
            }
        }
        if (config_.fsync == fsync_policy::always) {
            for (log_partition* partition : touched_) {
                if (!partition->batch_error()) {
                    if (auto synced = partition->sync_batch(); !synced) {
                        partition->fail_batch(synced.error());
                    }
                }
            }
        }
        for (auto& record : batch) {
            if (!record.error && record.partition && record.partition->batch_error()) {
                record.error = record.partition->batch_error();
                if (record.error.category() == std::system_category() &&
                    record.error.value() == EDQUOT) {
                    record.error = make_error_code(log_errc::disk_full);  // a quota is a full disk
                }
            }
        }
        for (log_partition* partition : touched_) {
            if (partition->batch_error()) {
                spdlog::error("embedded log: write to {}-{} failed: {}", partition->topic(),
                              partition->id(), partition->batch_error().message());
                for (const auto& record : batch) {
                    if (record.partition.get() == partition) {
                        partition_write_failed(record.partition, partition->batch_error());
                        break;
                    }
                }
                failed = true;
                partition->abort_batch();
            } else {
                partition_written(partition);
                if (config_.fsync == fsync_policy::interval) {
                    partition->collect_unsynced(unsynced_segments_, unsynced_directories_);
                }
                partition->publish_batch();
            }
        }
    }
    publish_write_health();
    written_since_check_ += batch_bytes;
    if (failed && (monitor_disk_ || space_error_)) {
        next_disk_check_ = {};  // a full disk usually explains it: read the space before the next
    }
    if (current_disk_state() == disk_state::slowed && batch_bytes > 0) {
        pace_until_ = std::chrono::steady_clock::now() +
                      std::chrono::microseconds(static_cast<std::int64_t>(batch_bytes * 1000000 /
                                                                          config_.slow_write_rate));
    }
    // Callbacks in produce order, after the records are readable.
    for (auto& record : batch) {
        try {
            if (record.error) {
                record.done(record.error);
            } else {
                record.done(produce_ack{record.partition->id(), record.offset});
            }
        } catch (...) {
            STARLING_BUG(false, "produce callback threw");
        }
    }
    {
        std::lock_guard lock(completion_mutex_);
        completed_ += batch.size();
    }
    completion_cv_.notify_all();
}

void log_engine::sync_unsynced() {
    bool failed = false;
    for (const auto& segment : unsynced_segments_) {
        segment->unsynced = false;
        if (auto synced = sync_data(segment->fd.get()); !synced) {
            // Records acknowledged in this interval may not survive a power loss (and Linux may
            // not report the lost pages again): health stays DOWN until a sync round succeeds.
            spdlog::error("embedded log: fdatasync of {} failed: {}", segment->path.string(),
                          synced.error().message());
            sync_failed(synced.error());
            failed = true;
        }
    }
    unsynced_segments_.clear();
    for (const auto& dir : unsynced_directories_) {
        // A deleted topic's directory is gone (ENOENT): nothing left to make durable.
        if (auto synced = sync_directory(dir);
            !synced && synced.error() != std::errc::no_such_file_or_directory) {
            sync_failed(synced.error());
            failed = true;
        }
    }
    unsynced_directories_.clear();
    if (!failed) {
        sync_succeeded();
    }
    offsets_->sync_if_dirty();
    next_sync_ = std::chrono::steady_clock::now() + config_.fsync_interval;
}

std::size_t log_engine::queue_depth() {
    std::lock_guard lock(queue_mutex_);
    return queued_records_;
}

status log_engine::flush(std::chrono::milliseconds timeout) {
    if (current_writer == this) {
        return make_error_code(log_errc::would_deadlock);
    }
    std::uint64_t target = 0;
    {
        std::lock_guard lock(queue_mutex_);
        target = issued_;
    }
    std::unique_lock lock(completion_mutex_);
    if (!completion_cv_.wait_for(lock, timeout, [&] { return completed_ >= target; })) {
        return make_error_code(log_errc::timed_out);
    }
    return {};
}

namespace {

bool space_error(std::error_code error) {
    return error == std::errc::no_space_on_device ||
           (error.category() == std::system_category() && error.value() == EDQUOT) ||
           error == log_errc::disk_full;
}

// A reading with at least this much free space ends an outstanding space error: the disk has
// room again even if the failed partition has no traffic to prove it.
constexpr std::uint64_t space_error_clear_bytes = 1U << 20;

}  // namespace

void log_engine::partition_write_failed(const std::shared_ptr<log_partition>& partition,
                                        std::error_code error) {
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    failing_[partition.get()] = {partition, error};
    space_error_ = space_error_ || space_error(error);
}

void log_engine::partition_written(log_partition* partition) {
    if (!failing_.empty()) {
        failing_.erase(partition);
    }
}

void log_engine::sync_failed(std::error_code error) {
    write_errors_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard lock(health_mutex_);
    sync_error_ = error;
    healthy_.store(false, std::memory_order_release);
}

void log_engine::sync_succeeded() {
    if (healthy_.load(std::memory_order_acquire)) {
        return;  // the common case: nothing to clear, no lock
    }
    std::lock_guard lock(health_mutex_);
    if (sync_error_) {
        spdlog::info("embedded log: fdatasyncs succeed again after: {}", sync_error_.message());
        sync_error_.clear();
        healthy_.store(!write_error_, std::memory_order_release);
    }
}

void log_engine::publish_write_health() {
    space_error_ = std::any_of(failing_.begin(), failing_.end(),
                               [](const auto& entry) { return space_error(entry.second.second); });
    const std::error_code now =
        failing_.empty() ? std::error_code{} : failing_.begin()->second.second;
    if (!now && healthy_.load(std::memory_order_acquire)) {
        return;  // the common case: nothing failed, nothing to clear
    }
    std::lock_guard lock(health_mutex_);
    if (write_error_ && !now) {
        spdlog::info("embedded log: writes succeed again after: {}", write_error_.message());
    }
    write_error_ = now;
    healthy_.store(!write_error_ && !sync_error_, std::memory_order_release);
}

bool log_engine::healthy() const {
    return healthy_.load(std::memory_order_acquire) && current_disk_state() != disk_state::refusing;
}

embedded_log_status log_engine::log_status() const {
    embedded_log_status out;
    out.disk = current_disk_state();
    out.min_free_bytes = config_.min_free_bytes;
    out.slow_free_bytes = config_.slow_free_bytes;
    out.disk_refused_records = disk_refused_.load(std::memory_order_relaxed);
    out.write_errors = write_errors_.load(std::memory_order_relaxed);
    out.quarantined_segments = quarantined_;
    std::lock_guard lock(health_mutex_);
    out.space = space_;
    out.write_error = write_error_ ? write_error_ : sync_error_;
    return out;
}

void log_engine::check_disk(bool force) {
    if (!monitor_disk_ && !space_error_) {
        return;
    }
    const auto now = std::chrono::steady_clock::now();
    const disk_state before = current_disk_state();
    if (!force && now < next_disk_check_) {
        if (!monitor_disk_) {
            return;  // only a space error to watch: its reading comes at the interval
        }
        // Between readings, assume every byte written came off the free space: a burst that may
        // have crossed a watermark reads the file system at once.
        std::uint64_t free = 0;
        {
            std::lock_guard lock(health_mutex_);
            free = space_.free_bytes;
        }
        const std::uint64_t nearest =
            before == disk_state::ok ? std::max(config_.min_free_bytes, config_.slow_free_bytes)
                                     : config_.min_free_bytes;
        const bool may_cross =
            have_space_ && before != disk_state::refusing &&
            (free < written_since_check_ || free - written_since_check_ < nearest);
        if (!may_cross) {
            return;
        }
    }
    next_disk_check_ = now + config_.disk_check_interval;
    written_since_check_ = 0;
    auto space = disk_source_(config_.data_dir);
    if (!space) {
        if (!disk_read_failed_) {
            spdlog::warn(
                "embedded log: cannot read the free space of {}: {}; keeping the last "
                "state ({})",
                config_.data_dir.string(), space.error().message(), to_string(before));
        }
        disk_read_failed_ = true;
        return;
    }
    disk_read_failed_ = false;
    have_space_ = true;
    {
        std::lock_guard lock(health_mutex_);
        space_ = *space;
    }
    const std::uint64_t free = space->free_bytes;
    if (space_error_ && free >= space_error_clear_bytes) {
        // Room again: a partition that failed for space is not held against health any more
        // (its next write is tried as always).
        std::erase_if(failing_, [](const auto& entry) { return space_error(entry.second.second); });
        publish_write_health();
    }
    if (!monitor_disk_) {
        return;
    }
    disk_state after = disk_state::ok;
    if (config_.min_free_bytes > 0 && free < config_.min_free_bytes) {
        after = disk_state::refusing;
    } else if (config_.slow_free_bytes > 0 && free < config_.slow_free_bytes) {
        after = disk_state::slowed;
    }
    if (after == before) {
        return;
    }
    disk_state_.store(static_cast<std::uint8_t>(after), std::memory_order_release);
    if (after == disk_state::refusing) {
        spdlog::error(
            "embedded log: {} bytes free on the file system of {}, below the minimum "
            "{}: refusing every produce until space returns",
            free, config_.data_dir.string(), config_.min_free_bytes);
    } else if (after == disk_state::slowed) {
        spdlog::warn(
            "embedded log: {} bytes free on the file system of {}, below {}: writes "
            "slowed to {} bytes/s",
            free, config_.data_dir.string(), config_.slow_free_bytes, config_.slow_write_rate);
    } else {
        spdlog::info(
            "embedded log: {} bytes free on the file system of {}: writes at full "
            "speed again",
            free, config_.data_dir.string());
        pace_until_ = {};
    }
    if (after != disk_state::ok) {
        request_maintenance();  // retention may free space now rather than in up to 30 s
    }
}

void log_engine::inject_write_error_for_test(std::error_code error) {
    std::lock_guard lock(health_mutex_);
    injected_error_ = error;
}

// ---------------------------------------------------------------------------------------------
// Maintenance

void log_engine::maintenance_loop() {
    pthread_setname_np(pthread_self(), "slog-maint");
    std::unique_lock lock(maintenance_wait_mutex_);
    while (!maintenance_stop_) {
        if (maintenance_cv_.wait_for(lock, config_.maintenance_interval,
                                     [&] { return maintenance_stop_ || maintenance_requested_; }) &&
            maintenance_stop_) {
            break;
        }
        maintenance_requested_ = false;
        lock.unlock();
        run_maintenance(false);
        lock.lock();
    }
}

void log_engine::request_maintenance() {
    {
        std::lock_guard lock(maintenance_wait_mutex_);
        maintenance_requested_ = true;
    }
    maintenance_cv_.notify_all();
}

void log_engine::run_maintenance(bool force) {
    std::lock_guard maintenance(maintenance_mutex_);
    std::vector<std::shared_ptr<topic_state>> topics;
    {
        std::shared_lock lock(topics_mutex_);
        for (const auto& [name, topic] : topics_) {
            topics.push_back(topic);
        }
    }
    const std::int64_t now = clock_.epoch_ms();
    for (const auto& topic : topics) {
        for (const auto& partition : topic->partitions) {
            if (partition->deleted()) {
                continue;
            }
            // A topic without a size bound of its own gets the log's default, unless it is
            // compacted (its closed segments hold the only copy of live keys).
            const std::int64_t retention_bytes =
                topic->spec.retention_bytes >= 0 || topic->spec.compacted
                    ? topic->spec.retention_bytes
                    : config_.default_retention_bytes;
            if (topic->spec.retention_ms >= 0 || retention_bytes >= 0) {
                partition->apply_retention(now, topic->spec.retention_ms, retention_bytes);
            }
            if (topic->spec.compacted) {
                if (auto compacted = partition->compact(now, force); !compacted) {
                    spdlog::warn("embedded log: compaction of {}-{} failed: {}", topic->spec.name,
                                 partition->id(), compacted.error().message());
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Consumers and groups

result<std::unique_ptr<log_consumer>> log_engine::create_consumer(const consumer_spec& spec) {
    const bool subscribed = !spec.topics.empty();
    if ((subscribed && !spec.assignment.empty()) || (subscribed && spec.group_id.empty()) ||
        spec.max_poll_records == 0) {
        return make_error_code(log_errc::invalid_argument);
    }
    std::vector<embedded_log_consumer::assigned_partition> manual;
    for (const auto& tp : spec.assignment) {
        auto partition = find_partition(tp);
        if (!partition) {
            return partition.error();
        }
        const bool duplicate = std::any_of(manual.begin(), manual.end(),
                                           [&](const auto& entry) { return entry.tp == tp; });
        if (!duplicate) {
            manual.push_back({tp, std::move(*partition), std::nullopt});
        }
    }

    std::lock_guard lock(groups_mutex_);
    if (stopped()) {
        return make_error_code(log_errc::stopped);
    }
    // Static members sort by instance id, so a member that comes back with the same id is
    // dealt the same partitions; dynamic ones after them, in join order.
    char sequence[24];
    std::snprintf(sequence, sizeof sequence, "%020llu",
                  static_cast<unsigned long long>(++member_sequence_));
    std::string key =
        spec.instance_id.empty() ? "~" + std::string(sequence) : "=" + spec.instance_id;
    auto consumer = std::make_unique<embedded_log_consumer>(
        shared_from_this(), spec, std::move(key), config_.fetch_buffer_bytes);
    consumers_.insert(consumer.get());
    if (subscribed) {
        auto& group = groups_[spec.group_id];
        group.members.push_back(consumer.get());
        rebalance(spec.group_id, group);
    } else {
        if (!spec.group_id.empty()) {
            for (auto& entry : manual) {
                entry.committed = offsets_->committed(spec.group_id, entry.tp);
            }
        }
        consumer->assign(std::move(manual));
    }
    return std::unique_ptr<log_consumer>(std::move(consumer));
}

void log_engine::leave(embedded_log_consumer* consumer) {
    std::lock_guard lock(groups_mutex_);
    consumers_.erase(consumer);
    if (consumer->group_managed()) {
        auto it = groups_.find(consumer->spec().group_id);
        if (it != groups_.end()) {
            std::erase(it->second.members, consumer);
            if (it->second.members.empty()) {
                groups_.erase(it);
            } else {
                rebalance(it->first, it->second);
            }
        }
    }
    consumer->assign({});
}

void log_engine::rebalance(const std::string& group_id, group_state& group) {
    std::vector<embedded_log_consumer*> members = group.members;
    std::sort(members.begin(), members.end(),
              [](const auto* a, const auto* b) { return a->member_key() < b->member_key(); });
    std::set<std::string, std::less<>> names;
    for (const auto* member : members) {
        names.insert(member->spec().topics.begin(), member->spec().topics.end());
    }
    std::map<embedded_log_consumer*, std::vector<embedded_log_consumer::assigned_partition>> plan;
    // Round-robin over the sorted members, continuing across topics so that many
    // one-partition topics spread out too.
    std::size_t turn = 0;
    std::vector<embedded_log_consumer*> subscribers;
    for (const auto& name : names) {
        auto topic = find_topic(name);
        if (topic == nullptr) {
            continue;  // not created yet: assigned when create_topic() runs
        }
        subscribers.clear();
        for (auto* member : members) {
            if (member->subscribes_to(name)) {
                subscribers.push_back(member);
            }
        }
        for (std::int32_t p = 0; p < topic->spec.partitions; ++p) {
            auto* owner = subscribers[turn++ % subscribers.size()];
            topic_partition tp{name, p};
            auto committed = offsets_->committed(group_id, tp);
            plan[owner].push_back(
                {std::move(tp), topic->partitions[static_cast<std::size_t>(p)], committed});
        }
    }
    for (auto* member : members) {
        member->assign(std::move(plan[member]));
    }
}

void log_engine::rebalance_subscribers(std::string_view topic) {
    std::lock_guard lock(groups_mutex_);
    for (auto& [id, group] : groups_) {
        const bool affected = std::any_of(group.members.begin(), group.members.end(),
                                          [&](const auto* m) { return m->subscribes_to(topic); });
        if (affected) {
            rebalance(id, group);
        }
    }
}

}  // namespace starling::adapters::embedded
