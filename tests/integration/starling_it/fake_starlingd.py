"""A stand-in for ``starlingd`` that implements only its start-up contract, to self-test the
fixture plumbing (``StarlingdBroker``) before the real daemon exists. It is not a broker.

Contract exercised: ``--config <file>``; env STARLING_DATA_DIR, LISTENER_TCP_BIND_ADDRESS /
_PORT, HTTP_BIND_ADDRESS / _PORT (0 = ephemeral); once both listeners are open it writes
``<data_dir>/listeners.json`` = {"mqtt_tcp": port, "http": port} atomically (rename); it serves
GET /actuator/health and /actuator/prometheus; SIGTERM → exit 0. ``FAKE_STARTUP_DELAY`` (s)
delays the listeners, to prove the fixture waits for the file and ignores a stale one.
"""

from __future__ import annotations

import http.server
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path == "/actuator/health":
            body, ctype = b'{"status":"UP"}', "application/json"
        elif self.path == "/actuator/prometheus":
            body = b"# TYPE connectedSessions gauge\nconnectedSessions 0\n"
            ctype = "text/plain; version=0.0.4"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt: str, *args) -> None:
        print("http:", fmt % args, flush=True)


def main() -> int:
    args = sys.argv[1:]
    if len(args) != 2 or args[0] != "--config" or not Path(args[1]).name:
        print(f"usage: fake_starlingd --config <file>, got {args}", flush=True)
        return 2
    data_dir = Path(os.environ["STARLING_DATA_DIR"])
    time.sleep(float(os.environ.get("FAKE_STARTUP_DELAY", "0")))  # simulated slow start-up

    mqtt = socket.socket()
    mqtt.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    mqtt.bind((os.environ["LISTENER_TCP_BIND_ADDRESS"], int(os.environ["LISTENER_TCP_BIND_PORT"])))
    mqtt.listen()
    httpd = http.server.ThreadingHTTPServer(
        (os.environ["HTTP_BIND_ADDRESS"], int(os.environ["HTTP_BIND_PORT"])), _Handler
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    ports = {"mqtt_tcp": mqtt.getsockname()[1], "http": httpd.server_address[1]}
    tmp = data_dir / "listeners.json.tmp"
    tmp.write_text(json.dumps(ports))
    tmp.rename(data_dir / "listeners.json")
    print(f"listening {ports} config={args[1]} log={os.environ.get('STARLING_LOG_LEVEL')}",
          flush=True)

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while not stop.is_set():
        mqtt.settimeout(0.2)
        try:
            conn, _ = mqtt.accept()
            conn.close()
        except socket.timeout:
            pass
    httpd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
