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
# The management API (/api/**, docs/api.md) needs an admin token: without one given, a random
# one is made on the first run and kept (readable by this user only) for the next runs.
if [[ -z "${SECURITY_ADMIN_TOKEN:-}" ]]; then
    token_file="data/.admin-token"
    if [[ ! -s "$token_file" ]]; then
        mkdir -p data
        (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$token_file")
    fi
    SECURITY_ADMIN_TOKEN="$(cat "$token_file")"
    export SECURITY_ADMIN_TOKEN
    echo "Management API on http://localhost:8083/api/ (token in $root/$token_file). Log in with:"
    echo "  tools/starlingctl/starlingctl login --url http://localhost:8083 --token \$(cat $token_file)"
fi
exec build/release/src/app/starlingd --config config/starling.yml "$@"
