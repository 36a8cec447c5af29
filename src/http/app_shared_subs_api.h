#pragma once

// TBMQ's APPLICATION shared-subscription REST API (ApplicationSharedSubscriptionController):
// the definitions that say how many partitions msg.app.shared.<filter> gets when Starling
// creates it, so the members of an APPLICATION share can split its stream
// (broker/app_shared_topics.h).
//
//   GET    /api/app/shared/subs?pageSize=&page=&textSearch=   PageData ordered by topic;
//          textSearch keeps topics containing it (case-insensitive)
//   GET    /api/app/shared/subs/{id}                          one; 404
//   POST   /api/app/shared/subs  {"topic", "partitions" (1..10000), "name", "id"?}
//          creates one (a new id) or, with an id or an existing topic, updates it; answers the
//          stored entity. 400 naming a bad field (the topic must be a valid MQTT topic filter,
//          not a $share one)
//   DELETE /api/app/shared/subs/{id}                          {}; 404
//
// An entity is {"id", "createdTime", "topic", "partitions", "name"}. The partition count is
// used when the topic is created: changing or deleting a definition does not touch a topic that
// already exists (Kafka cannot take partitions away, and adding some would move keys).
//
// Needs the admin bearer token (401 otherwise); not registered without one. The store answers
// on its own threads.

#include "http/api_support.h"
#include "http/router.h"
#include "starling/metadata_store.h"

#include <string>

namespace starling::http {

void add_app_shared_subs_routes(router& routes, metadata_store& store, api_access access);

}  // namespace starling::http
