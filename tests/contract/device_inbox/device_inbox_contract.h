#pragma once

// Contract suite of the device-inbox port (include/starling/device_inbox.h). Every adapter
// passes the same tests: an adapter's test file defines a device_inbox_factory and
// instantiates the suites with it, e.g.
//
//   INSTANTIATE_TEST_SUITE_P(embedded, device_inbox_contract,
//                            ::testing::Values(std::make_shared<my_factory>()),
//                            starling::testing::factory_name);
//
// device_inbox_contract holds the single-threaded rules; device_inbox_concurrency runs calls
// from several threads at once (its executable carries the `concurrency` label and runs under
// TSan). The test bodies live in device_inbox_contract.cpp / device_inbox_concurrency.cpp,
// each built as an object library so every adapter's executable links them whole.

#include "starling/device_inbox.h"

#include "contract/device_inbox/contract_support.h"
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace starling::testing {

class device_inbox_factory {
  public:
    virtual ~device_inbox_factory() = default;
    virtual std::string name() const = 0;
    // A new inbox with no data, reading time from `clk` (which outlives it). Destroying the
    // returned pointer stops the inbox and releases whatever backs it.
    virtual std::shared_ptr<device_inbox> create(const inbox_settings& settings,
                                                 const clock& clk) = 0;
};

using device_inbox_factory_ptr = std::shared_ptr<device_inbox_factory>;

// Test names show the adapter ("# GetParam() = embedded"), not a pointer that differs per run.
inline void PrintTo(const device_inbox_factory_ptr& factory, std::ostream* os) {
    *os << factory->name();
}

// Synchronous wrappers over the port for the test bodies (inline: both suites' object
// libraries use them).
class device_inbox_test_base : public ::testing::TestWithParam<device_inbox_factory_ptr> {
  protected:
    void SetUp() override { inbox_ = make(settings_); }

    std::shared_ptr<device_inbox> make(const inbox_settings& settings) {
        return GetParam()->create(settings, clock_);
    }

    result<device_inbox::append_result> append(const std::string& client,
                                               std::vector<inbox_entry> batch) {
        return append_to(*inbox_, client, std::move(batch));
    }

    static result<device_inbox::append_result> append_to(device_inbox& inbox,
                                                         const std::string& client,
                                                         std::vector<inbox_entry> batch) {
        return await<result<device_inbox::append_result>>(
            [&](auto done) { inbox.append(client, std::move(batch), std::move(done)); });
    }

    static std::vector<inbox_entry> entries(std::size_t n, const std::string& prefix = "m",
                                            std::int64_t expires_at_ms = 0) {
        std::vector<inbox_entry> batch;
        for (std::size_t i = 0; i < n; ++i) {
            batch.push_back({prefix + std::to_string(i), expires_at_ms});
        }
        return batch;
    }

    // Appends `n` entries with records "<prefix>0", "<prefix>1", ... and the default TTL;
    // returns the packet ids (empty, with a test failure, if the append failed).
    std::vector<std::uint16_t> append_n(const std::string& client, std::size_t n,
                                        const std::string& prefix = "m") {
        auto r = append(client, entries(n, prefix));
        EXPECT_TRUE(r.has_value()) << r.error().message();
        return r ? r->packet_ids : std::vector<std::uint16_t>{};
    }

    result<std::vector<inbox_message>> read(const std::string& client, std::size_t max = 100000) {
        return await<result<std::vector<inbox_message>>>(
            [&](auto done) { inbox_->read_pending(client, max, std::move(done)); });
    }

    // Packet ids of read(client), oldest first.
    std::vector<std::uint16_t> pending_ids(const std::string& client) {
        auto r = read(client);
        EXPECT_TRUE(r.has_value()) << r.error().message();
        std::vector<std::uint16_t> ids;
        if (r) {
            for (const auto& m : *r) {
                ids.push_back(m.packet_id);
            }
        }
        return ids;
    }

    status remove(const std::string& client, std::uint16_t packet_id) {
        return await<status>(
            [&](auto done) { inbox_->remove(client, packet_id, std::move(done)); });
    }
    status mark_pubrel(const std::string& client, std::uint16_t packet_id) {
        return await<status>(
            [&](auto done) { inbox_->mark_pubrel(client, packet_id, std::move(done)); });
    }
    status clear(const std::string& client) {
        return await<status>([&](auto done) { inbox_->clear(client, std::move(done)); });
    }

    manual_clock clock_;
    inbox_settings settings_{.max_messages = 100, .default_ttl_ms = 60000};
    std::shared_ptr<device_inbox> inbox_;
};

class device_inbox_contract : public device_inbox_test_base {};
class device_inbox_concurrency : public device_inbox_test_base {};

}  // namespace starling::testing
