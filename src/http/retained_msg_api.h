#pragma once

// TBMQ's retained-message REST API (RetainedMsgController) on Starling's router:
//
//   GET    /api/retained-msg?topicName=<topic>   one message; 404 when none is retained there
//   GET    /api/retained-msg?pageSize=&page=&textSearch=&topicFilter=&sortProperty=&sortOrder=
//          TBMQ's PageData of messages. pageSize 1..1000 (default 100), page from 0;
//          textSearch keeps topics containing it (case-insensitive); topicFilter (Starling's)
//          keeps those an MQTT filter matches ("sensors/+/temp"; default "#", which leaves out
//          '$' topics as MQTT does); sortProperty topic (default) | qos | createdTime,
//          sortOrder ASC (default) | DESC
//   DELETE /api/retained-msg?topicName=<topic>   200 once the deletion is in the log; 404 when
//          none was retained there
//
// A message is {"topic","payload","qos","createdTime","userProperties"} as TBMQ's
// RetainedMsgDto: the payload as text (bytes that are not UTF-8 become U+FFFD),
// userProperties {"props":[{"k","v"}, ...]} or null when there are none. Expired messages are
// not listed.
//
// The node answers from its mirror of msg.retained (in a cluster every node follows the
// compacted topic), so any node answers for the whole cluster, a few milliseconds behind a
// write on another node. A DELETE writes a tombstone to msg.retained — every node drops the
// message as it reads it — and, unlike an empty retained PUBLISH, sends nothing to subscribers.
//
// Every route needs an admin bearer token (api_access), 401 otherwise; when
// the API is disabled the routes are not registered (as the other /api routes).
//
// Lifecycle: whatever the functions reference must outlive the server the router goes into.
// Concurrency: `list`/`find` run on the I/O thread and must not block (the retained store is an
// in-memory trie); `erase` answers from any thread.

#include "base/result.h"
#include "http/api_support.h"
#include "http/router.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace starling::http {

struct retained_view {
    std::string topic;
    std::string payload;
    int qos = 0;
    std::int64_t created_time_ms = 0;
    std::vector<std::pair<std::string, std::string>> user_properties;
};

struct retained_msg_api {
    // The unexpired messages whose topic `filter` matches; nullopt when `filter` is not a valid
    // MQTT topic filter.
    std::function<std::optional<std::vector<retained_view>>(const std::string& filter)> list;
    // The message retained under exactly `topic`.
    std::function<std::optional<retained_view>(const std::string& topic)> find;
    // Deletes it cluster-wide; done(false) when nothing was retained under `topic`.
    std::function<void(std::string topic, std::function<void(result<bool>)> done)> erase;
    api_access access;  // who may call these routes
};

void add_retained_msg_routes(router& routes, retained_msg_api api);

}  // namespace starling::http
