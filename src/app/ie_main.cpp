// starling-ie: the integration executor on its own (app/ie_process.h), for clusters that keep
// slow or failing targets away from the broker nodes.

#include "app/ie_process.h"
#include "app/process_main.h"

int main(int argc, char** argv) {
    return starling::app::process_main<starling::app::ie_process>(
        argc, argv, "starling-ie",
        "Starling integration executor (cluster mode): runs the integrations'\n"
        "executors apart from the broker nodes.");
}
