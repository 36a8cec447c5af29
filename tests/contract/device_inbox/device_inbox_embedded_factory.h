#pragma once

// The embedded inbox behind the contract suites: each inbox gets its own temporary data_dir,
// removed when the inbox is destroyed.

#include "adapters/embedded/device_inbox.h"

#include "contract/device_inbox/contract_support.h"
#include "contract/device_inbox/device_inbox_contract.h"

#include <memory>

namespace starling::testing {

class embedded_inbox_factory final : public device_inbox_factory {
  public:
    std::string name() const override { return "embedded"; }

    std::shared_ptr<device_inbox> create(const inbox_settings& settings,
                                         const clock& clk) override {
        auto dir = std::make_shared<temp_dir>();
        auto inbox = adapters::embedded::embedded_device_inbox::open(
            {.data_dir = dir->path(), .settings = settings}, clk);
        if (!inbox) {
            ADD_FAILURE() << "open: " << inbox.error().message();
            return nullptr;
        }
        // The deleter owns the directory, so it outlives the inbox's file.
        return std::shared_ptr<device_inbox>(inbox->release(),
                                             [dir](device_inbox* p) { delete p; });
    }
};

}  // namespace starling::testing
