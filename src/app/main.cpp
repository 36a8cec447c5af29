// starlingd: the Starling MQTT broker daemon. The composition root: the only code that names
// adapters (embedded or cluster) and wires ports, listeners and the HTTP surface together.

#include "app/daemon.h"
#include "app/process_main.h"

int main(int argc, char** argv) {
    return starling::app::process_main<starling::app::daemon>(argc, argv, "starlingd",
                                                              "Starling MQTT broker.");
}
