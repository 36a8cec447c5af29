// The message-log contract against the embedded log. Segments are tiny (4 KiB) so every test
// also crosses segment boundaries, and compaction can be forced through the test hook.

#include "adapters/embedded/message_log.h"

#include "contract/message_log/message_log_contract.h"

#include <memory>

namespace starling::testing {

namespace {

using adapters::embedded::embedded_log_config;
using adapters::embedded::embedded_message_log;

class embedded_log_backend final : public message_log_backend {
  public:
    std::unique_ptr<message_log> open() override {
        embedded_log_config config;
        config.data_dir = dir_.path();
        config.segment_bytes = 4096;
        config.index_interval_bytes = 512;
        config.maintenance_interval = std::chrono::milliseconds(0);  // only when told to
        auto log = embedded_message_log::open(config);
        if (!log) {
            ADD_FAILURE() << "open: " << log.error().message();
            return nullptr;
        }
        return std::move(*log);
    }

    bool compact_now(message_log& log) override {
        static_cast<embedded_message_log&>(log).run_maintenance_for_test();
        return true;
    }

  private:
    temp_dir dir_;
};

class embedded_log_factory final : public message_log_factory {
  public:
    std::string name() const override { return "embedded"; }
    std::unique_ptr<message_log_backend> new_backend() override {
        return std::make_unique<embedded_log_backend>();
    }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(embedded, message_log_contract,
                         ::testing::Values(std::make_shared<embedded_log_factory>()),
                         factory_name<message_log_factory>);

}  // namespace starling::testing
