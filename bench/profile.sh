#!/usr/bin/env bash
# bench/profile.sh: profile starlingd while starling-bench drives a scenario at a fixed rate
# (default: fan-out, 5 publishers -> 1,000 subscribers, 150 msg/s in = 150,000 deliveries/s).
#
#   bench/profile.sh [--build-dir DIR] [--scenario NAME] [--rate N] [--seconds S] [--out DIR]
#                    [--tool perf|callgrind] [-- extra starling-bench args]
#
# perf (the default, when `perf stat -e task-clock true` works): samples starlingd at 499 Hz
# with DWARF call graphs for --seconds in the middle of the run, then writes to --out:
#   profile.txt   the run's numbers, time per thread, the top symbols (self time), and the
#                 inclusive time of the stages of the delivery path
#   perf.data     for your own `perf report -i`
# callgrind: runs starlingd under valgrind (about 50x slower: use a low --rate), collects for
#   --seconds once the load runs, writes callgrind.out and callgrind.txt (callgrind_annotate).
#
# Use a release build (RelWithDebInfo) so symbols resolve: the default is build/release.

set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=$ROOT/build/release
SCENARIO=fan-out
RATE=150
SECONDS_=5
OUT=""
TOOL=""
EXTRA=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --build-dir) BUILD_DIR=$2; shift ;;
        --scenario) SCENARIO=$2; shift ;;
        --rate) RATE=$2; shift ;;
        --seconds) SECONDS_=$2; shift ;;
        --out) OUT=$2; shift ;;
        --tool) TOOL=$2; shift ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        --) shift; EXTRA=("$@"); break ;;
        *) echo "profile.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
STARLINGD=${STARLINGD:-$BUILD_DIR/src/app/starlingd}
BENCH=${STARLING_BENCH:-$BUILD_DIR/bench/starling-bench}
for bin in "$STARLINGD" "$BENCH"; do
    [[ -x $bin ]] || { echo "profile.sh: $bin missing (build the release preset)" >&2; exit 1; }
done
if [[ -z $TOOL ]]; then
    if perf stat -e task-clock true >/dev/null 2>&1; then TOOL=perf; else TOOL=callgrind; fi
fi
OUT=${OUT:-$ROOT/bench/results/profile-$(date +%Y%m%d-%H%M%S)-$SCENARIO}
mkdir -p "$OUT"
WORK=$(mktemp -d /tmp/starling-profile.XXXXXX)
PID=""
cleanup() {
    if [[ -n $PID ]] && kill -0 "$PID" 2>/dev/null; then kill -TERM "$PID"; wait "$PID" || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

PREFIX=()
# Callgrind collects only while the load runs (switched on below), not during start-up.
[[ $TOOL == callgrind ]] &&
    PREFIX=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$OUT/callgrind.out")
# As bench/run.sh: anonymous clients allowed (the shipped configuration refuses them), and no
# per-address connection limits (every load-generator connection comes from 127.0.0.1).
STARLING_DATA_DIR=$WORK/data LISTENER_TCP_BIND_ADDRESS=127.0.0.1 LISTENER_TCP_BIND_PORT=0 \
    LISTENER_WS_BIND_ADDRESS=127.0.0.1 LISTENER_WS_BIND_PORT=0 \
    HTTP_BIND_ADDRESS=127.0.0.1 HTTP_BIND_PORT=0 STARLING_LOG_LEVEL=warn \
    SECURITY_MQTT_ALLOW_ANONYMOUS=true \
    LISTENER_MAX_CONNECTIONS_PER_ADDRESS=0 LISTENER_CONNECT_RATE_PER_ADDRESS= \
    "${PREFIX[@]}" "$STARLINGD" --config "$ROOT/config/starling.yml" >"$WORK/starlingd.log" 2>&1 &
PID=$!
for _ in $(seq 1 600); do
    [[ -s $WORK/data/listeners.json ]] && break
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/starlingd.log" >&2; exit 1; }
    sleep 0.1
done
PORT=$(sed -n 's/.*"mqtt_tcp":[[:space:]]*\([0-9]*\).*/\1/p' "$WORK/data/listeners.json")
DURATION=$((SECONDS_ + 6))
"$BENCH" scenario "$SCENARIO" --port "$PORT" --rate "$RATE" --duration "$DURATION" \
    --broker-pid "$PID" --label starling --json "$OUT/run.json" "${EXTRA[@]}" >"$OUT/run.txt" 2>&1 &
BENCH_PID=$!
if [[ $TOOL == perf ]]; then
    # Connecting 1,000+ clients and the warm-up take a few seconds; sample the steady part.
    sleep 5
    # Syscalls and context switches per second first (2 s), then the sampled profile.
    perf stat -x, -e context-switches,syscalls:sys_enter_sendmsg,syscalls:sys_enter_writev,syscalls:sys_enter_write,syscalls:sys_enter_sendto,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg,syscalls:sys_enter_read,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_futex \
        -p "$PID" -o "$OUT/perf-stat.csv" -- sleep 2 >/dev/null 2>&1 || true
    perf record -F 499 --call-graph dwarf,16384 -p "$PID" -o "$OUT/perf.data" \
        -- sleep "$SECONDS_" >/dev/null 2>&1
fi
if [[ $TOOL == callgrind ]]; then
    sleep 5
    callgrind_control -i on "$PID" >/dev/null 2>&1 || true
    sleep "$SECONDS_"
    callgrind_control -i off "$PID" >/dev/null 2>&1 || true
fi
wait "$BENCH_PID" || true
kill -TERM "$PID"
wait "$PID" || true
PID=""

# `head` closes the pipes below early; that is not a failure.
set +o pipefail
{
    echo "# starlingd profile: scenario $SCENARIO at $RATE msg/s in ($TOOL), $(date -Iseconds)"
    echo "# machine: $(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    tail -n 4 "$OUT/run.txt"
    echo
    if [[ $TOOL == perf ]]; then
        if [[ -s $OUT/perf-stat.csv ]]; then
            echo "## events per second of starlingd (perf stat, 2 s)"
            awk -F, '$1 ~ /^[0-9.]+$/ { printf "  %-40s %12.0f/s\n", $3, $1 / 2 }' "$OUT/perf-stat.csv"
            echo
        fi
        echo "## time per thread"
        perf report -i "$OUT/perf.data" --no-children --sort comm --stdio -g none 2>/dev/null |
            grep -E '^ +[0-9]'
        echo
        echo "## top symbols, self time"
        perf report -i "$OUT/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
            grep -E '^ +[0-9]' | head -40 | cut -c1-160
        echo
        echo "## stages of the delivery path, inclusive time"
        perf report -i "$OUT/perf.data" --children --sort symbol --stdio -g none 2>/dev/null |
            grep -E '^ +[0-9]' | sed 's/[[:space:]-]*$//' | grep -E 'publish_router::route$|publish_router::deliver$|session_registry::find_actor|client_actor::tell$|__introsort_loop|dispatcher_core::worker_loop|client_actor::on_deliver$|client_actor::send_publish$|mqtt::encode_publish$|net::connection::send$|net::connection::start_write$|tcp_sendmsg_locked|__napi_poll|_int_malloc|_int_free|operator new$|futex_wait$|futex_wake$|subscription_trie::match_erased' |
            cut -c1-160
    fi
} >"$OUT/profile.txt"
if [[ $TOOL == callgrind ]]; then
    callgrind_annotate "$OUT/callgrind.out" 2>/dev/null | head -80 >"$OUT/callgrind.txt" || true
fi
cat "$OUT/profile.txt"
echo "profile.sh: results in $OUT" >&2
