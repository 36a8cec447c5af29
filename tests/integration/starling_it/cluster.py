"""Cluster-mode environment for starlingd under test: Kafka, Redis and PostgreSQL from
STARLING_TEST_KAFKA / STARLING_TEST_REDIS / STARLING_TEST_POSTGRES (scripts/test.sh starts the
services and sets them; `scripts/services.sh up` for a local run).

Isolation, so tests sharing the services never see each other: every cluster has its own Kafka
topic prefix (topics and consumer groups), its own PostgreSQL schema (currentSchema in the URL)
and unique client ids (the Redis inbox keys are per client id).
"""

from __future__ import annotations

import itertools
import os
import time

import pytest

KAFKA = os.environ.get("STARLING_TEST_KAFKA", "")
REDIS = os.environ.get("STARLING_TEST_REDIS", "")
POSTGRES = os.environ.get("STARLING_TEST_POSTGRES", "")

requires_services = pytest.mark.skipif(
    not (KAFKA and REDIS and POSTGRES),
    reason="cluster mode needs Kafka, Redis and PostgreSQL: run `scripts/services.sh up` and set "
    "STARLING_TEST_KAFKA=127.0.0.1:9092 STARLING_TEST_REDIS=127.0.0.1:6379 "
    "STARLING_TEST_POSTGRES=postgresql://starling:starling@127.0.0.1:5432/starling "
    "(scripts/test.sh does both)",
)

_prefixes = itertools.count()


def new_prefix() -> str:
    """A Kafka topic prefix and PostgreSQL schema name no other test uses."""
    return f"it{os.getpid()}x{int(time.time() * 1000) % 10**9}x{next(_prefixes)}"


def cluster_env(prefix: str, node_id: str, kafka: str | None = None, **extra: str) -> dict[str, str]:
    host, _, port = REDIS.partition(":")
    separator = "&" if "?" in POSTGRES else "?"
    env = {
        "STARLING_MODE": "cluster",
        "TB_SERVICE_ID": node_id,
        "TB_KAFKA_SERVERS": kafka or KAFKA,
        "TB_KAFKA_PREFIX": prefix,
        # Small partition counts keep topic creation and rebalances quick on a 2-core machine.
        "TB_KAFKA_MSG_ALL_PARTITIONS": "6",
        "TB_KAFKA_DOWNLINK_PARTITIONS": "2",
        "REDIS_HOST": host or "127.0.0.1",
        "REDIS_PORT": port or "6379",
        "SPRING_DATASOURCE_URL": f"{POSTGRES}{separator}currentSchema={prefix}",
    }
    env.update(extra)
    return env


def start_nodes(broker_factory, count: int, **env: str) -> list:
    """``count`` started nodes (node-a, node-b, ...) of one new cluster, each with ``env``."""
    prefix = new_prefix()
    return [
        broker_factory(env=cluster_env(prefix, f"node-{chr(ord('a') + i)}", **env))
        for i in range(count)
    ]
