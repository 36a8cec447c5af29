#!/usr/bin/env bash
# Installs every build and test dependency of Starling from Debian's packages (and the Python
# test clients from PyPI into .venv). Idempotent: re-running it installs only what is missing.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

debian_packages=(
    build-essential cmake ninja-build pkg-config git
    libboost1.81-dev
    libssl-dev
    libcrypt-dev
    libspdlog-dev libfmt-dev
    libyaml-cpp-dev
    prometheus-cpp-dev
    libprotobuf-dev protobuf-compiler
    libsqlite3-dev
    libgtest-dev libgmock-dev
    libbenchmark-dev
    nlohmann-json3-dev
    liburcu-dev
    libjwt-dev
    libre2-dev
    librdkafka-dev libhiredis-dev libpqxx-dev
    redis-server postgresql
    clang clang-format clang-tidy libclang-rt-14-dev
    mosquitto mosquitto-clients
    chromium fonts-dejavu-core
    libpaho-mqtt-dev libpaho-mqttpp-dev
    python3-venv
    procps curl
)

missing=()
for p in "${debian_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if ((${#missing[@]})); then
    sudo_cmd=""
    if [[ $(id -u) -ne 0 ]]; then sudo_cmd="sudo"; fi
    echo "install-deps: installing ${missing[*]}"
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
    # The Debian mosquitto package starts a system broker on 1883; Starling owns that port.
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet mosquitto 2>/dev/null; then
        $sudo_cmd systemctl disable --now mosquitto || true
    fi
    pkill -x mosquitto 2>/dev/null || true
    # Likewise Debian's Redis and PostgreSQL start system instances on 6379 and 5432;
    # scripts/services.sh runs the project's own (data under .services/) on those ports.
    for unit in redis-server postgresql; do
        if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$unit" 2>/dev/null; then
            $sudo_cmd systemctl disable --now "$unit" || true
        fi
    done
    if command -v pg_lsclusters >/dev/null 2>&1; then
        pg_lsclusters -h 2>/dev/null | awk '$4 == "online" {print $1, $2}' |
            while read -r version cluster; do $sudo_cmd pg_ctlcluster "$version" "$cluster" stop || true; done
    fi
    if [[ -f /var/run/redis/redis-server.pid ]]; then
        $sudo_cmd kill "$(cat /var/run/redis/redis-server.pid)" 2>/dev/null || true
    fi
fi

# Java and Maven run the Apache Kafka broker of scripts/services.sh (jars from Maven Central).
if ! command -v java >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    sudo_cmd=""
    if [[ $(id -u) -ne 0 ]]; then sudo_cmd="sudo"; fi
    $sudo_cmd apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends \
        default-jre-headless maven
fi

# Python test clients (paho-mqtt, pytest, schemathesis) in a project-local virtual environment.
venv="$root/.venv"
if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
# Installed when a module is missing or a package is not at its pinned version (so that a changed
# pin reaches an existing .venv too).
python_requirements="$root/tests/integration/requirements.txt"
python_requirements_met() {
    "$venv/bin/python" -c "import paho.mqtt, pytest, jsonschema, openapi_spec_validator" &&
        "$venv/bin/python" -c "import schemathesis, hypothesis, hypothesis_jsonschema" &&
        "$venv/bin/python" - "$python_requirements" <<'PY'
import sys
from importlib.metadata import version

for line in open(sys.argv[1], encoding="utf-8"):
    name, sep, pinned = line.split("#", 1)[0].strip().partition("==")
    if sep and version(name) != pinned:
        sys.exit(f"{name} {version(name)} is installed, {pinned} is pinned")
PY
}
if ! python_requirements_met 2>/dev/null; then
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$python_requirements"
fi
# MQTT.js, pinned by each folder's package-lock.json: for the WebSocket interoperability test
# (tests/integration/js) and for the console's WebSocket client page (ui/: its browser module is
# compiled into starlingd, so this runs before any build). Without npm the test skips and the
# console's client page is missing; the build says so.
if command -v npm >/dev/null 2>&1; then
    for folder in tests/integration/js ui; do
        if [[ ! -d "$root/$folder/node_modules/mqtt" ]]; then
            (cd "$root/$folder" && npm ci --no-audit --no-fund --silent)
        fi
    done
else
    echo "install-deps: npm not found; MQTT.js is missing for tests/integration/js and ui/"
fi
echo "install-deps: done"
