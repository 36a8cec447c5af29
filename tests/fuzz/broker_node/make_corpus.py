#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_broker_node: a few conversations of several clients, framed as
the target reads them ([client][length][bytes], at most 255 bytes a frame).

    python3 tests/fuzz/broker_node/make_corpus.py tests/fuzz/broker_node/corpus
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integration"))
from starling_it import codec  # noqa: E402


def frames(conversation):
    out = bytearray()
    for client, packet in conversation:
        for i in range(0, len(packet), 255):
            chunk = packet[i : i + 255]
            out += bytes([client, len(chunk)]) + chunk
    return bytes(out)


V5, V3 = codec.MQTT5, codec.MQTT311


def seeds():
    yield "publish_subscribe", [
        (0, codec.connect("x", protocol=V5)),
        (0, codec.subscribe(1, [("a/#", codec.subscription_options(1))], protocol=V5)),
        (1, codec.connect("x", protocol=V5)),
        *[(1, codec.publish("a/b", f"m{i}", qos=1, packet_id=i + 1)) for i in range(3)],
        *[(0, codec.puback(i + 1)) for i in range(3)],
        (1, codec.disconnect()),
    ]
    yield "persistent_over_the_subscription_limit", [
        (2, codec.connect("x", clean_start=False, protocol=V3)),
        *[(2, codec.subscribe(i + 1, [(f"s/{i}", 1)], protocol=V3)) for i in range(7)],
        (3, codec.connect("x", protocol=V3)),
        *[(3, codec.publish(f"s/{i}", "x", qos=1, packet_id=i + 1, protocol=V3)) for i in range(7)],
    ]
    yield "retained_over_the_limit", [
        (0, codec.connect("x", protocol=V5)),
        *[(0, codec.publish(f"r/{i}", "keep", qos=1, retain=True, packet_id=i + 1))
          for i in range(14)],
        (1, codec.connect("x", protocol=V5)),
        (1, codec.subscribe(1, [("r/#", codec.subscription_options(1))], protocol=V5)),
    ]
    yield "qos2_both_ways", [
        (0, codec.connect("x", protocol=V5)),
        (0, codec.subscribe(1, [("q/#", codec.subscription_options(2))], protocol=V5)),
        (1, codec.connect("x", protocol=V5)),
        (1, codec.publish("q/1", "two", qos=2, packet_id=5)),
        (1, codec.pubrel(5)),
        (0, codec.pubrec(1)),
        (0, codec.pubcomp(1)),
    ]
    yield "v311_pipelining_past_the_window", [
        (0, codec.connect("x", protocol=V3)),
        *[(0, codec.publish("p", f"{i}", qos=1, packet_id=i + 1, protocol=V3)) for i in range(12)],
    ]
    yield "will_and_deep_topics", [
        (0, codec.connect("x", will=codec.Will("w/a/b/c/d/e/f/g/h/i", b"gone"), protocol=V5)),
        (1, codec.connect("x", will=codec.Will("w", b"gone", qos=1), protocol=V5)),
        (1, codec.publish("a/b/c/d/e/f/g/h/i/j", "deep", qos=1, packet_id=1)),
    ]


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for name, conversation in seeds():
        (out / name).write_bytes(frames(conversation))


if __name__ == "__main__":
    main()
