#pragma once

// Error codes of the embedded message log.
//
// Each value compares equal to the nearest std::errc condition (queue_full ==
// std::errc::resource_unavailable_try_again, unknown_topic == std::errc::no_such_file_or_directory,
// ...) so the broker and the message-log contract suite can test conditions without naming this
// adapter; the Kafka adapter maps librdkafka's errors onto the same conditions. I/O failures are
// reported with the errno that caused them (std::system_category), e.g. ENOSPC for a full disk.

#include <system_error>

namespace starling::adapters::embedded {

enum class log_errc {
    queue_full = 1,     // the producer queue is at its bound: back off and retry
    stopped,            // the log is stopping or stopped
    unknown_topic,      // no such topic (or it was deleted)
    unknown_partition,  // the topic has no such partition
    invalid_argument,   // the call's arguments break the port's rules
    record_too_large,   // key + value + headers exceed max_record_bytes
    not_assigned,       // the partition is not assigned to this consumer
    consumer_closed,    // the consumer was closed
    timed_out,          // flush() ran out of time
    would_deadlock,     // flush() called from a produce callback (the writer thread)
    corrupt_data,       // a file under data_dir failed its checks
    disk_full,          // free space below min_free_bytes (or EDQUOT): retry when space returns
};

const std::error_category& log_category();
std::error_code make_error_code(log_errc e);

}  // namespace starling::adapters::embedded

template <>
struct std::is_error_code_enum<starling::adapters::embedded::log_errc> : std::true_type {};
