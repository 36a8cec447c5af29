#pragma once

// Helpers for the embedded message log's own tests (tests/unit/adapters/embedded_log/): open a
// log over a temp dir with small segments, produce synchronously, read a partition back, list
// its segment files. Temp dirs, the manual clock and await() come from the contract helpers.

#include "adapters/embedded/message_log.h"
#include "starling/message_log.h"

#include "contract/device_inbox/contract_support.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace starling::testing {

using adapters::embedded::embedded_log_config;
using adapters::embedded::embedded_message_log;
using adapters::embedded::fsync_policy;
using adapters::embedded::log_errc;

inline embedded_log_config small_log_config(const std::filesystem::path& dir) {
    embedded_log_config config;
    config.data_dir = dir;
    config.segment_bytes = 1024;
    config.index_interval_bytes = 256;
    config.maintenance_interval = std::chrono::milliseconds(0);  // tests run it by hand
    return config;
}

// consumer_spec builders (designated initializers would leave its strings uninitialized in
// -Wextra's eyes).
inline consumer_spec subscription(std::string group, std::vector<std::string> topics) {
    consumer_spec spec;
    spec.group_id = std::move(group);
    spec.topics = std::move(topics);
    return spec;
}

inline consumer_spec manual(std::vector<topic_partition> partitions, std::string group = {}) {
    consumer_spec spec;
    spec.group_id = std::move(group);
    spec.assignment = std::move(partitions);
    return spec;
}

inline std::unique_ptr<embedded_message_log> open_log(const embedded_log_config& config) {
    auto log = embedded_message_log::open(config);
    EXPECT_TRUE(log) << "open: " << log.error().message();
    return log ? std::move(*log) : nullptr;
}

inline result<produce_ack> produce_sync(message_log& log, const std::string& topic, std::string key,
                                        std::string value, std::int32_t partition = -1) {
    return await<result<produce_ack>>([&](auto done) {
        log.produce(topic, std::move(key), std::move(value), {}, std::move(done), partition);
    });
}

// Every record of `tp` from `from` up to the end offset at the time of the call, read with a
// manual-assignment consumer (earliest reset).
inline std::vector<log_record> read_partition(message_log& log, const topic_partition& tp,
                                              std::int64_t from = 0) {
    auto consumer = log.create_consumer(manual({tp}));
    EXPECT_TRUE(consumer) << consumer.error().message();
    std::vector<log_record> out;
    if (!consumer) {
        return out;
    }
    auto end = (*consumer)->end_offset(tp);
    EXPECT_TRUE(end);
    if (from > 0) {
        EXPECT_TRUE((*consumer)->seek(tp, from));
    }
    std::int64_t next = from;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (end && next < *end && std::chrono::steady_clock::now() < until) {
        auto records = (*consumer)->poll(std::chrono::milliseconds(100));
        if (!records) {
            ADD_FAILURE() << "poll: " << records.error().message();
            break;
        }
        for (auto& record : *records) {
            next = record.offset + 1;
            out.push_back(std::move(record));
        }
    }
    return out;
}

inline std::filesystem::path partition_dir(const std::filesystem::path& data_dir,
                                           const std::string& topic, std::int32_t partition) {
    return data_dir / "log" / "topics" / topic / std::to_string(partition);
}

// The partition's segment files, oldest first.
inline std::vector<std::filesystem::path> segment_files(const std::filesystem::path& data_dir,
                                                        const std::string& topic,
                                                        std::int32_t partition) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry :
         std::filesystem::directory_iterator(partition_dir(data_dir, topic, partition))) {
        if (entry.path().extension() == ".log") {
            files.push_back(entry.path());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

}  // namespace starling::testing
