#!/usr/bin/env python3
"""Threads starlingd holds for persistent APPLICATION clients (hardening issue, item 7).

Each connected persistent APPLICATION client reads its own msg.app.<clientId> topic, and each
APPLICATION shared subscription one more log topic. Those consumers run as turns on a fixed
pool (queue.application-persisted-msg.consumer-threads, default 4), so the thread count must
not grow with the clients. The script starts starlingd (embedded, shipped configuration, the
integration suite's APPLICATION credentials), connects N APPLICATION clients with Clean Start
0 — each subscribing to a shared filter of its own — and counts the daemon's threads by name
(/proc/<pid>/task/*/comm) before and after.

    bench/app_consumer_threads.py --starlingd build/release/src/app/starlingd --clients 40 \
        [--pool-threads 4] [--json out.json]

Uses tests/integration/starling_it (its MQTT codec and credentials); run with the project's
virtual environment (.venv/bin/python) or any Python with the suite's requirements.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "integration"))

from starling_it import codec, credentials  # noqa: E402
from starling_it.brokers import make_broker  # noqa: E402
from starling_it.raw_client import RawClient, persistent  # noqa: E402


def threads_by_name(pid: int) -> Counter:
    names: Counter = Counter()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
        except FileNotFoundError:
            continue  # the thread ended while we looked
        names[re.sub(r"[-0-9]+$", "", name)] += 1  # "app-consumer-3" → "app-consumer"
    return names


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starlingd", required=True)
    ap.add_argument("--clients", type=int, default=40)
    ap.add_argument("--pool-threads", type=int, default=None)
    ap.add_argument("--json")
    args = ap.parse_args()

    import os

    os.environ["STARLINGD"] = str(Path(args.starlingd).resolve())
    env = credentials.env()
    env["STARLING_LOG_LEVEL"] = "info"
    if args.pool_threads is not None:
        env["TB_APP_PERSISTED_MSG_CONSUMER_THREADS"] = str(args.pool_threads)
    work = Path(tempfile.mkdtemp(prefix="app-threads-"))
    broker = make_broker(work, env=env, config_text=credentials.config_text(), kind="starlingd")
    broker.start()
    try:
        pid = broker.proc.pid
        before = threads_by_name(pid)
        conns = []
        for i in range(args.clients):
            c = RawClient(broker.host, broker.port, codec.MQTT5)
            ack = c.connect(
                f"app-{i}", **persistent(codec.MQTT5, expiry=3600), **credentials.APPLICATION
            )
            assert ack.reason_code == 0, f"app-{i}: CONNACK {ack.reason_code:#x}"
            assert c.subscribe(f"$share/g{i}/m/{i}/#", 1).reason_codes == [1]
            conns.append(c)
        # Consumers are created as the sessions start; the count is read once it is stable.
        after = threads_by_name(pid)
        for _ in range(50):
            time.sleep(0.1)  # polling a condition (a stable count) with a deadline
            now = threads_by_name(pid)
            if now == after:
                break
            after = now
        report = {
            "clients": args.clients,
            "threads_before": sum(before.values()),
            "threads_after": sum(after.values()),
            "app_consumer_threads": after.get("app-consumer", 0),
            "by_name_after": dict(sorted(after.items())),
        }
        print(json.dumps(report, indent=2))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2) + "\n")
        for c in conns:
            c.close()
    finally:
        broker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
