#!/usr/bin/env bash
# Starts and stops the external services of a cluster deployment on loopback, without Docker,
# for development, the tests and trying a cluster on one machine:
#
#   scripts/services.sh up     [kafka] [redis] [postgres]   (default: all three)
#   scripts/services.sh down   [kafka] [redis] [postgres]
#   scripts/services.sh status [kafka] [redis] [postgres]
#   scripts/services.sh env      (prints the variables a cluster-mode starlingd needs, KEY=VALUE)
#
# Kafka: the official Apache Kafka broker jars (version pinned in scripts/services/kafka-pom.xml)
# resolved from Maven Central with mvn into ~/.m2 and copied to $STARLING_SERVICES_DIR/kafka/libs,
# KRaft storage formatted once, run with the machine's Java. KAFKA_BROKERS=3 runs three brokers
# (combined broker+controller, replication factor 3 possible) on ports 9092, 9094, 9096.
# Redis and PostgreSQL: Debian's packages (scripts/install-deps.sh), data under the same folder.
#
# Environment: STARLING_SERVICES_DIR (default <repo>/.services), KAFKA_PORT (9092),
# KAFKA_BROKERS (1), KAFKA_HEAP (1g: the suites leave their topics behind, and 512m ran out of heap after ~16,000 partitions), REDIS_PORT (6379), POSTGRES_PORT (5432).
# `up` is idempotent: a service already running is left alone. `down` keeps the data;
# `down --wipe` also deletes it.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
state="${STARLING_SERVICES_DIR:-$root/.services}"
kafka_port="${KAFKA_PORT:-9092}"
kafka_brokers="${KAFKA_BROKERS:-1}"
redis_port="${REDIS_PORT:-6379}"
postgres_port="${POSTGRES_PORT:-5432}"

log() { echo "services: $*" >&2; }
die() { log "$*"; exit 1; }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Waits until a TCP port accepts connections or the process behind pidfile $2 died.
wait_port() {
    local port=$1 pidfile=$2 what=$3 deadline=$((SECONDS + ${4:-90}))
    until port_open "$port"; do
        if [[ -n "$pidfile" ]] && ! kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; then
            die "$what exited during start-up (see its log under $state)"
        fi
        ((SECONDS < deadline)) || die "$what did not open port $port in time"
        sleep 0.2
    done
}

running() { [[ -f $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_pidfile() {
    local pidfile=$1 what=$2
    if running "$pidfile"; then
        local pid
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then
            log "$what did not stop in 30 s; killing it"
            kill -9 "$pid" 2>/dev/null || true
        fi
        log "$what stopped"
    fi
    rm -f "$pidfile"
}

# ---------------------------------------------------------------------------------------------
# Kafka

kafka_libs() {
    local libs="$state/kafka/libs" pom="$root/scripts/services/kafka-pom.xml"
    local stamp="$libs/.pom.sha"
    local want
    want=$(sha256sum "$pom" | cut -d' ' -f1)
    if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
        return
    fi
    command -v mvn >/dev/null || die "mvn is needed to fetch the Kafka jars"
    command -v java >/dev/null || die "java is needed to run Kafka"
    log "fetching the Kafka broker jars with Maven (cached in ~/.m2)"
    rm -rf "$libs" && mkdir -p "$libs"
    mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
        -DoutputDirectory="$libs" >"$state/kafka/mvn.log" 2>&1 ||
        die "mvn could not resolve the Kafka jars (see $state/kafka/mvn.log)"
    echo "$want" >"$stamp"
}

kafka_java() {
    java -Xms128m -Xmx"${KAFKA_HEAP:-1g}" -XX:+UseG1GC -Djava.awt.headless=true \
        -Dkafka.logs.file="$state/kafka/tools.log" -Dlog4j.configuration="file:$root/scripts/services/kafka-log4j.properties" \
        -cp "$state/kafka/libs/*" "$@"
}

kafka_broker_port() { echo $((kafka_port + 2 * ($1 - 1))); }

kafka_up() {
    mkdir -p "$state/kafka"
    kafka_libs
    local voters="" i
    for i in $(seq 1 "$kafka_brokers"); do
        voters+="${voters:+,}$i@127.0.0.1:$(($(kafka_broker_port "$i") + 1))"
    done
    local cluster_id_file="$state/kafka/cluster.id"
    if [[ ! -f $cluster_id_file || $(cat "$state/kafka/brokers" 2>/dev/null) != "$kafka_brokers" ]]; then
        rm -rf "$state"/kafka/broker-*
        kafka_java kafka.tools.StorageTool random-uuid 2>/dev/null | tail -1 >"$cluster_id_file"
        echo "$kafka_brokers" >"$state/kafka/brokers"
    fi
    local replication=$((kafka_brokers >= 3 ? 3 : 1))
    for i in $(seq 1 "$kafka_brokers"); do
        local dir="$state/kafka/broker-$i" port
        port=$(kafka_broker_port "$i")
        if running "$dir/pid"; then
            log "kafka broker $i already running on 127.0.0.1:$port"
            continue
        fi
        mkdir -p "$dir"
        cat >"$dir/server.properties" <<EOF
process.roles=broker,controller
node.id=$i
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$((port + 1))
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$dir/data
num.partitions=1
default.replication.factor=$replication
offsets.topic.replication.factor=$replication
offsets.topic.num.partitions=12
transaction.state.log.replication.factor=$replication
transaction.state.log.min.isr=1
auto.create.topics.enable=false
group.initial.rebalance.delay.ms=0
log.segment.bytes=67108864
EOF
        if [[ ! -f $dir/data/meta.properties ]]; then
            kafka_java kafka.tools.StorageTool format -t "$(cat "$cluster_id_file")" \
                -c "$dir/server.properties" >"$dir/format.log" 2>&1 ||
                die "kafka storage format failed (see $dir/format.log)"
        fi
        (
            cd "$dir"
            nohup java -Xms128m -Xmx"${KAFKA_HEAP:-1g}" \
                -XX:+UseG1GC -Djava.awt.headless=true -Dkafka.logs.file="$dir/server.log" \
                -Dlog4j.configuration="file:$root/scripts/services/kafka-log4j.properties" \
                -cp "$state/kafka/libs/*" kafka.Kafka "$dir/server.properties" \
                >"$dir/stdout.log" 2>&1 &
            echo $! >"$dir/pid"
        )
    done
    for i in $(seq 1 "$kafka_brokers"); do
        local dir="$state/kafka/broker-$i"
        wait_port "$(kafka_broker_port "$i")" "$dir/pid" "kafka broker $i"
        # The listener opens before the broker has joined the quorum; its log says when it serves.
        local deadline=$((SECONDS + 90))
        until grep -q "Kafka Server started" "$dir/server.log" 2>/dev/null; do
            running "$dir/pid" || die "kafka broker $i exited (see $dir/server.log)"
            ((SECONDS < deadline)) || die "kafka broker $i did not finish start-up in 90 s"
            sleep 0.2
        done
        log "kafka broker $i up on 127.0.0.1:$(kafka_broker_port "$i")"
    done
}

kafka_down() {
    local dir
    # Signal every broker first: the last one of a quorum cannot shut down cleanly alone.
    for dir in "$state"/kafka/broker-*; do
        if running "$dir/pid"; then kill "$(cat "$dir/pid")" 2>/dev/null || true; fi
    done
    for dir in "$state"/kafka/broker-*; do
        [[ -d $dir ]] && stop_pidfile "$dir/pid" "kafka $(basename "$dir")"
    done
    if [[ ${wipe:-0} == 1 ]]; then rm -rf "$state"/kafka/broker-* "$state/kafka/cluster.id"; fi
}

kafka_status() {
    local dir any=0
    for dir in "$state"/kafka/broker-*; do
        [[ -d $dir ]] || continue
        any=1
        if running "$dir/pid"; then echo "kafka $(basename "$dir"): running"; else echo "kafka $(basename "$dir"): stopped"; fi
    done
    ((any)) || echo "kafka: not set up"
}

kafka_bootstrap() {
    local i out=""
    for i in $(seq 1 "$kafka_brokers"); do out+="${out:+,}127.0.0.1:$(kafka_broker_port "$i")"; done
    echo "$out"
}

# ---------------------------------------------------------------------------------------------
# Redis

redis_up() {
    local dir="$state/redis"
    mkdir -p "$dir"
    if running "$dir/pid"; then log "redis already running on 127.0.0.1:$redis_port"; return; fi
    command -v redis-server >/dev/null || die "redis-server is not installed (scripts/install-deps.sh)"
    redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$dir" --daemonize yes \
        --pidfile "$dir/pid" --logfile "$dir/redis.log" --appendonly yes --save "" \
        --protected-mode yes >/dev/null
    for _ in $(seq 1 50); do [[ -s $dir/pid ]] && break; sleep 0.1; done
    wait_port "$redis_port" "$dir/pid" redis 30
    log "redis up on 127.0.0.1:$redis_port"
}

redis_down() {
    stop_pidfile "$state/redis/pid" redis
    if [[ ${wipe:-0} == 1 ]]; then rm -rf "$state/redis"; fi
}

redis_status() {
    if running "$state/redis/pid"; then echo "redis: running"; else echo "redis: stopped"; fi
}

# ---------------------------------------------------------------------------------------------
# PostgreSQL (refuses to run as root: as root, the server runs as the postgres system user)

pg_bin() {
    local d
    for d in /usr/lib/postgresql/*/bin; do [[ -x $d/pg_ctl ]] && { echo "$d"; return; }; done
    die "PostgreSQL server binaries not found (scripts/install-deps.sh)"
}

as_pg() {
    if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The server runs as the postgres user, which may not be able to enter the project's folder
# (a checkout under /root): its data then lives under /var/tmp, named after the state folder.
pg_dir() {
    if [[ $(id -u) -eq 0 ]] && ! runuser -u postgres -- test -x "$state" 2>/dev/null; then
        echo "/var/tmp/starling-postgres-$(echo "$state" | sha256sum | cut -c1-12)"
    else
        echo "$state/postgres"
    fi
}

postgres_up() {
    local dir bin
    dir=$(pg_dir)
    bin=$(pg_bin)
    mkdir -p "$dir"
    if [[ $(id -u) -eq 0 ]]; then chown postgres: "$dir"; fi
    if [[ ! -f $dir/data/PG_VERSION ]]; then
        as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
            die "initdb failed (see $dir/initdb.log)"
    fi
    if as_pg "$bin/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        log "postgres already running on 127.0.0.1:$postgres_port"
    else
        as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 \
            -o "-h 127.0.0.1 -p $postgres_port -k $dir" start >/dev/null ||
            die "postgres did not start (see $dir/postgres.log)"
    fi
    as_pg psql -h 127.0.0.1 -p "$postgres_port" -U postgres -tAc \
        "SELECT 1 FROM pg_roles WHERE rolname='starling'" | grep -q 1 ||
        { as_pg psql -h 127.0.0.1 -p "$postgres_port" -U postgres -qc \
            "CREATE ROLE starling LOGIN PASSWORD 'starling'" &&
            as_pg psql -h 127.0.0.1 -p "$postgres_port" -U postgres -qc \
                "CREATE DATABASE starling OWNER starling"; } ||
        die "cannot create the starling role and database"
    log "postgres up on 127.0.0.1:$postgres_port (database starling, user starling)"
}

postgres_down() {
    local dir
    dir=$(pg_dir)
    if [[ -f $dir/data/PG_VERSION ]]; then
        as_pg "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 &&
            log "postgres stopped" || true
    fi
    if [[ ${wipe:-0} == 1 ]]; then rm -rf "$dir"; fi
}

postgres_status() {
    local dir
    dir=$(pg_dir)
    if [[ -f $dir/data/PG_VERSION ]] && as_pg "$(pg_bin)/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
        echo "postgres: running"
    else
        echo "postgres: stopped"
    fi
}

# ---------------------------------------------------------------------------------------------

command="${1:-}"
shift || true
wipe=0
services=()
for arg in "$@"; do
    case "$arg" in
        --wipe) wipe=1 ;;
        kafka | redis | postgres) services+=("$arg") ;;
        *) die "unknown service '$arg' (kafka, redis, postgres)" ;;
    esac
done
((${#services[@]})) || services=(kafka redis postgres)
mkdir -p "$state"

case "$command" in
    up) for s in "${services[@]}"; do "${s}_up"; done ;;
    down) for s in "${services[@]}"; do "${s}_down"; done ;;
    status) for s in "${services[@]}"; do "${s}_status"; done ;;
    env)
        echo "TB_KAFKA_SERVERS=$(kafka_bootstrap)"
        echo "REDIS_HOST=127.0.0.1"
        echo "REDIS_PORT=$redis_port"
        echo "SPRING_DATASOURCE_URL=postgresql://starling:starling@127.0.0.1:$postgres_port/starling"
        ;;
    *)
        sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
        exit 2
        ;;
esac
