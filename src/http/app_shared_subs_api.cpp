#include "http/app_shared_subs_api.h"

#include "auth/random_uuid.h"
#include "http/api_support.h"
#include "mqtt/reason_code.h"
#include "mqtt/topic.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/app/shared/subs";
constexpr std::int64_t max_partitions = 10'000;

response bad(std::string_view message) { return error_response(status_code::bad_request, message); }

response unavailable(const std::error_code& ec) {
    return error_response(status_code::service_unavailable,
                          "the metadata store cannot answer: " + ec.message());
}

json to_json(const application_shared_subscription& e) {
    return {{"id", e.id},
            {"createdTime", e.created_time_ms},
            {"topic", e.topic_filter},
            {"partitions", e.partitions},
            {"name", e.name}};
}

// A random (version 4) UUID, as TBMQ's entity ids.
std::string new_id() {
    auto id = auth::random_uuid();
    if (id.empty()) {
        throw std::runtime_error("RAND_bytes failed");
    }
    return id;
}

// A topic filter as MQTT allows it (mqtt::validate_topic_filter), without the $share/ form:
// a definition names the filter of the share, not a share.
bool valid_filter(std::string_view f) {
    return !mqtt::is_shared(f) && mqtt::validate_topic_filter(f) == mqtt::reason_code::success;
}

std::variant<application_shared_subscription, response> entity_of(std::string_view text) {
    const json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) {
        return bad("body: expected a JSON object");
    }
    application_shared_subscription e;
    auto topic = body.find("topic");
    if (topic == body.end() || !topic->is_string() ||
        !valid_filter(topic->get_ref<const std::string&>())) {
        return bad("topic: a valid MQTT topic filter is required (not a $share/ one)");
    }
    e.topic_filter = topic->get<std::string>();
    auto partitions = body.find("partitions");
    if (partitions == body.end() || !partitions->is_number_integer() ||
        partitions->get<std::int64_t>() < 1 || partitions->get<std::int64_t>() > max_partitions) {
        return bad("partitions: an integer from 1 to 10000 is required");
    }
    e.partitions = partitions->get<std::int32_t>();
    if (auto name = body.find("name"); name != body.end() && !name->is_null()) {
        if (!name->is_string()) {
            return bad("name: expected a string");
        }
        e.name = name->get<std::string>();
    }
    if (auto id = body.find("id"); id != body.end() && !id->is_null()) {
        if (!id->is_string() || id->get_ref<const std::string&>().empty()) {
            return bad("id: expected a non-empty string");
        }
        e.id = id->get<std::string>();
    }
    return e;
}

// Saves `e` and answers the row as stored.
void save(metadata_store& store, application_shared_subscription e, responder done) {
    const std::string topic = e.topic_filter;
    store.save_application_shared_subscription(std::move(e), [&store, done = std::move(done),
                                                              topic](status st) mutable {
        if (!st) {
            done(unavailable(st.error()));
            return;
        }
        spdlog::info("APPLICATION shared subscription for '{}' saved", topic);
        store.find_application_shared_subscription(
            topic,
            [done = std::move(done)](result<std::optional<application_shared_subscription>> found) {
                if (!found || !*found) {
                    done(error_response(status_code::service_unavailable,
                                        "saved, but the metadata store did not return it"));
                    return;
                }
                done(json_response(to_json(**found)));
            });
    });
}

}  // namespace

void add_app_shared_subs_routes(router& routes, metadata_store& store, api_access access) {
    admin_routes admin(routes, std::move(access));
    if (!admin.enabled()) {
        spdlog::info(
            "APPLICATION shared-subscription REST API disabled (no admin token and admin login "
            "off)");
        return;
    }

    admin.add_async(verb::get, std::string(path), [&store](const request& req, responder done) {
        auto asked = page_search_of(req);
        if (auto* err = std::get_if<response>(&asked)) {
            done(std::move(*err));
            return;
        }
        auto& search = std::get<page_search>(asked);
        store.list_application_shared_subscriptions(
            [done = std::move(done), want = search.page, text = std::move(search.text)](
                result<std::vector<application_shared_subscription>> all) {
                if (!all) {
                    done(unavailable(all.error()));
                    return;
                }
                std::erase_if(*all, [&](const auto& e) {
                    return !text.empty() && !contains_ignoring_case(e.topic_filter, text);
                });
                const auto [first, last] = page_slice(all->size(), want);
                json data = json::array();
                for (std::size_t i = first; i < last; ++i) {
                    data.push_back(to_json((*all)[i]));
                }
                done(json_response(
                    page_data(std::move(data), static_cast<std::int64_t>(all->size()), want)));
            });
    });

    // One by id: GET and DELETE on "/api/app/shared/subs/{id}".
    const std::string prefix = std::string(path) + "/";
    admin.add_async(verb::get, prefix + "*", [&store, prefix](const request& req, responder done) {
        auto id = path_tail(req, prefix);
        if (!id || id->empty()) {
            done(bad("id: malformed"));
            return;
        }
        store.list_application_shared_subscriptions(
            [done = std::move(done),
             id = *id](result<std::vector<application_shared_subscription>> all) {
                if (!all) {
                    done(unavailable(all.error()));
                    return;
                }
                for (const auto& e : *all) {
                    if (e.id == id) {
                        done(json_response(to_json(e)));
                        return;
                    }
                }
                done(error_response(status_code::not_found, "no such shared subscription"));
            });
    });
    admin.add_async(
        verb::delete_, prefix + "*", [&store, prefix](const request& req, responder done) {
            auto id = path_tail(req, prefix);
            if (!id || id->empty()) {
                done(bad("id: malformed"));
                return;
            }
            store.delete_application_shared_subscription(
                *id, [done = std::move(done), id = *id](result<bool> deleted) {
                    if (!deleted) {
                        done(unavailable(deleted.error()));
                    } else if (!*deleted) {
                        done(error_response(status_code::not_found, "no such shared subscription"));
                    } else {
                        spdlog::info("APPLICATION shared subscription {} deleted", id);
                        done(json_response(json::object()));
                    }
                });
        });

    admin.add_async(verb::post, std::string(path), [&store](const request& req, responder done) {
        auto parsed = entity_of(req.body());
        if (auto* err = std::get_if<response>(&parsed)) {
            done(std::move(*err));
            return;
        }
        auto e = std::get<application_shared_subscription>(std::move(parsed));
        // The store keeps one entity per topic: an update is a save of the same topic, and
        // answers the stored row (its id and creation time may be the existing ones).
        if (e.id.empty()) {
            e.id = new_id();
            save(store, std::move(e), std::move(done));
            return;
        }
        // An id names an existing definition, whose topic cannot change: its Kafka topic is
        // named after the filter.
        store.list_application_shared_subscriptions(
            [&store, e = std::move(e), done = std::move(done)](
                result<std::vector<application_shared_subscription>> all) mutable {
                if (!all) {
                    done(unavailable(all.error()));
                    return;
                }
                const auto it = std::find_if(all->begin(), all->end(),
                                             [&e](const auto& row) { return row.id == e.id; });
                if (it == all->end()) {
                    done(error_response(status_code::not_found,
                                        "id: no shared subscription has this id"));
                } else if (it->topic_filter != e.topic_filter) {
                    done(error_response(status_code::conflict,
                                        "topic: the definition " + e.id + " is for '" +
                                            it->topic_filter +
                                            "'; a topic cannot change (its Kafka topic is named "
                                            "after it): create a new definition instead"));
                } else {
                    save(store, std::move(e), std::move(done));
                }
            });
    });
}

}  // namespace starling::http
