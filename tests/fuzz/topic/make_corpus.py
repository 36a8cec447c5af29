#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_topic: topic names, filters, shared subscriptions, UTF-8
edge cases, and filter NUL topic pairs for the matcher. Usage: make_corpus.py <corpus-dir>"""

import os
import sys

SEEDS = {
    "name_plain": b"sensors/1/temperature",
    "name_root": b"/",
    "name_empty_levels": b"a//b/",
    "name_sys": b"$SYS/broker/clients",
    "name_utf8": "gr\u00fc\u00df/\u20ac/\U0001F600".encode(),
    "name_long": b"x" * 300,
    "filter_hash": b"#",
    "filter_plus": b"+",
    "filter_mixed": b"sport/+/player1/#",
    "filter_plus_plus": b"+/+",
    "filter_bad_hash_middle": b"a/#/b",
    "filter_bad_plus_suffix": b"a/b+",
    "filter_bad_hash_suffix": b"a/b#",
    "shared_ok": b"$share/group/a/+/c",
    "shared_hash": b"$share/g/#",
    "shared_no_filter": b"$share/g",
    "shared_empty_group": b"$share//a",
    "shared_wild_group": b"$share/g+/a",
    "utf8_nul": b"a\x00",
    "utf8_surrogate": b"\xed\xa0\x80",
    "utf8_overlong": b"\xc0\xaf",
    "utf8_too_big": b"\xf4\x90\x80\x80",
    "utf8_truncated": b"abc\xe2\x82",
    "utf8_lone_continuation": b"\x80abc",
    "match_hash": b"a/#\x00a/b/c",
    "match_hash_parent": b"a/#\x00a",
    "match_plus": b"a/+/c\x00a/b/c",
    "match_plus_empty": b"a/+\x00a/",
    "match_plus_miss": b"+\x00/x",
    "match_dollar_hash": b"#\x00$SYS/x",
    "match_dollar_plus": b"+/x\x00$SYS/x",
    "match_dollar_explicit": b"$SYS/#\x00$SYS/x",
    "match_exact": b"a/b\x00a/b",
    "match_exact_miss": b"a/b\x00a/b/c",
    "match_case": b"A\x00a",
}


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(sys.argv[1], "seed_" + name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {sys.argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
