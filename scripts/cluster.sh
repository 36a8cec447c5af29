#!/usr/bin/env bash
# Runs a Starling cluster on this machine: N identical starlingd nodes in cluster mode against
# the Kafka, Redis and PostgreSQL of scripts/services.sh, each node on its own ports, so clients
# can connect to any node.
#
#   scripts/cluster.sh up N      start nodes 1..N (starts the services first when not running)
#   scripts/cluster.sh down      SIGTERM every node (each drains) and wait for them
#   scripts/cluster.sh status    each node's ports and /actuator/health
#
# Node i (1-based) is TB_SERVICE_ID=node-i with MQTT on 1883+100*(i-1) (1883, 1983, 2083, ...),
# WebSocket on 8084+100*(i-1) and HTTP (health, metrics) on 8083+100*(i-1); its data and log are
# under $STARLING_CLUSTER_DIR/node-i (default <repo>/.cluster). Anonymous clients are accepted
# (a development cluster). Environment: STARLINGD (binary; default: build/release, built when
# missing), TB_KAFKA_SERVERS (default: the services.sh Kafka), TB_KAFKA_PREFIX (default starling).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${STARLING_CLUSTER_DIR:-$root/.cluster}"

log() { echo "cluster: $*" >&2; }
die() { log "$*"; exit 1; }

node_offset() { echo $((100 * ($1 - 1))); }

binary() {
    if [[ -n ${STARLINGD:-} ]]; then
        echo "$STARLINGD"
        return
    fi
    local b="$root/build/release/src/app/starlingd"
    if [[ ! -x $b ]]; then
        log "building the release starlingd (first time only)"
        bash "$root/scripts/install-deps.sh" >&2
        cmake --preset release -S "$root" >/dev/null
        cmake --build "$root/build/release" -j "$(nproc)" --target starlingd >&2
    fi
    echo "$b"
}

up() {
    local count=${1:-3}
    [[ $count =~ ^[1-9][0-9]*$ ]] || die "usage: cluster.sh up N (N >= 1)"
    local bin
    bin=$(binary)
    # Kafka, Redis and PostgreSQL: the ones of scripts/services.sh unless TB_KAFKA_SERVERS names
    # external services (then REDIS_* and SPRING_DATASOURCE_* come from the environment too).
    if [[ -z ${TB_KAFKA_SERVERS:-} ]]; then
        bash "$root/scripts/services.sh" up
        local line
        while IFS= read -r line; do export "${line?}"; done < <(bash "$root/scripts/services.sh" env)
    fi
    local servers=$TB_KAFKA_SERVERS
    local i
    for i in $(seq 1 "$count"); do
        local node="$dir/node-$i" off
        off=$(node_offset "$i")
        mkdir -p "$node/data"
        if [[ -f $node/pid ]] && kill -0 "$(cat "$node/pid")" 2>/dev/null; then
            log "node-$i already running"
            continue
        fi
        rm -f "$node/data/listeners.json"
        (
            cd "$node"
            STARLING_MODE=cluster TB_SERVICE_ID="node-$i" TB_KAFKA_SERVERS="$servers" \
                STARLING_DATA_DIR="$node/data" \
                LISTENER_TCP_BIND_PORT=$((1883 + off)) LISTENER_WS_BIND_PORT=$((8084 + off)) \
                HTTP_BIND_PORT=$((8083 + off)) \
                SECURITY_MQTT_ALLOW_ANONYMOUS="${SECURITY_MQTT_ALLOW_ANONYMOUS:-true}" \
                nohup "$bin" --config "$root/config/starling.yml" >"$node/starlingd.log" 2>&1 &
            echo $! >"$node/pid"
        )
    done
    for i in $(seq 1 "$count"); do
        local node="$dir/node-$i" deadline=$((SECONDS + 120))
        until [[ -f $node/data/listeners.json ]]; do
            kill -0 "$(cat "$node/pid")" 2>/dev/null ||
                die "node-$i exited during start-up; see $node/starlingd.log"
            ((SECONDS < deadline)) || die "node-$i did not start in 120 s; see $node/starlingd.log"
            sleep 0.2
        done
        log "node-$i up: mqtt 127.0.0.1:$((1883 + $(node_offset "$i"))), http :$((8083 + $(node_offset "$i")))"
    done
}

down() {
    local node pids=()
    for node in "$dir"/node-*; do
        [[ -f $node/pid ]] || continue
        local pid
        pid=$(cat "$node/pid")
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid"
            pids+=("$pid")
        fi
    done
    for pid in "${pids[@]}"; do
        for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$pid" 2>/dev/null && { log "node pid $pid did not drain in 30 s; killing"; kill -9 "$pid"; }
    done
    rm -f "$dir"/node-*/pid
    log "stopped ${#pids[@]} node(s)"
}

status() {
    local node any=0
    for node in "$dir"/node-*; do
        [[ -d $node ]] || continue
        any=1
        local name i
        name=$(basename "$node")
        i=${name#node-}
        if [[ -f $node/pid ]] && kill -0 "$(cat "$node/pid")" 2>/dev/null; then
            local health
            health=$(curl -s --max-time 2 "http://127.0.0.1:$((8083 + $(node_offset "$i")))/actuator/health" || echo "no answer")
            echo "$name: running, mqtt :$((1883 + $(node_offset "$i"))), health $health"
        else
            echo "$name: stopped"
        fi
    done
    ((any)) || echo "no cluster under $dir"
}

case "${1:-}" in
    up) up "${2:-3}" ;;
    down) down ;;
    status) status ;;
    *)
        sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
