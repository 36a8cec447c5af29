// fsync_commits is what `queue.embedded.fsync: always` turns on for the SQLite stores: each
// commit is fsynced (synchronous=FULL), so an inbox append whose msg.persisted offset was
// committed (and fsynced by the log) cannot be lost to a power cut. Without it: NORMAL.

#include "adapters/embedded/device_inbox.h"
#include "adapters/embedded/sqlite_metadata_store.h"

#include "contract/device_inbox/contract_support.h"
#include <gtest/gtest.h>

namespace starling::testing {
namespace {

using adapters::embedded::embedded_device_inbox;
using adapters::embedded::sqlite_metadata_store;

constexpr std::int64_t sqlite_normal = 1;
constexpr std::int64_t sqlite_full = 2;

std::int64_t inbox_synchronous(bool fsync_commits) {
    temp_dir dir;
    manual_clock clk;
    auto inbox =
        embedded_device_inbox::open({.data_dir = dir.path(), .fsync_commits = fsync_commits}, clk);
    EXPECT_TRUE(inbox) << inbox.error().message();
    return inbox ? (*inbox)->synchronous_mode() : -1;
}

std::int64_t metadata_synchronous(bool fsync_commits) {
    temp_dir dir;
    manual_clock clk;
    auto store =
        sqlite_metadata_store::open({.data_dir = dir.path(), .fsync_commits = fsync_commits}, clk);
    EXPECT_TRUE(store) << store.error().message();
    return store ? (*store)->synchronous_mode() : -1;
}

TEST(embedded_store_durability, device_inbox_commits_are_fsynced_with_fsync_commits) {
    EXPECT_EQ(inbox_synchronous(false), sqlite_normal);
    EXPECT_EQ(inbox_synchronous(true), sqlite_full);
}

TEST(embedded_store_durability, metadata_commits_are_fsynced_with_fsync_commits) {
    EXPECT_EQ(metadata_synchronous(false), sqlite_normal);
    EXPECT_EQ(metadata_synchronous(true), sqlite_full);
}

}  // namespace
}  // namespace starling::testing
