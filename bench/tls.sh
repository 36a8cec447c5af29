#!/usr/bin/env bash
# bench/tls.sh: what TLS costs, for Starling and Mosquitto on the same machine, one broker at a
# time. Prints one table (and writes it to bench/results/<date>-tls/tls.md):
#   - full TLS handshakes per second (`openssl s_time -new`, one client, TLS 1.3 and 1.2);
#   - QoS 1 throughput of one publisher → one subscriber (mosquitto_pub -l / mosquitto_sub -C,
#     N messages) over plain TCP and over TLS, and the ratio TLS / TCP.
#
#   bench/tls.sh [--messages N] [--seconds S] [--starlingd PATH]
#
# Needs: a built starlingd (default build/release, then build/debug), openssl, mosquitto and
# mosquitto-clients (scripts/install-deps.sh installs them). Never pass/fail: numbers only.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MESSAGES=50000
SECONDS_PER_RUN=5
STARLINGD=${STARLINGD:-}
MOSQUITTO=${MOSQUITTO:-/usr/sbin/mosquitto}

while [[ $# -gt 0 ]]; do
    case "$1" in
        --messages) MESSAGES=$2; shift ;;
        --seconds) SECONDS_PER_RUN=$2; shift ;;
        --starlingd) STARLINGD=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "bench/tls.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [[ -z $STARLINGD ]]; then
    for candidate in "$ROOT/build/release/src/app/starlingd" "$ROOT/build/debug/src/app/starlingd"; do
        if [[ -x $candidate ]]; then STARLINGD=$candidate; break; fi
    done
fi
[[ -x ${STARLINGD:-} ]] || { echo "bench/tls.sh: no starlingd (build it or pass --starlingd)" >&2; exit 2; }

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

# A throwaway CA and a server certificate for 127.0.0.1.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bench-ca" \
    -keyout "$WORK/ca.key" -out "$WORK/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$WORK/server.key" -out "$WORK/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$WORK/san.ext"
openssl x509 -req -in "$WORK/server.csr" -CA "$WORK/ca.pem" -CAkey "$WORK/ca.key" \
    -CAcreateserial -days 2 -extfile "$WORK/san.ext" -out "$WORK/server.pem" 2>/dev/null
# Mosquitto started as root drops to its own user: let it read the throwaway key.
chmod 755 "$WORK"
chmod 644 "$WORK/server.key" "$WORK/server.pem" "$WORK/ca.pem"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Waits (bounded) until a TCP port accepts connections.
wait_port() {
    local port=$1
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    echo "bench/tls.sh: port $port never opened" >&2
    return 1
}

start_starling() {
    local data=$WORK/starling-data
    mkdir -p "$data"
    STARLING_DATA_DIR=$data SECURITY_MQTT_ALLOW_ANONYMOUS=true \
        LISTENER_TCP_BIND_ADDRESS=127.0.0.1 LISTENER_TCP_BIND_PORT=0 \
        LISTENER_WS_BIND_ADDRESS=127.0.0.1 LISTENER_WS_BIND_PORT=0 \
        LISTENER_SSL_ENABLED=true LISTENER_SSL_BIND_ADDRESS=127.0.0.1 LISTENER_SSL_BIND_PORT=0 \
        LISTENER_SSL_PEM_CERT=$WORK/server.pem LISTENER_SSL_PEM_KEY=$WORK/server.key \
        HTTP_BIND_ADDRESS=127.0.0.1 HTTP_BIND_PORT=0 STARLING_LOG_LEVEL=warn \
        "$STARLINGD" --config "$ROOT/config/starling.yml" >"$WORK/starling.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 200); do
        if [[ -s $data/listeners.json ]]; then break; fi
        sleep 0.05
    done
    TCP_PORT=$(sed -n 's/.*"mqtt_tcp":[[:space:]]*\([0-9]*\).*/\1/p' "$data/listeners.json")
    TLS_PORT=$(sed -n 's/.*"mqtt_ssl":[[:space:]]*\([0-9]*\).*/\1/p' "$data/listeners.json")
}

start_mosquitto() {
    TCP_PORT=$(free_port)
    TLS_PORT=$(free_port)
    cat >"$WORK/mosquitto.conf" <<EOF
per_listener_settings false
allow_anonymous true
persistence false
listener $TCP_PORT 127.0.0.1
listener $TLS_PORT 127.0.0.1
certfile $WORK/server.pem
keyfile $WORK/server.key
EOF
    "$MOSQUITTO" -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.log" 2>&1 &
    PIDS+=($!)
    wait_port "$TCP_PORT"
    wait_port "$TLS_PORT"
}

stop_brokers() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    PIDS=()
}

# Handshakes per second: openssl s_time -new makes a full handshake per connection.
handshake_rate() {
    local port=$1 version=$2
    local out
    out=$(openssl s_time -connect "127.0.0.1:$port" -new -time "$SECONDS_PER_RUN" \
        "-$version" -CAfile "$WORK/ca.pem" 2>/dev/null | grep -m1 'connections in' || true)
    # "1234 connections in 5.01s; 246.31 connections/user sec" → connections / real seconds
    awk '{ n = $1; s = $4; sub(/s;?$/, "", s); if (s > 0) printf "%.0f", n / s; else print "n/a" }' <<<"$out"
}

# QoS 1, one publisher → one subscriber: N messages, time from the first publish until the
# subscriber has them all. The subscriber's persistent session exists before publishing (a
# first `-E` run subscribes and leaves), so nothing is lost however the two processes race.
throughput() {
    local port=$1 tls=$2
    local args=(-h 127.0.0.1 -p "$port" -q 1)
    if [[ $tls == 1 ]]; then args+=(--cafile "$WORK/ca.pem"); fi
    local topic="bench/tls/$RANDOM" id="bench-sub-$RANDOM"
    seq 1 "$MESSAGES" | sed 's/^/payload-/' >"$WORK/lines.txt"
    mosquitto_sub "${args[@]}" -c -i "$id" -t "$topic" -E
    mosquitto_sub "${args[@]}" -c -i "$id" -t "$topic" -C "$MESSAGES" >/dev/null &
    local sub=$!
    local start end
    start=$(date +%s.%N)
    mosquitto_pub "${args[@]}" -t "$topic" -l <"$WORK/lines.txt"
    if ! timeout 300 tail --pid="$sub" -f /dev/null; then
        kill "$sub" 2>/dev/null || true
        echo "n/a"
        return
    fi
    end=$(date +%s.%N)
    awk -v n="$MESSAGES" -v a="$start" -v b="$end" 'BEGIN { printf "%.0f", n / (b - a) }'
}

declare -A RESULT
for broker in starling mosquitto; do
    if [[ $broker == mosquitto && ! -x $MOSQUITTO ]]; then continue; fi
    "start_$broker"
    RESULT[$broker,hs13]=$(handshake_rate "$TLS_PORT" tls1_3)
    RESULT[$broker,hs12]=$(handshake_rate "$TLS_PORT" tls1_2)
    RESULT[$broker,tcp]=$(throughput "$TCP_PORT" 0)
    RESULT[$broker,tls]=$(throughput "$TLS_PORT" 1)
    stop_brokers
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a > 0) printf "%.2f", a / b; else print "n/a" }'; }

OUT_DIR="$ROOT/bench/results/$(date -u +%Y%m%d-%H%M%S)-tls"
mkdir -p "$OUT_DIR"
{
    echo "| measure | Starling | Mosquitto | Starling / Mosquitto |"
    echo "|---|---|---|---|"
    for key in hs13 hs12 tcp tls; do
        case $key in
            hs13) label="TLS 1.3 full handshakes/s (1 client)" ;;
            hs12) label="TLS 1.2 full handshakes/s (1 client)" ;;
            tcp) label="QoS 1 msg/s, 1 pub → 1 sub, plain TCP ($MESSAGES msgs)" ;;
            tls) label="QoS 1 msg/s, 1 pub → 1 sub, TLS ($MESSAGES msgs)" ;;
        esac
        s=${RESULT[starling,$key]:-n/a}
        m=${RESULT[mosquitto,$key]:-n/a}
        echo "| $label | $s | $m | $(ratio "$s" "$m") |"
    done
    echo "| TLS / TCP throughput | $(ratio "${RESULT[starling,tls]:-0}" "${RESULT[starling,tcp]:-0}") | $(ratio "${RESULT[mosquitto,tls]:-0}" "${RESULT[mosquitto,tcp]:-0}") | |"
    echo
    echo "starlingd: $STARLINGD; $(nproc) cores; $(date -u +%FT%TZ)"
} | tee "$OUT_DIR/tls.md"
