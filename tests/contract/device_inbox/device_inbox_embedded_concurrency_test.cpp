// The device-inbox concurrency contract against the embedded adapter (label `concurrency`:
// run it in the TSan build).

#include "contract/device_inbox/device_inbox_embedded_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(embedded, device_inbox_concurrency,
                         ::testing::Values(std::make_shared<embedded_inbox_factory>()),
                         factory_name<device_inbox_factory>);

}  // namespace starling::testing
