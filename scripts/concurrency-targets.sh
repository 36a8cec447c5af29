#!/usr/bin/env bash
# Prints the test executables that carry the "concurrency" label, so the TSan build compiles
# only those. A test file declares the label in its CMakeLists.txt (starling_test ... LABELS
# concurrency); this finds them by that declaration.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
grep -rl --include=CMakeLists.txt 'concurrency' tests | while read -r f; do
    awk '/starling_test\(/{name=$0; sub(/.*starling_test\(/,"",name); sub(/[ )].*/,"",name)} /LABELS/ && /concurrency/{print name}' "$f"
done | sort -u | tr '\n' ' '
