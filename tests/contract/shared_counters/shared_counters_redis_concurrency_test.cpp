// The shared-counters concurrency contract against the Redis adapter (labels contract, redis,
// concurrency).

#include "contract/shared_counters/shared_counters_redis_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(redis, shared_counters_concurrency,
                         ::testing::Values(std::make_shared<redis_counters_factory>()),
                         factory_name<shared_counters_factory>);

}  // namespace starling::testing
