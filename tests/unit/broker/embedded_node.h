#pragma once

// embedded_node: one broker::node on the real embedded adapters (message log, device inbox,
// SQLite metadata) in a directory the test owns, as starlingd runs it in embedded mode. open()
// and close() may be called again, which is a graceful restart over the same data.
//
// Lifecycle: the caller owns it; close() (also run by the destructor) stops the node, then the
// adapters. Concurrency: open/close from the test thread only.

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/message_log.h"
#include "adapters/embedded/shared_counters.h"
#include "adapters/embedded/sqlite_metadata_store.h"
#include "broker/node.h"
#include "metrics/registry.h"

#include "holding_metadata_store.h"
#include "reordering_log.h"

#include <chrono>
#include <filesystem>
#include <memory>

namespace starling::testing {

class embedded_node {
  public:
    embedded_node(std::filesystem::path dir, metrics::registry& metrics)
        : dir_(std::move(dir)), metrics_(metrics) {}

    // The clock the node and its stores read (a testing::manual_clock for timed behaviour);
    // before the first open(), and it must outlive this object.
    void use_clock(const starling::clock& c) { clock_ = &c; }
    ~embedded_node() { close(); }
    embedded_node(const embedded_node&) = delete;
    embedded_node& operator=(const embedded_node&) = delete;

    // Opens the adapters and starts a node with `s`. The node gets this object's in-process
    // shared counters, and the quota in `admission` if any (its counters are ignored).
    void open(const broker::settings& s, broker::admission_services admission = {}) {
        adapters::embedded::embedded_log_config log_cfg;
        log_cfg.data_dir = dir_;
        log_ = std::move(adapters::embedded::embedded_message_log::open(log_cfg).value());
        adapters::embedded::embedded_device_inbox::options inbox_opts;
        inbox_opts.data_dir = dir_;
        inbox_ =
            std::move(adapters::embedded::embedded_device_inbox::open(inbox_opts, *clock_).value());
        adapters::embedded::sqlite_metadata_store::options meta_opts;
        meta_opts.data_dir = dir_;
        metadata_ =
            std::move(adapters::embedded::sqlite_metadata_store::open(meta_opts, *clock_).value());
        // The node writes through a pass-through decorator that tests may ask to reorder
        // acknowledgements (log_acks()).
        log_acks_ = std::make_unique<reordering_log>(*log_);
        // Likewise for the metadata store's session-context writes (metadata_holds()).
        metadata_holds_ = std::make_unique<holding_metadata_store>(*metadata_);
        admission.counters = &counters_;
        node_ = std::make_unique<broker::node>(s, *log_acks_, *inbox_, *metadata_holds_, metrics_,
                                               2, *clock_, admission);
        node_->start();
    }

    void close() {
        if (node_) {
            node_->stop(std::chrono::seconds(2));
            node_.reset();
        }
        if (log_) {
            log_->stop();  // before the decorator goes: the log may still call its callbacks
        }
        log_acks_.reset();
        metadata_holds_.reset();  // passes on what it still holds, before the store stops
        if (inbox_) {
            inbox_->stop();
        }
        if (metadata_) {
            metadata_->stop();
        }
        log_.reset();
        inbox_.reset();
        metadata_.reset();
    }

    bool is_open() const { return node_ != nullptr; }
    broker::node& get() { return *node_; }
    broker::broker_core& core() { return node_->core(); }
    adapters::embedded::embedded_device_inbox& inbox() { return *inbox_; }
    adapters::embedded::embedded_shared_counters& counters() { return counters_; }
    reordering_log& log_acks() { return *log_acks_; }
    holding_metadata_store& metadata_holds() { return *metadata_holds_; }

  private:
    std::filesystem::path dir_;
    metrics::registry& metrics_;
    const starling::clock* clock_ = &system_clock::instance();
    std::unique_ptr<adapters::embedded::embedded_message_log> log_;
    std::unique_ptr<reordering_log> log_acks_;
    std::unique_ptr<holding_metadata_store> metadata_holds_;
    std::unique_ptr<adapters::embedded::embedded_device_inbox> inbox_;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> metadata_;
    adapters::embedded::embedded_shared_counters counters_{system_clock::instance()};
    std::unique_ptr<broker::node> node_;
};

}  // namespace starling::testing
