// The device-inbox concurrency contract against the Redis adapter (labels contract, redis,
// concurrency). Needs STARLING_TEST_REDIS; skips without it.

#include "contract/device_inbox/device_inbox_redis_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(redis, device_inbox_concurrency,
                         ::testing::Values(std::make_shared<redis_inbox_factory>()),
                         factory_name<device_inbox_factory>);

}  // namespace starling::testing
