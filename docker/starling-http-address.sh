# Sourced by starling-healthcheck and starling-drain (bash): sets `host` and `port` of this
# node's own HTTP server. The port is the one the running daemon wrote to
# <data_dir>/listeners.json (correct even with HTTP_BIND_PORT=0), else HTTP_BIND_PORT, else
# 8083; a wildcard bind address is reached through loopback, a specific one only through itself.
# shellcheck shell=bash disable=SC2034  # host and port are for the script that sources this

port="${HTTP_BIND_PORT:-8083}"
listeners="${STARLING_DATA_DIR:-/data}/listeners.json"
if [[ -r "$listeners" ]]; then
    # {"mqtt_tcp": 1883, "http": 8083}
    if [[ "$(<"$listeners")" =~ \"http\":\ *([0-9]+) ]]; then
        port="${BASH_REMATCH[1]}"
    fi
fi

host="${HTTP_BIND_ADDRESS:-0.0.0.0}"
case "$host" in
    "" | 0.0.0.0) host=127.0.0.1 ;;
    "::" | "[::]") host=::1 ;;
esac
host="${host#[}"
host="${host%]}"
