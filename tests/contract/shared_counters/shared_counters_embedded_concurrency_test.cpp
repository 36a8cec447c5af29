// The shared-counters concurrency contract against the embedded adapter (label `concurrency`:
// run it in the TSan build).

#include "contract/shared_counters/shared_counters_embedded_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(embedded, shared_counters_concurrency,
                         ::testing::Values(std::make_shared<embedded_counters_factory>()),
                         factory_name<shared_counters_factory>);

}  // namespace starling::testing
