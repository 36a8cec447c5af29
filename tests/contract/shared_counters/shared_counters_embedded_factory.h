#pragma once

#include "adapters/embedded/shared_counters.h"

#include "contract/shared_counters/shared_counters_contract.h"

#include <memory>

namespace starling::testing {

class embedded_counters_factory final : public shared_counters_factory {
  public:
    std::string name() const override { return "embedded"; }
    std::shared_ptr<shared_counters> create(const clock& clk) override {
        return std::make_shared<adapters::embedded::embedded_shared_counters>(clk);
    }
};

}  // namespace starling::testing
