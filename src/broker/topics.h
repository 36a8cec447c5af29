#pragma once

// Names of the log topics (ARCHITECTURE.md §5): "<prefix>.<name>", prefix "starling" unless
// configured (TB_KAFKA_PREFIX).

#include <string>

namespace starling::broker {

class topic_names {
  public:
    explicit topic_names(std::string prefix) : prefix_(std::move(prefix)) {}

    std::string msg_all() const { return name("msg.all"); }
    std::string msg_persisted() const { return name("msg.persisted"); }
    std::string msg_retained() const { return name("msg.retained"); }
    std::string client_session() const { return name("client.session"); }
    std::string client_subscriptions() const { return name("client.subscriptions"); }
    std::string client_blocked() const { return name("client.blocked"); }

  private:
    std::string name(const char* suffix) const {
        return prefix_.empty() ? std::string(suffix) : prefix_ + "." + suffix;
    }
    std::string prefix_;
};

}  // namespace starling::broker
