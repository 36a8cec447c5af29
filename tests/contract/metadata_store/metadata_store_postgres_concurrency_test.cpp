// The metadata-store concurrency contract against PostgreSQL (labels contract, postgres,
// concurrency): several threads' calls spread over the pool's connections.

#include "contract/metadata_store/metadata_store_postgres_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(postgres, metadata_store_concurrency,
                         ::testing::Values(std::make_shared<postgres_metadata_store_factory>()),
                         factory_name<metadata_store_factory>);

}  // namespace starling::testing
