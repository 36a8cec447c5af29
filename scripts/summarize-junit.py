#!/usr/bin/env python3
"""Sums JUnit XML reports (ctest, pytest, fuzz) into one closing line: "N passed, M failed, K skipped".

Exit status 1 when any test failed or errored, or when no test ran at all.
"""
import sys
import xml.etree.ElementTree as ET


def count(path):
    passed = failed = skipped = 0
    try:
        tree = ET.parse(path)
    except (ET.ParseError, OSError) as e:
        print(f"summarize: cannot read {path}: {e}", file=sys.stderr)
        return 0, 1, 0
    for case in tree.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None or case.get("status") in ("notrun", "disabled"):
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(argv):
    line_only = "--line" in argv
    paths = [a for a in argv if not a.startswith("--")]
    total = [0, 0, 0]
    for p in paths:
        c = count(p)
        if not line_only:
            print(f"  {p.rsplit('/', 1)[-1]}: {c[0]} passed, {c[1]} failed, {c[2]} skipped")
        total = [t + x for t, x in zip(total, c)]
    print(f"{total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] or total[0] == 0 else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
