#pragma once

// Blocked clients (TBMQ's BlockedClientProto / BlockedClientController): operator rules that
// refuse a CONNECT before any auth provider runs. A rule blocks one client id, one username,
// one IP address, or every client whose id, username or IP matches a regular expression; it
// may expire.
//
// Structure: an immutable snapshot holds three hash maps (client id, username, IP → entry) and
// the regex entries in insertion order, each compiled once when added. Readers take a
// reference to the current snapshot and look up in it with no lock held; writers serialize on
// their own mutex, copy the snapshot, change the copy and publish it (RCU-style). A check is
// three O(1) hash lookups plus one match per regex rule, whatever the number of exact rules.
// Writes copy the maps (O(n)): rules change at operator speed, checks run at connect rate.
//
// Publishing the pointer: a tiny mutex held only to copy or swap the shared_ptr (one refcount
// increment), never while a writer copies maps or a reader matches. Not std::atomic<shared_ptr>:
// libstdc++ 12's is not lock-free either (a spin bit in the refcount word), and it unlocks
// after a load with relaxed ordering, which ThreadSanitizer rightly reports as a race with the
// next store.

#include "base/result.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace starling::auth {

enum class block_type : std::uint8_t { client_id, username, ip_address, regex };
enum class regex_target : std::uint8_t { client_id, username, ip_address };

struct blocked_entry {
    block_type type = block_type::client_id;
    // The client id, username, IP address (no port; IPv4 dotted quad or IPv6 text, stored in
    // canonical form) or, for regex, the pattern (RE2 syntax, auth/pattern.h: Perl-like
    // without backreferences or lookaround, matched against the whole target in linear time).
    std::string value;
    std::int64_t expires_at_ms = 0;  // wall-clock ms since the epoch; 0 = never
    std::string description;         // returned by check() as the reason, when not empty
    regex_target target = regex_target::client_id;  // what a regex is matched against

    bool operator==(const blocked_entry&) const = default;
};

enum class blocked_error : int {
    // The entry's value is empty.
    empty_value = 1,
    // A regex entry whose pattern does not compile.
    invalid_regex,
    // An ip_address entry whose value is not an IPv4 or IPv6 address.
    invalid_ip_address,
};

const std::error_category& blocked_category();

std::error_code make_error_code(blocked_error e);

std::string_view to_string(block_type type);      // "client_id", "username", "ip_address", "regex"
std::string_view to_string(regex_target target);  // "client_id", "username", "ip_address"

// TBMQ's names, used by the client.blocked records and the REST API: CLIENT_ID, USERNAME,
// IP_ADDRESS, REGEX; BY_CLIENT_ID, BY_USERNAME, BY_IP_ADDRESS for the regex target.
std::string_view tbmq_name(block_type type);
std::string_view tbmq_name(regex_target target);
std::optional<block_type> block_type_from_tbmq(std::string_view name);
std::optional<regex_target> regex_target_from_tbmq(std::string_view name);

// Lifecycle: one per node, created by the composition root, filled from the client.blocked
// topic and the admin API, consulted on every CONNECT.
// Ownership: owns its entries and compiled patterns.
// Concurrency: every member may be called from any thread. check() and list() read an
// immutable snapshot and never wait for a writer's work (only, at most, for a pointer swap);
// add(), remove() and purge_expired() serialize among themselves.
class blocked_clients {
  public:
    blocked_clients();
    ~blocked_clients();
    blocked_clients(const blocked_clients&) = delete;
    blocked_clients& operator=(const blocked_clients&) = delete;

    // Adds the entry, replacing one with the same (type, value). Errors (and a log line naming
    // the value): empty_value, invalid_regex, invalid_ip_address; describe_error() has the
    // text for an API response.
    status add(blocked_entry e);

    // Removes the entry with this (type, value); false when there was none. An IP address
    // value is matched in canonical form, like add() stores it.
    bool remove(block_type type, const std::string& value);

    // Every entry not expired at now_ms, exact types first, then regexes in insertion order.
    std::vector<blocked_entry> list(std::int64_t now_ms) const;

    // Why the client is blocked (the matching entry's description, or a generated reason), or
    // nullopt. ip is the address without port, as transport::remote_address() formats it (an
    // IPv4-mapped IPv6 address also matches its IPv4 rule). Expired entries never match.
    std::optional<std::string> check(std::string_view client_id,
                                     std::optional<std::string_view> username, std::string_view ip,
                                     std::int64_t now_ms) const;

    // Drops every entry expired at now_ms; returns how many.
    std::size_t purge_expired(std::int64_t now_ms);

    // Number of entries, expired ones included until purged.
    std::size_t size() const;

    // The value as add() stores it: an IP address in canonical form, anything else unchanged
    // (so a persisted record's key names the same rule however the operator spelled it).
    static std::string canonical_value(block_type type, const std::string& value);

    // The error add() would return for the entry, without logging or adding anything.
    static status validate(const blocked_entry& e);

    // Why add() would refuse the entry ("regex 'a(' is invalid: ..."), or nullopt.
    static std::optional<std::string> describe_error(const blocked_entry& e);

  private:
    struct snapshot;

    std::shared_ptr<const snapshot> load() const;
    void publish(std::shared_ptr<const snapshot> next);

    std::mutex write_mutex_;                   // serializes writers; readers never take it
    mutable std::mutex pointer_mutex_;         // guards current_ itself, never held for long
    std::shared_ptr<const snapshot> current_;  // guarded by pointer_mutex_
};

}  // namespace starling::auth

template <>
struct std::is_error_code_enum<starling::auth::blocked_error> : std::true_type {};
