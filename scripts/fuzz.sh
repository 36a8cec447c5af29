#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (preset "fuzz") and fuzzes each one for a bounded time,
# starting from its committed seed corpus (tests/fuzz/<target>/corpus). New inputs go to a
# scratch corpus under build/, never into the repository. Writes a JUnit report (one test case
# per target) to the results directory given as $2.
#   scripts/fuzz.sh [seconds-per-target] [results-dir]
#
# Which targets: by default the input parsers (MQTT decoder, topics, PROXY protocol, WebSocket
# upgrade, JWT, the embedded log's segments and offsets), which build in minutes. The two
# targets that link the whole broker or HTTP stack (broker_node, http_api) take most of the
# clang build (over ten minutes on two cores), so they are fuzzed only with STARLING_FUZZ_ALL=1;
# their committed corpora still replay in every CI run (ctest label "fuzz", ASan + UBSan).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-30}"
results="${2:-build/test-results}"
mkdir -p "$results"
report="$results/fuzz.xml"

whole_stack_targets="broker_node http_api"
targets=()
for dir in tests/fuzz/*/; do
    target="$(basename "$dir")"
    if [[ "${STARLING_FUZZ_ALL:-0}" != 1 && " $whole_stack_targets " == *" $target "* ]]; then
        echo "skipping ${target} (whole-stack target: STARLING_FUZZ_ALL=1 fuzzes it)"
        continue
    fi
    targets+=("$target")
done

if ! cmake --preset fuzz >/dev/null || ! cmake --build --preset fuzz -j "$(nproc)" \
        --target "${targets[@]/#/fuzz_}"; then
    echo "fuzz build failed"
    echo '<testsuite name="fuzz"><testcase name="build"><failure message="fuzz build failed"/></testcase></testsuite>' >"$report"
    exit 1
fi

status=0
cases=""
for target in "${targets[@]}"; do
    dir="tests/fuzz/${target}/"
    bin="$(find build/fuzz -type f -name "fuzz_${target}" -perm -u+x | head -n1)"
    if [[ -z "$bin" ]]; then
        cases+="<testcase name=\"${target}\"><failure message=\"binary missing\"/></testcase>"
        status=1
        continue
    fi
    scratch="build/fuzz/corpus-${target}"
    mkdir -p "$scratch"
    log="build/fuzz/${target}.log"
    echo "fuzzing ${target} for ${seconds}s"
    if "$bin" -max_total_time="$seconds" -print_final_stats=1 "$scratch" "${dir}corpus" >"$log" 2>&1; then
        execs="$(grep -ao 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')"  # -a: the log holds raw input bytes
        echo "  ${target}: ${execs:-?} executions, no crash"
        cases+="<testcase name=\"${target}\" classname=\"fuzz\"><system-out>${execs:-0} executions</system-out></testcase>"
    else
        echo "  ${target}: CRASH — see $log"
        tail -n 40 "$log"
        cases+="<testcase name=\"${target}\" classname=\"fuzz\"><failure message=\"crash\"/></testcase>"
        status=1
    fi
done
echo "<testsuite name=\"fuzz\">${cases}</testsuite>" >"$report"
exit $status
