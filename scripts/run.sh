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
# The management API (/api/**, docs/api.md): an admin user for people (the first admin is made
# on the first start from SECURITY_ADMIN_PASSWORD) and a static token for scripts. Without them
# given, random ones are made on the first run and kept (readable by this user only).
secret_file() {  # secret_file PATH: creates PATH with 24 random bytes in hex unless it exists
    if [[ ! -s "$1" ]]; then
        mkdir -p "$(dirname "$1")"
        (umask 077 && head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$1")
    fi
}
admin_user="${SECURITY_ADMIN_USERNAME:-sysadmin@starling.local}"
if [[ -z "${SECURITY_ADMIN_PASSWORD:-}" ]]; then
    secret_file data/.admin-password
    SECURITY_ADMIN_PASSWORD="$(cat data/.admin-password)"
    export SECURITY_ADMIN_PASSWORD
    echo "Console on http://localhost:8083/ and management API on http://localhost:8083/api/ —" \
        "admin $admin_user, password in $root/data/.admin-password (used on the first start" \
        "only). From a terminal:"
    echo "  tools/starlingctl/starlingctl login --url http://localhost:8083 --username $admin_user"
fi
if [[ -z "${SECURITY_ADMIN_TOKEN:-}" ]]; then
    secret_file data/.admin-token
    SECURITY_ADMIN_TOKEN="$(cat data/.admin-token)"
    export SECURITY_ADMIN_TOKEN
    echo "Static API token (for scripts) in $root/data/.admin-token:"
    echo "  tools/starlingctl/starlingctl login --url http://localhost:8083 --token \$(cat data/.admin-token)"
fi
exec build/release/src/app/starlingd --config config/starling.yml "$@"
