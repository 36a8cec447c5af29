#!/usr/bin/env python3
"""Writes the seed corpora of fuzz_log_segment and fuzz_log_offsets: valid segment files and
offsets journals in the embedded log's on-disk format (src/adapters/embedded/log_format.h),
and damaged ones (torn tails, zero fill, flipped bytes, bad lengths, offsets out of order).
Segment seeds start with the target's mode byte (fuzz_log_segment.cpp).
Usage: make_corpus.py <log_segment-corpus-dir> <log_offsets-corpus-dir>"""

import os
import struct
import sys


def _table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


TABLE = _table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283  # RFC 3720 check value


def frame(body: bytes) -> bytes:
    return struct.pack("<II", len(body), crc32c(body)) + body


def record(offset: int, key: bytes, value: bytes, headers=(), ts: int = 1700000000000) -> bytes:
    body = struct.pack("<BBqqIII", 1, 0, offset, ts, len(key), len(value), len(headers))
    body += key + value
    for name, val in headers:
        body += struct.pack("<II", len(name), len(val)) + name + val
    return frame(body)


def records(first: int, count: int) -> bytes:
    return b"".join(record(first + i, b"k%d" % i, b"value-%d" % i) for i in range(count))


def journal_entry(kind: int, group: bytes, topic: bytes, partition: int, offset: int) -> bytes:
    body = struct.pack("<BHHiq", kind, len(group), len(topic), partition, offset) + group + topic
    return frame(body)


def flipped(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1:]


def segment_seeds():
    five = records(0, 5)
    return {
        # mode 0: active segment, scan only; mode 2: active segment, bad tail cut
        "seed_active_valid": b"\x00" + five,
        "seed_active_torn_tail": b"\x02" + five + record(5, b"k", b"torn")[:13],
        "seed_active_zero_tail": b"\x02" + five + b"\x00" * 64,
        "seed_active_headers": b"\x00"
        + record(0, b"key", b"v", [(b"h1", b"x"), (b"starling-origin", b"node-1")]),
        "seed_active_empty_key_value": b"\x00" + record(0, b"", b""),
        "seed_huge_length": b"\x02" + five + struct.pack("<II", 0x3FFFFFFF, 0) + b"abc",
        "seed_offsets_go_back": b"\x00" + record(5, b"a", b"b") + record(3, b"c", b"d"),
        "seed_bad_version": b"\x00" + frame(b"\x09" + records(0, 1)[9:]),
        # mode 1: closed segment followed by an active one (quarantine path)
        "seed_closed_valid": b"\x01" + records(0, 8),
        "seed_closed_flipped_middle": b"\x01" + flipped(records(0, 8), 100),
        "seed_closed_flipped_first_length": b"\x01" + flipped(records(0, 8), 1),
        "seed_closed_torn_tail": b"\x01" + records(0, 8) + b"\x10\x00",
        "seed_closed_past_next_base": b"\x01" + records(999998, 4),
        "seed_closed_empty": b"\x01",
    }


def journal_seeds():
    commits = (
        journal_entry(1, b"g", b"starling.msg.all", 0, 42)
        + journal_entry(1, b"g", b"starling.msg.all", 1, 7)
        + journal_entry(1, b"fuzz-group", b"fuzz-topic", 3, 9)
    )
    return {
        "seed_empty": b"",
        "seed_commits": commits,
        "seed_commit_then_forget": commits + journal_entry(2, b"", b"fuzz-topic", 0, 0),
        "seed_torn_tail": commits + journal_entry(1, b"g", b"t", 0, 1)[:11],
        "seed_unknown_kind": commits + journal_entry(7, b"g", b"t", 0, 1),
        "seed_length_mismatch": commits
        + frame(struct.pack("<BHHiq", 1, 200, 3, 0, 1) + b"g" + b"t"),
        "seed_flipped_crc": flipped(commits, 5),
        "seed_zero_tail": commits + b"\x00" * 32,
        "seed_negative_offset": journal_entry(1, b"g", b"t", -1, -5),
    }


def write(directory: str, seeds: dict) -> None:
    os.makedirs(directory, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(directory, name), "wb") as out:
            out.write(data)


if __name__ == "__main__":
    write(sys.argv[1], segment_seeds())
    write(sys.argv[2], journal_seeds())
