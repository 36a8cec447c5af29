// topic_rules (declared in provider.h): TBMQ's authRules, a whole-topic RE2 match.

#include "auth/provider.h"

#include <algorithm>

namespace starling::auth {
namespace {

bool any_match(const std::vector<pattern>& patterns, std::string_view topic) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [topic](const pattern& p) { return p.full_match(topic); });
}

}  // namespace

bool topic_rules::may_publish(std::string_view topic) const {
    return allow_all || any_match(publish, topic);
}

bool topic_rules::may_subscribe(std::string_view topic_filter) const {
    return allow_all || any_match(subscribe, topic_filter);
}

std::shared_ptr<const topic_rules> topic_rules::everything() {
    // One shared instance: anonymous clients and rule-less providers all point at it.
    static const auto all = [] {
        auto rules = std::make_shared<topic_rules>();
        rules->allow_all = true;
        return std::shared_ptr<const topic_rules>(std::move(rules));
    }();
    return all;
}

}  // namespace starling::auth
