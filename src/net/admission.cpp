#include "net/admission.h"

#include "ratelimit/token_bucket.h"

#include <boost/asio/ip/address.hpp>
#include <dirent.h>
#include <sys/resource.h>

#include <list>
#include <unordered_map>
#include <utility>

namespace starling::net {

namespace asio = boost::asio;

namespace {

// How often the descriptors that are not tickets (files, store and Kafka sockets, HTTP
// connections, epoll and timer descriptors) are counted again: rarely while far from the limit,
// every second near it. Tickets are counted exactly, so only slow drift goes unseen between two
// samples. Counting /proc/self/fd costs about 1 ms per 10,000 descriptors.
constexpr std::chrono::seconds far_sample_interval{10};
constexpr std::chrono::seconds near_sample_interval{1};

std::size_t count_open_descriptors() {
    DIR* dir = ::opendir("/proc/self/fd");
    if (dir == nullptr) {
        return 0;  // no /proc: the reserve then rests on the ticket count alone
    }
    std::size_t n = 0;
    while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] != '.') {
            ++n;
        }
    }
    ::closedir(dir);
    return n > 0 ? n - 1 : 0;  // the directory's own descriptor
}

std::size_t soft_descriptor_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) {
        return static_cast<std::size_t>(1) << 20;
    }
    return static_cast<std::size_t>(limit.rlim_cur);
}

// "ip:port", "[ipv6]:port" or a bare host → the host part.
std::string_view host_part(std::string_view address) {
    if (address.starts_with('[')) {
        const auto close = address.find(']');
        return address.substr(1, close == std::string_view::npos ? address.npos : close - 1);
    }
    const auto colon = address.rfind(':');
    if (colon != std::string_view::npos && address.find(':') == colon) {
        return address.substr(0, colon);  // IPv4 with a port (a bare IPv6 has several colons)
    }
    return address;
}

}  // namespace

std::string_view to_string(refusal r) {
    switch (r) {
        case refusal::max_connections:
            return "max_connections";
        case refusal::descriptors:
            return "descriptors";
        case refusal::address_connections:
            return "address_connections";
        case refusal::address_rate:
            return "address_rate";
    }
    return "unknown";
}

descriptor_source descriptor_source::system() {
    return {.open_count = count_open_descriptors, .limit = soft_descriptor_limit};
}

std::size_t raise_descriptor_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        (void)::setrlimit(RLIMIT_NOFILE, &limit);  // on failure the old limit simply stays
    }
    return soft_descriptor_limit();
}

std::string address_key(std::string_view remote_address) {
    const auto host = host_part(remote_address);
    boost::system::error_code ec;
    const auto address = asio::ip::make_address(std::string(host), ec);
    if (ec) {
        return std::string(host);
    }
    if (address.is_v4()) {
        return address.to_v4().to_string();
    }
    const auto v6 = address.to_v6();
    if (v6.is_v4_mapped()) {
        return asio::ip::make_address_v4(asio::ip::v4_mapped, v6).to_string();
    }
    auto bytes = v6.to_bytes();
    std::fill(bytes.begin() + 8, bytes.end(), 0);
    return asio::ip::address_v6(bytes).to_string() + "/64";
}

// Per-address state. `entries` holds every address with a live connection (connections > 0)
// plus idle ones that keep a rate bucket; the idle ones are also in `idle`, least recently used
// first, which bounds them. An entry is in `idle` exactly when connections == 0.
struct admission_control::address_table {
    struct entry {
        std::size_t connections = 0;
        std::optional<ratelimit::token_bucket> bucket;
        std::list<std::string>::iterator idle_position;
        bool idle = false;
    };
    std::unordered_map<std::string, entry> entries;
    std::list<std::string> idle;
};

std::shared_ptr<admission_control> admission_control::create(admission_options options,
                                                             const clock& clk,
                                                             descriptor_source descriptors) {
    return std::make_shared<admission_control>(private_tag{}, std::move(options), clk,
                                               std::move(descriptors));
}

admission_control::admission_control(private_tag, admission_options options, const clock& clk,
                                     descriptor_source descriptors)
    : options_(std::move(options)),
      clock_(clk),
      descriptors_(std::move(descriptors)),
      addresses_(std::make_unique<address_table>()) {}

std::shared_ptr<admission_control::gate> admission_control::add_gate(std::size_t max_connections) {
    return std::make_shared<gate>(max_connections);
}

admission_control::admit_result admission_control::admit(const std::shared_ptr<gate>& g,
                                                         std::string_view remote_address) {
    {
        std::lock_guard lock(mutex_);
        if (g->max_ != 0 && g->current_.load(std::memory_order_relaxed) >= g->max_) {
            return {.admitted = nullptr, .refused = refusal::max_connections};
        }
        if (!descriptors_left()) {
            return {.admitted = nullptr, .refused = refusal::descriptors};
        }
        g->current_.fetch_add(1, std::memory_order_relaxed);
        admitted_.fetch_add(1, std::memory_order_relaxed);
    }
    auto t = std::unique_ptr<ticket>(new ticket(shared_from_this(), g));
    if (!remote_address.empty()) {
        if (auto why = t->admit_address(remote_address)) {
            return {.admitted = nullptr, .refused = why};  // `t` gives its slots back
        }
    }
    return {.admitted = std::move(t), .refused = std::nullopt};
}

bool admission_control::descriptors_left() {
    if (options_.descriptor_reserve == 0) {
        return true;
    }
    const auto now = clock_.steady_now();
    const std::size_t tickets = admitted_.load(std::memory_order_relaxed);
    if (now >= next_sample_) {
        const std::size_t open = descriptors_.open_count();
        limit_ = descriptors_.limit();
        others_ = open > tickets ? open - tickets : 0;
        const std::size_t in_use = others_ + tickets;
        const bool near = in_use + 4 * options_.descriptor_reserve >= limit_;
        next_sample_ = now + (near ? near_sample_interval : far_sample_interval);
    }
    // The socket being admitted is open already: it is one of `others_` until it holds a ticket.
    const std::size_t in_use = others_ + tickets + 1;
    return in_use + options_.descriptor_reserve <= limit_;
}

std::optional<refusal> admission_control::take_address(const std::string& key) {
    auto& table = *addresses_;
    auto [it, inserted] = table.entries.try_emplace(key);
    auto& e = it->second;
    if (e.idle) {
        table.idle.erase(e.idle_position);
        e.idle = false;
    }
    std::optional<refusal> why;
    if (options_.max_connections_per_address != 0 &&
        e.connections >= options_.max_connections_per_address) {
        why = refusal::address_connections;
    } else if (!options_.connect_rate_per_address.empty()) {
        const auto now = clock_.steady_now();
        if (!e.bucket) {
            e.bucket.emplace(options_.connect_rate_per_address, now);
        }
        if (!e.bucket->try_acquire(now)) {
            why = refusal::address_rate;
        }
    }
    if (!why) {
        ++e.connections;
        return std::nullopt;
    }
    if (e.connections == 0) {
        // Refused and holding nothing: idle (the bucket must be remembered, that is the point).
        table.idle.push_back(key);
        e.idle_position = std::prev(table.idle.end());
        e.idle = true;
        while (table.idle.size() > options_.max_tracked_addresses) {
            table.entries.erase(table.idle.front());
            table.idle.pop_front();
        }
    }
    return why;
}

void admission_control::release_address(const std::string& key) {
    auto& table = *addresses_;
    auto it = table.entries.find(key);
    if (it == table.entries.end() || it->second.connections == 0) {
        return;  // cannot happen: a ticket releases only what it took
    }
    auto& e = it->second;
    if (--e.connections != 0) {
        return;
    }
    if (!e.bucket || options_.max_tracked_addresses == 0) {
        table.entries.erase(it);
        return;
    }
    table.idle.push_back(key);
    e.idle_position = std::prev(table.idle.end());
    e.idle = true;
    while (table.idle.size() > options_.max_tracked_addresses) {
        table.entries.erase(table.idle.front());
        table.idle.pop_front();
    }
}

void admission_control::release(gate& g) {
    g.current_.fetch_sub(1, std::memory_order_relaxed);
    admitted_.fetch_sub(1, std::memory_order_relaxed);
}

std::size_t admission_control::tracked_addresses() const {
    std::lock_guard lock(mutex_);
    return addresses_->entries.size();
}

admission_control::ticket::~ticket() {
    std::lock_guard lock(owner_->mutex_);
    if (!address_.empty()) {
        owner_->release_address(address_);
    }
    owner_->release(*gate_);
}

std::optional<refusal> admission_control::ticket::admit_address(std::string_view remote_address) {
    if (address_checked_) {
        return std::nullopt;
    }
    address_checked_ = true;
    auto key = address_key(remote_address);
    std::lock_guard lock(owner_->mutex_);
    auto why = owner_->take_address(key);
    if (!why) {
        address_ = std::move(key);
    }
    return why;
}

bool log_throttle::should_log(clock::steady_point now, std::uint64_t& suppressed) {
    std::lock_guard lock(mutex_);
    if (now < next_) {
        ++suppressed_;
        return false;
    }
    suppressed = suppressed_;
    suppressed_ = 0;
    next_ = now + interval_;
    return true;
}

}  // namespace starling::net
