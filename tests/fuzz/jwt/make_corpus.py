#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_jwt: passwords (mode 0), header/payload pairs the target signs
itself (mode 1) and tokens with made-up signatures (mode 2); see fuzz_jwt.cpp.
Usage: make_corpus.py <corpus-dir>"""

import base64
import json
import os
import sys


def b64u(data: bytes) -> bytes:
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def j(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


HS256 = {"alg": "HS256", "typ": "JWT"}
FULL = {"sub": "dev-1", "exp": 4102444800, "role": "app", "pub": ["devices/dev-1/.*"],
        "sub_rules": "commands/.*"}

SEEDS = {
    "seed_password_three_parts": b"\x00" + b"a.b.c",
    "seed_password_plain": b"\x00" + b"hunter2",
    "seed_password_alg_none": b"\x00" + b64u(j({"alg": "none"})) + b"." + b64u(j(FULL)) + b".",
    "seed_password_bad_base64": b"\x00" + b"!!!.???.***",
    "seed_password_many_dots": b"\x00" + b"a.b.c.d.e",
    "seed_signed_full_claims": b"\x01" + j(HS256) + b"\x00" + j(FULL),
    "seed_signed_no_exp": b"\x01" + j(HS256) + b"\x00" + j({"sub": "dev-1"}),
    "seed_signed_expired": b"\x01" + j(HS256) + b"\x00" + j({"sub": "dev-1", "exp": 1}),
    "seed_signed_nbf_future": b"\x01" + j(HS256) + b"\x00"
    + j({"sub": "dev-1", "exp": 4102444800, "nbf": 4102444000}),
    "seed_signed_exp_string": b"\x01" + j(HS256) + b"\x00" + j({"sub": "dev-1", "exp": "x"}),
    "seed_signed_exp_huge": b"\x01" + j(HS256) + b"\x00" + j({"sub": "dev-1", "exp": 1e308}),
    "seed_signed_bad_rule": b"\x01" + j(HS256) + b"\x00"
    + j({"sub": "dev-1", "exp": 4102444800, "pub": ["(unclosed"], "sub_rules": 42}),
    "seed_signed_header_hs512": b"\x01" + j({"alg": "HS512"}) + b"\x00" + j(FULL),
    "seed_signed_header_rs256": b"\x01" + j({"alg": "RS256", "kid": "k1"}) + b"\x00" + j(FULL),
    "seed_signed_not_json": b"\x01" + b"{\"alg\":" + b"\x00" + b"[1,2,3]",
    "seed_forged_es256": b"\x02" + j({"alg": "ES256"}) + b"\x00" + j(FULL) + b"\x00" + b"\x01" * 64,
    "seed_forged_es512_short": b"\x02" + j({"alg": "ES512"}) + b"\x00" + j(FULL) + b"\x00" + b"\x02" * 10,
    "seed_forged_rs256": b"\x02" + j({"alg": "RS256", "kid": "x"}) + b"\x00" + j(FULL) + b"\x00"
    + b"\x03" * 256,
    "seed_forged_hs256": b"\x02" + j(HS256) + b"\x00" + j(FULL) + b"\x00" + b"\x04" * 32,
}

if __name__ == "__main__":
    os.makedirs(sys.argv[1], exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(sys.argv[1], name), "wb") as out:
            out.write(data)
