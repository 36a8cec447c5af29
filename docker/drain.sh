#!/usr/bin/env bash
# Drains this node before it is stopped (installed as /usr/local/bin/starling-drain; the Helm
# chart's preStop hook). POST /api/app/drain on the node's own HTTP port: the node stops
# accepting, turns not-ready and closes its clients' connections at starling.drain.rate per
# second (MQTT 5 clients are pointed to starling.drain.server_reference); then waits until the
# node reports DRAINED, at most the seconds given as the first argument (default 60), and
# returns, so that SIGTERM follows. Uses bash's /dev/tcp so the image needs no curl.
#
# Needs the admin token in SECURITY_ADMIN_TOKEN. It always exits 0 (a preStop hook that fails
# changes nothing but an event): what happened is printed, and the node stops anyway.
set -uo pipefail

# shellcheck source=docker/starling-http-address.sh
source "$(dirname "${BASH_SOURCE[0]}")/starling-http-address.sh"
wait_s="${1:-60}"
[[ "$wait_s" =~ ^[0-9]+$ ]] || wait_s=60
token="${SECURITY_ADMIN_TOKEN:-}"

if [[ -z "$token" ]]; then
    echo "starling-drain: SECURITY_ADMIN_TOKEN is not set; the node stops without draining"
    exit 0
fi

# call METHOD: prints the answer's status code and JSON body on one line ("000" when none).
call() {
    local status_line="" body="" line
    {
        printf '%s /api/app/drain HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n' \
            "$1" "$token" >&3
        IFS= read -r -t 5 status_line <&3
        while IFS= read -r -t 5 line <&3; do
            [[ "${line%$'\r'}" == "" ]] && break
        done
        IFS= read -r -t 5 -N 1024 body <&3 || true
    } 2>/dev/null 3<>"/dev/tcp/${host}/${port}"
    local code="000"
    [[ "$status_line" =~ ^HTTP/[0-9.]+\ ([0-9]{3}) ]] && code="${BASH_REMATCH[1]}"
    echo "$code $body"
}

answer="$(call POST)"
case "${answer%% *}" in
    200 | 202) echo "starling-drain: draining: ${answer#* }" ;;
    *)
        echo "starling-drain: POST /api/app/drain answered ${answer}; the node stops without draining"
        exit 0
        ;;
esac

deadline=$((SECONDS + wait_s))
while ((SECONDS < deadline)); do
    answer="$(call GET)"
    if [[ "$answer" == *'"state":"DRAINED"'* ]]; then
        echo "starling-drain: drained: ${answer#* }"
        exit 0
    fi
    sleep 1
done
echo "starling-drain: not drained after ${wait_s} s (${answer#* }); stopping anyway"
exit 0
