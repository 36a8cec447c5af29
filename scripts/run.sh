#!/usr/bin/env bash
# Installs what Starling needs, builds the optimized daemon and starts it on the embedded default
# (no external service): MQTT on 1883, HTTP (health, metrics) on 8083, data under ./data.
# Extra arguments go to starlingd (e.g. --config FILE); every config value can be overridden by
# its environment variable (docs/configuration.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target starlingd
# A development broker accepts clients without credentials (the shipped default refuses them).
export SECURITY_MQTT_ALLOW_ANONYMOUS="${SECURITY_MQTT_ALLOW_ANONYMOUS:-true}"
exec build/release/src/app/starlingd --config config/starling.yml "$@"
