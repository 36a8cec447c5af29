#!/usr/bin/env bash
# bench/cluster_per_core.sh: persistent P2P through Kafka and Redis (cluster mode, one node),
# reported as messages per CPU-second of the whole stack — starlingd + Kafka + Redis (+
# PostgreSQL, which is off the message path) — from each process's utime+stime over the run.
#
#   bench/cluster_per_core.sh [RATE...]     (default: 1000 2500 4000 5000 6000)
#
# Per rate: a fresh starlingd in cluster mode (its own topic prefix and schema) on the services
# of scripts/services.sh (started if needed), then `starling-bench scenario p2p` with 200 QoS 1
# publishers → 200 persistent QoS 1 subscribers (DEVICE: Redis inboxes), 2 s warm-up, 20 s
# measured. Prints one line per rate; JSON and logs go to $OUT (default a temporary folder).
# The CPU counts the whole run (connects, warm-up, drain), the messages those of warm-up and
# measurement: a conservative ratio. "in+out per core" counts each message twice (received
# from the publisher and delivered), as TBMQ's published figure does.
#
# Environment: STARLINGD (build/release/src/app/starlingd), STARLING_BENCH
# (build/release/bench/starling-bench), DURATION (20), OUT.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STARLINGD=${STARLINGD:-$ROOT/build/release/src/app/starlingd}
BENCH=${STARLING_BENCH:-$ROOT/build/release/bench/starling-bench}
DURATION=${DURATION:-20}
OUT=${OUT:-$(mktemp -d)}
RATES=("$@")
[[ ${#RATES[@]} -gt 0 ]] || RATES=(1000 2500 4000 5000 6000)
for bin in "$STARLINGD" "$BENCH"; do
    [[ -x $bin ]] || { echo "cluster_per_core.sh: $bin not found (build the release preset)" >&2; exit 1; }
done

bash "$ROOT/scripts/services.sh" up >&2
while IFS= read -r line; do export "${line?}"; done < <(bash "$ROOT/scripts/services.sh" env)
hz=$(getconf CLK_TCK)

# utime+stime of the given processes, in clock ticks.
cpu_ticks() {
    local total=0 pid fields
    for pid in "$@"; do
        read -r -a fields <"/proc/$pid/stat"
        total=$((total + fields[13] + fields[14]))
    done
    echo "$total"
}
seconds() { awk -v t="$1" -v hz="$hz" 'BEGIN { printf "%.2f", t / hz }'; }

printf '%-8s %-9s %-5s %-17s %-22s %-26s %-16s %s\n' "offered" "received" "lost" "p50/p99 ms" \
    "PUBACK p50/p99 ms" "CPU-s starlingd/Kafka/Redis" "per stack CPU-s" "in+out per core"
for rate in "${RATES[@]}"; do
    prefix="cpc$(date +%s%N)"
    data=$OUT/data-$rate
    mkdir -p "$data"
    STARLING_MODE=cluster TB_SERVICE_ID=bench-node TB_KAFKA_PREFIX=$prefix \
        SPRING_DATASOURCE_URL="$SPRING_DATASOURCE_URL?currentSchema=$prefix" \
        STARLING_DATA_DIR=$data LISTENER_TCP_BIND_ADDRESS=127.0.0.1 LISTENER_TCP_BIND_PORT=0 \
        LISTENER_WS_BIND_ADDRESS=127.0.0.1 LISTENER_WS_BIND_PORT=0 \
        HTTP_BIND_ADDRESS=127.0.0.1 HTTP_BIND_PORT=0 STARLING_LOG_LEVEL=warn \
        SECURITY_MQTT_ALLOW_ANONYMOUS=true LISTENER_MAX_CONNECTIONS_PER_ADDRESS=0 \
        LISTENER_CONNECT_RATE_PER_ADDRESS= \
        "$STARLINGD" --config "$ROOT/config/starling.yml" >"$OUT/starlingd-$rate.log" 2>&1 &
    broker=$!
    port=""
    for _ in $(seq 1 600); do
        if [[ -s $data/listeners.json ]]; then
            port=$(sed -n 's/.*"mqtt_tcp":[[:space:]]*\([0-9]*\).*/\1/p' "$data/listeners.json")
            [[ -n $port ]] && break
        fi
        kill -0 "$broker" 2>/dev/null || break
        sleep 0.05  # polling for the listeners file, bounded
    done
    [[ -n $port ]] || { echo "starlingd did not start; see $OUT/starlingd-$rate.log" >&2; exit 1; }
    kafka=$(pgrep -f kafka.Kafka | head -1)
    redis=$(pgrep -x redis-server | head -1)
    b0=$(cpu_ticks "$broker") k0=$(cpu_ticks "$kafka") r0=$(cpu_ticks "$redis")
    "$BENCH" scenario p2p --port "$port" --publishers 200 --subscribers 200 -q 1 --persistent \
        --rate "$rate" --warmup 2 --duration "$DURATION" --drain 10 --broker-pid "$broker" \
        --json "$OUT/p2p-$rate.json" --quiet >"$OUT/bench-$rate.txt" 2>&1 || true
    b=$(($(cpu_ticks "$broker") - b0)) k=$(($(cpu_ticks "$kafka") - k0))
    r=$(($(cpu_ticks "$redis") - r0))
    kill -TERM "$broker"
    wait "$broker" || true
    python3 - "$OUT/p2p-$rate.json" "$rate" "$(seconds "$b")" "$(seconds "$k")" "$(seconds "$r")" <<'PY'
import json, sys
path, rate, b, k, r = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
s = json.load(open(path))["steps"][0]
stack = b + k + r
per_cpu_s = s["received"] / stack
columns = [
    (rate, 8),
    (str(s["received"]), 9),
    (str(s["lost"]), 5),
    (f"{s['latency_ms']['p50']:.1f}/{s['latency_ms']['p99']:.1f}", 17),
    (f"{s['puback_ms']['p50']:.1f}/{s['puback_ms']['p99']:.1f}", 22),
    (f"{b:.2f}/{k:.2f}/{r:.2f}", 26),
    (f"{per_cpu_s:,.0f}", 16),
    (f"{2 * per_cpu_s:,.0f}", 0),
]
print(" ".join(text.ljust(width) for text, width in columns))
PY
done
echo "results: $OUT" >&2
