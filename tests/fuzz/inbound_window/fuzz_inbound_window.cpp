// libFuzzer target for mqtt::inbound_window, the Sans-I/O state of a client's QoS 1/2
// PUBLISHes (answer order, QoS 2 ids awaiting PUBREL, Receive Maximum).
//
// Input: any bytes, read as (operation, argument) pairs: PUBLISH of QoS 1 or 2 on one of six
// packet ids, with or without a Receive Maximum; a verdict (stored or refused); sending what is
// ready; PUBREL; an ended connection, a restart from the stored ids, an ended session.
//
// Properties checked (an abort is a finding): after every operation the window agrees with the
// reference model of tests/unit/mqtt/inbound_window_model.h — the same arrivals accepted,
// resent or refused, the same answers in the same order with the same codes, the same count
// against Receive Maximum and the same ids awaiting PUBREL — and no QoS 2 message is accepted
// for publication twice.

#include "../../unit/mqtt/inbound_window_model.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    starling::mqtt::inbound_window window;
    starling::mqtt::testing::inbound_window_model model;
    for (std::size_t i = 0; i + 1 < size; i += 2) {
        const std::string error =
            starling::mqtt::testing::run_inbound_window_step(window, model, data[i], data[i + 1]);
        if (!error.empty()) {
            std::fprintf(stderr, "fuzz_inbound_window: step %zu: %s\n", i / 2, error.c_str());
            std::abort();
        }
    }
    return 0;
}
