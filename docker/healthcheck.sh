#!/usr/bin/env bash
# Container health check for starlingd (installed as /usr/local/bin/starling-healthcheck).
# GET /actuator/health on the node's own HTTP port; healthy (exit 0) when the node answers 200,
# i.e. its status is UP or DEGRADED; unhealthy (exit 1) on 503 (starting, stopping, a component
# DOWN), no answer, or no listener. It uses bash's /dev/tcp so the image needs no curl; what it
# prints (status line and health JSON) is what `docker inspect` shows as the check's output.
#
# The port is the one the running daemon wrote to <data_dir>/listeners.json (correct even with
# HTTP_BIND_PORT=0), else HTTP_BIND_PORT, else 8083 (starling-http-address.sh, installed next to
# it). STARLING_HEALTHCHECK_TIMEOUT (seconds, default 4) bounds each read; keep it below the
# HEALTHCHECK --timeout.
set -uo pipefail

# shellcheck source=docker/starling-http-address.sh
source "$(dirname "${BASH_SOURCE[0]}")/starling-http-address.sh"

read_timeout="${STARLING_HEALTHCHECK_TIMEOUT:-4}"
request=$'GET /actuator/health HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\nConnection: close\r\n\r\n'

status_line=""
body=""
# The group runs only if the connection opens; the variables it sets stay in this shell.
{
    printf '%s' "$request" >&3
    IFS= read -r -t "$read_timeout" status_line <&3
    # Headers up to the blank line, then the JSON body (bounded: the check's output is for
    # people, and Docker keeps 4 KiB of it).
    while IFS= read -r -t "$read_timeout" line <&3; do
        [[ "${line%$'\r'}" == "" ]] && break
    done
    IFS= read -r -t "$read_timeout" -N 2048 body <&3 || true
} 2>/dev/null 3<>"/dev/tcp/${host}/${port}"

if [[ -z "$status_line" ]]; then
    echo "starling-healthcheck: no HTTP answer from ${host}:${port} (not listening yet?)"
    exit 1
fi
status_line="${status_line%$'\r'}"
echo "${status_line} ${body}"
# "HTTP/1.1 200 OK": UP or DEGRADED. Anything else (503 while starting/stopping or DOWN).
if [[ "$status_line" =~ ^HTTP/[0-9.]+\ 200( |$) ]]; then
    exit 0
fi
exit 1
