// The metadata-store concurrency contract against SQLite (label `concurrency`: run it in the
// TSan build).

#include "contract/metadata_store/metadata_store_sqlite_factory.h"

namespace starling::testing {

INSTANTIATE_TEST_SUITE_P(sqlite, metadata_store_concurrency,
                         ::testing::Values(std::make_shared<sqlite_metadata_store_factory>()),
                         factory_name<metadata_store_factory>);

}  // namespace starling::testing
