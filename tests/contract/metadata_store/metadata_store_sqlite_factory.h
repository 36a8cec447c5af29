#pragma once

// The SQLite metadata store behind the contract suites: each store gets its own temporary
// data_dir, removed when the store is destroyed.

#include "adapters/embedded/sqlite_metadata_store.h"

#include "contract/device_inbox/contract_support.h"
#include "contract/metadata_store/metadata_store_contract.h"

#include <memory>

namespace starling::testing {

class sqlite_metadata_store_factory final : public metadata_store_factory {
  public:
    std::string name() const override { return "sqlite"; }

    std::shared_ptr<metadata_store> create(const clock& clk) override {
        auto dir = std::make_shared<temp_dir>();
        auto store =
            adapters::embedded::sqlite_metadata_store::open({.data_dir = dir->path()}, clk);
        if (!store) {
            ADD_FAILURE() << "open: " << store.error().message();
            return nullptr;
        }
        return std::shared_ptr<metadata_store>(store->release(),
                                               [dir](metadata_store* p) { delete p; });
    }
};

}  // namespace starling::testing
