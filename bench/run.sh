#!/usr/bin/env bash
# bench/run.sh: build what is needed, then run the same scenarios against Starling (embedded,
# single node) and Mosquitto, one broker at a time on this machine, and print one table with
# the ratios Starling / Mosquitto. Results (JSON per scenario and broker, the table, the
# machine's description) go to bench/results/<date>-<mode>/.
#
#   bench/run.sh                 full suite (about 10-15 minutes on 2 cores); never pass/fail
#   bench/run.sh --smoke         tiny sizes, about 7 s against Starling; exits non-zero when the
#                                tool fails or a QoS 1 scenario loses or duplicates messages
#                                (this is what CI runs: no ctest needed)
#
# Options:
#   --smoke                 the smoke mode above
#   --build-dir DIR         use (and build in) an existing CMake build directory instead of the
#                           `release` preset's build/release
#   --no-build              do not build; the binaries must exist
#   --brokers LIST          comma-separated: starling,starling-cluster,mosquitto (default:
#                           starling,mosquitto for a full run, starling for --smoke; Mosquitto
#                           is skipped with a note when /usr/sbin/mosquitto is missing).
#                           starling-cluster is one starlingd in cluster mode on the Kafka of
#                           STARLING_BENCH_KAFKA (default: scripts/services.sh up, which also
#                           gives Redis and PostgreSQL), so every PUBLISH goes through a real
#                           Kafka before its PUBACK
#   --fixed-rate R          instead of searching for the maximum rate, measure every scenario at
#                           R msg/s (latency at a moderate load, e.g. PUBACK p50/p99)
#   --scenarios LIST        comma-separated subset of fan-out,fan-in,p2p,shared,connections,
#                           retained,drain (default: all)
#   --scale F               multiply every client count and the retained count by F
#                           (default 1: the issue's sizes, which fit a 2-core machine); the
#                           drain backlog per subscriber stays 1,000 messages
#   --duration S            seconds measured per step (default 4; smoke 0.5)
#   --threads N             load-generator threads (default 1)
#   --client-type T         device (default) or application: Starling's subscribers log in
#                           with an APPLICATION credential (a generated config adds it), so
#                           persistent ones (-- --persistent) queue on their own Kafka topic in
#                           cluster mode instead of a Redis inbox. Mosquitto ignores the login
#   --out DIR               where results go (default bench/results/<date>-<mode>; smoke: a
#                           temporary directory, removed afterwards unless --out is given)
#   -- ARGS...              passed to every starling-bench invocation
#
# Environment: STARLINGD, STARLING_BENCH, MOSQUITTO override the binaries' paths.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MODE=full
BUILD_DIR=""
NO_BUILD=0
BROKERS=""
SCENARIOS="fan-out,fan-in,p2p,shared,connections,retained,drain"
SCALE=1
DURATION=""
THREADS=1
FIXED_RATE=""
CLIENT_TYPE=device
OUT=""
EXTRA=()

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --smoke) MODE=smoke ;;
        --build-dir) BUILD_DIR=$2; shift ;;
        --no-build) NO_BUILD=1 ;;
        --brokers) BROKERS=$2; shift ;;
        --scenarios) SCENARIOS=$2; shift ;;
        --scale) SCALE=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --threads) THREADS=$2; shift ;;
        --fixed-rate) FIXED_RATE=$2; shift ;;
        --client-type) CLIENT_TYPE=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "run.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

if [[ -z $BROKERS ]]; then
    if [[ $MODE == smoke ]]; then BROKERS=starling; else BROKERS=starling,mosquitto; fi
fi

log() { printf '[run.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# --- build ---------------------------------------------------------------------------------
if [[ -z $BUILD_DIR ]]; then
    BUILD_DIR=$ROOT/build/release
    if [[ $NO_BUILD == 0 ]]; then
        log "building the release preset (starlingd, starling-bench)"
        (cd "$ROOT" && cmake --preset release -DSTARLING_BUILD_BENCH=ON >/dev/null &&
            cmake --build --preset release --target starlingd starling-bench)
    fi
elif [[ $NO_BUILD == 0 ]]; then
    log "building starlingd and starling-bench in $BUILD_DIR"
    cmake --build "$BUILD_DIR" --target starlingd starling-bench
fi
STARLINGD=${STARLINGD:-$BUILD_DIR/src/app/starlingd}
BENCH=${STARLING_BENCH:-$BUILD_DIR/bench/starling-bench}
MOSQUITTO=${MOSQUITTO:-/usr/sbin/mosquitto}
[[ -x $BENCH ]] || { echo "run.sh: $BENCH not found (build it, or set STARLING_BENCH)" >&2; exit 1; }

# --- sizes ---------------------------------------------------------------------------------
scaled() { awk -v n="$1" -v f="$SCALE" 'BEGIN { v = int(n * f + 0.5); print (v < 1 ? 1 : v) }'; }

if [[ $MODE == smoke ]]; then
    DURATION=${DURATION:-0.5}
    # Tiny sizes, one fixed-rate step each: the point is that the tool and the broker work.
    COMMON=(--duration "$DURATION" --warmup 0.2 --drain 3 --drain-idle 0.5 --quiet)
    declare -A ARGS=(
        [fan-out]="--publishers 2 --subscribers 20 --rate 100"
        [fan-in]="--publishers 20 --subscribers 1 --rate 400"
        [p2p]="--publishers 20 --subscribers 20 --rate 400"
        [shared]="--publishers 10 --subscribers 3 --rate 400"
        [connections]="--connections 200 --duration 0.3"
        [retained]="--publishers 2 --subscribers 2 --retained-count 500 --settle 0.2"
        [drain]="--subscribers 5 --queued 200 --settle 0.2"
    )
else
    DURATION=${DURATION:-4}
    COMMON=(--duration "$DURATION" --warmup 1 --drain 5 --drain-idle 1 --search-budget 75
            --max-p99-ms 250)
    declare -A ARGS=(
        [fan-out]="--search --publishers $(scaled 5) --subscribers $(scaled 1000)"
        [fan-in]="--search --publishers $(scaled 1000) --subscribers 1"
        [p2p]="--search --publishers $(scaled 1000) --subscribers $(scaled 1000)"
        [shared]="--search --publishers $(scaled 1000) --subscribers $(scaled 10)"
        [connections]="--connections $(scaled 10000) --duration 3"
        [retained]="--publishers 10 --subscribers 10 --retained-count $(scaled 100000)"
        # 1,000 messages queued for each of 100 offline persistent subscribers; --drain 5 (in
        # COMMON) is how long the drain may make no progress before it counts as a stall.
        [drain]="--subscribers $(scaled 100) --queued 1000"
    )
fi

if [[ -n $FIXED_RATE ]]; then
    for scenario in "${!ARGS[@]}"; do
        ARGS[$scenario]=${ARGS[$scenario]/--search/--rate $FIXED_RATE}
    done
fi

# --- limits: file descriptors and ephemeral ports -----------------------------------------
# One descriptor per client in starling-bench and one per connection in the broker (each
# process has its own limit, inherited from this shell).
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
NOFILE=$(ulimit -n)
CONNECTIONS=$(sed -n 's/.*--connections \([0-9]*\).*/\1/p' <<<"${ARGS[connections]}")
if [[ $NOFILE != unlimited ]] && ((NOFILE < CONNECTIONS + 200)); then
    NEW=$((NOFILE - 200))
    log "open-file limit is $NOFILE: the connections scenario is reduced to $NEW connections"
    ARGS[connections]=${ARGS[connections]/--connections $CONNECTIONS/--connections $NEW}
    CONNECTIONS=$NEW
fi
read -r PORT_LO PORT_HI </proc/sys/net/ipv4/ip_local_port_range || { PORT_LO=32768; PORT_HI=60999; }
if ((PORT_HI - PORT_LO < CONNECTIONS + 2000)); then
    log "ephemeral port range $PORT_LO-$PORT_HI is small for $CONNECTIONS connections;" \
        "pass several source addresses: -- --ifaddr 127.0.0.1,127.0.0.2,..."
fi

# --- output --------------------------------------------------------------------------------
CLEAN_OUT=0
if [[ -z $OUT ]]; then
    if [[ $MODE == smoke ]]; then
        OUT=$(mktemp -d /tmp/starling-bench-smoke.XXXXXX)
        CLEAN_OUT=1
    else
        OUT=$ROOT/bench/results/$(date +%Y%m%d-%H%M%S)-$MODE
    fi
fi
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/starling-bench-run.XXXXXX)
BROKER_PID=""
cleanup() {
    if [[ -n $BROKER_PID ]] && kill -0 "$BROKER_PID" 2>/dev/null; then
        kill -TERM "$BROKER_PID" 2>/dev/null || true
        wait "$BROKER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
    if [[ $CLEAN_OUT == 1 ]]; then
        rm -rf "$OUT"
    fi
}
trap cleanup EXIT

CORES=$(nproc)
CPU_MODEL=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
MOSQ_VERSION=$("$MOSQUITTO" -h 2>/dev/null | head -1 || true)
GIT_REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
cat >"$OUT/machine.json" <<EOF
{"cores": $CORES, "cpu_model": "${CPU_MODEL:-unknown}", "kernel": "$(uname -sr)",
 "memory_kb": $(sed -n 's/^MemTotal:[[:space:]]*\([0-9]*\).*/\1/p' /proc/meminfo),
 "load_average_at_start": "$(cut -d' ' -f1-3 /proc/loadavg)", "date": "$(date -Iseconds)",
 "mode": "$MODE", "scale": $SCALE, "bench_threads": $THREADS, "git": "$GIT_REV",
 "mosquitto": "${MOSQ_VERSION}", "open_files": "$NOFILE",
 "ephemeral_ports": "$PORT_LO-$PORT_HI"}
EOF
log "$MODE run: $CORES cores ($CPU_MODEL), load average $(cut -d' ' -f1-3 /proc/loadavg)," \
    "results in $OUT"

# --- brokers -------------------------------------------------------------------------------
free_port() {
    local port
    for _ in $(seq 1 50); do
        port=$((20000 + RANDOM % 10000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    return 1
}

wait_port() {  # wait until 127.0.0.1:$1 accepts connections (10 s)
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
            return 0
        fi
        kill -0 "$BROKER_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}

STARLING_CONFIG=$ROOT/config/starling.yml
LOGIN=()
case "$CLIENT_TYPE" in
    device) ;;
    application)
        # The client type comes from the credential, never from CONNECT.
        STARLING_CONFIG=$WORK/starling-application.yml
        awk '/^    credentials: \[\]$/ {
                 print "    credentials:"
                 print "      - name: bench-application"
                 print "        type: APPLICATION"
                 print "        credentials-type: MQTT_BASIC"
                 print "        username: bench-app"
                 print "        password: bench-app-pw"
                 next }
             { print }' "$ROOT/config/starling.yml" >"$STARLING_CONFIG"
        grep -q "username: bench-app" "$STARLING_CONFIG" ||
            { echo "run.sh: config/starling.yml has no 'credentials: []' line to replace" >&2; exit 2; }
        LOGIN=(--username bench-app --password bench-app-pw) ;;
    *) echo "run.sh: --client-type is device or application, not $CLIENT_TYPE" >&2; exit 2 ;;
esac

# Every load-generator connection comes from 127.0.0.1, so the per-address limits (a defence
# against one host opening thousands of connections) are off, as Mosquitto has none.
start_starling() {
    local data=$WORK/starling-data-$1
    rm -rf "$data"
    mkdir -p "$data"
    STARLING_DATA_DIR=$data LISTENER_TCP_BIND_ADDRESS=127.0.0.1 LISTENER_TCP_BIND_PORT=0 \
        LISTENER_WS_BIND_ADDRESS=127.0.0.1 LISTENER_WS_BIND_PORT=0 \
        HTTP_BIND_ADDRESS=127.0.0.1 HTTP_BIND_PORT=0 STARLING_LOG_LEVEL=warn \
        SECURITY_MQTT_ALLOW_ANONYMOUS=true \
        LISTENER_MAX_CONNECTIONS_PER_ADDRESS=0 LISTENER_CONNECT_RATE_PER_ADDRESS= \
        "$STARLINGD" --config "$STARLING_CONFIG" >"$WORK/starling-$1.log" 2>&1 &
    BROKER_PID=$!
    for _ in $(seq 1 300); do
        if [[ -s $data/listeners.json ]]; then
            BROKER_PORT=$(sed -n 's/.*"mqtt_tcp":[[:space:]]*\([0-9]*\).*/\1/p' "$data/listeners.json")
            [[ -n $BROKER_PORT ]] && return 0
        fi
        kill -0 "$BROKER_PID" 2>/dev/null || break
        sleep 0.05
    done
    echo "run.sh: starlingd did not start; its log:" >&2
    tail -20 "$WORK/starling-$1.log" >&2
    return 1
}

# One starlingd in cluster mode; the topic prefix is new for every scenario, so no state or
# consumer-group offsets carry over between them.
start_starling-cluster() {
    if [[ -z ${STARLING_BENCH_KAFKA:-} ]]; then
        bash "$ROOT/scripts/services.sh" up >&2
        local line
        while IFS= read -r line; do export "${line?}"; done < <(bash "$ROOT/scripts/services.sh" env)
        STARLING_BENCH_KAFKA=$TB_KAFKA_SERVERS
    fi
    local prefix
    prefix="bench$(date +%s%N)"
    STARLING_MODE=cluster TB_SERVICE_ID=bench-node TB_KAFKA_SERVERS=$STARLING_BENCH_KAFKA \
        TB_KAFKA_PREFIX=$prefix \
        SPRING_DATASOURCE_URL="${SPRING_DATASOURCE_URL:-postgresql://starling:starling@127.0.0.1:5432/starling}?currentSchema=$prefix" \
        start_starling "cluster-$1"
}

start_mosquitto() {
    BROKER_PORT=$(free_port) || { echo "run.sh: no free port" >&2; return 1; }
    # Persistence off; queues unbounded (0 = no limit on messages or bytes; the default 1000
    # would drop most of the drain scenario's backlog) so it never drops by configuration; the
    # same in-flight window as Starling's default (mqtt.max-in-flight-msgs 1000); quiet logs.
    cat >"$WORK/mosquitto.conf" <<EOF
listener $BROKER_PORT 127.0.0.1
allow_anonymous true
persistence false
max_queued_messages 0
max_queued_bytes 0
max_inflight_messages 1000
max_keepalive 65535
connection_messages false
log_type error
log_type warning
log_dest stderr
EOF
    "$MOSQUITTO" -c "$WORK/mosquitto.conf" >"$WORK/mosquitto-$1.log" 2>&1 &
    BROKER_PID=$!
    wait_port "$BROKER_PORT" || {
        echo "run.sh: mosquitto did not start; its log:" >&2
        tail -20 "$WORK/mosquitto-$1.log" >&2
        return 1
    }
}

stop_broker() {
    [[ -n $BROKER_PID ]] || return 0
    kill -TERM "$BROKER_PID" 2>/dev/null || true
    for _ in $(seq 1 200); do
        kill -0 "$BROKER_PID" 2>/dev/null || break
        sleep 0.05
    done
    if kill -0 "$BROKER_PID" 2>/dev/null; then
        kill -KILL "$BROKER_PID" 2>/dev/null || true
    fi
    wait "$BROKER_PID" 2>/dev/null || true
    BROKER_PID=""
}

# --- run -----------------------------------------------------------------------------------
FAILED=0
IFS=, read -r -a BROKER_LIST <<<"$BROKERS"
IFS=, read -r -a SCENARIO_LIST <<<"$SCENARIOS"
START=$(date +%s.%N)
for broker in "${BROKER_LIST[@]}"; do
    case "$broker" in
        starling | starling-cluster)
            [[ -x $STARLINGD ]] || { echo "run.sh: $STARLINGD not found" >&2; FAILED=1; continue; } ;;
        mosquitto)
            if [[ ! -x $MOSQUITTO ]]; then
                log "mosquitto not installed ($MOSQUITTO): skipped"
                continue
            fi ;;
        *) echo "run.sh: unknown broker $broker" >&2; exit 2 ;;
    esac
    for scenario in "${SCENARIO_LIST[@]}"; do
        [[ -n ${ARGS[$scenario]+x} ]] || { echo "run.sh: unknown scenario $scenario" >&2; exit 2; }
        # A fresh broker per scenario: its peak RSS (VmHWM) then belongs to that scenario.
        "start_$broker" "$scenario" || { FAILED=1; continue; }
        log "$broker: $scenario"
        set +e
        # shellcheck disable=SC2086 # ARGS entries are word lists on purpose
        "$BENCH" scenario "$scenario" --host 127.0.0.1 --port "$BROKER_PORT" \
            --threads "$THREADS" --label "$broker" --broker-pid "$BROKER_PID" \
            --json "$OUT/$broker-$scenario.json" "${COMMON[@]}" ${ARGS[$scenario]} \
            "${LOGIN[@]}" "${EXTRA[@]}" 2>&1 | tee "$OUT/$broker-$scenario.txt"
        rc=${PIPESTATUS[0]}
        set -e
        if ! kill -0 "$BROKER_PID" 2>/dev/null; then
            wait "$BROKER_PID" 2>/dev/null
            log "$broker exited during $scenario (status $?); its log is $OUT/$broker-$scenario.log"
            rc=1
        fi
        stop_broker
        echo "$(date -Iseconds) $broker $scenario load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"
        if [[ -s $WORK/$broker-$scenario.log ]]; then
            cp "$WORK/$broker-$scenario.log" "$OUT/$broker-$scenario.log"
        fi
        if [[ $rc != 0 ]]; then
            log "$broker $scenario: starling-bench exited with $rc" \
                "(1 = errors, 3 = messages lost or duplicated at QoS 1)"
            FAILED=1
        fi
    done
done
ELAPSED=$(awk -v s="$START" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

shopt -s nullglob
RESULTS=()
for f in "$OUT"/*.json; do
    [[ $(basename "$f") == machine.json ]] || RESULTS+=("$f")
done
if [[ ${#RESULTS[@]} -gt 0 ]]; then
    echo
    "$BENCH" compare "${RESULTS[@]}" | tee "$OUT/summary.md"
fi
log "$MODE run finished in ${ELAPSED} s"
if [[ $MODE == smoke ]]; then
    if [[ $FAILED != 0 ]]; then
        log "smoke FAILED"
        exit 1
    fi
    log "smoke passed"
fi
exit 0
