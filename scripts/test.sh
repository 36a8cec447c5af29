#!/usr/bin/env bash
# Installs everything, builds every flavour the tests need and runs every test:
#   1. format check (clang-format, no drift allowed)
#   2. debug build with ASan + UBSan: unit, contract and fuzz-corpus-replay tests (ctest)
#   3. TSan build: the concurrency tests (ctest label "concurrency")
#   4. clang + libFuzzer build: each input-parser fuzz target runs for a bounded time (the two
#      whole-stack targets with STARLING_FUZZ_ALL=1: see scripts/fuzz.sh)
#   5. a few seconds of benchmark smoke (bench/run.sh --smoke) so the load generator keeps working
#   5b. deployment files validated without a container engine (scripts/validate-deploy.sh)
#   6. integration tests: the real starlingd (ASan build) driven by paho-mqtt and mosquitto clients,
#      and the web console in Debian's headless Chromium (Playwright)
# Kafka, Redis and PostgreSQL (scripts/services.sh) run for the whole run — the adapters' contract
# suites and the cluster tests find them through STARLING_TEST_{KAFKA,REDIS,POSTGRES} — and are
# stopped at the end.
# Ends with one line "N passed, M failed, K skipped" summing every runner.
#
# Environment: STARLING_FUZZ_SECONDS (default 20 per target), STARLING_SKIP_TSAN=1,
# STARLING_SKIP_FUZZ=1, STARLING_SKIP_DEPLOY=1 to shorten local runs; STARLING_FUZZ_ALL=1 to
# fuzz the whole-stack targets too.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
results="$root/build/test-results"
jobs="${STARLING_JOBS:-$(nproc)}"
failed_steps=()

started=$SECONDS
# Each step's header carries the minutes since the start, so a slow step shows in CI's log.
step() { echo; echo "=== $* ($(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s) ==="; }

step "install dependencies"
bash scripts/install-deps.sh || { echo "dependency installation failed"; exit 1; }
rm -rf "$results" && mkdir -p "$results"

# The deployment validators (helm is built from source: minutes of Go compilation) install in
# the background, at low priority, while the C++ flavours build; step 5b waits for them.
deploy_install_pid=""
if [[ "${STARLING_SKIP_DEPLOY:-0}" != 1 ]]; then
    mkdir -p build
    nice -n 10 bash scripts/validate-deploy.sh --install-only >build/validate-deploy-install.log 2>&1 &
    deploy_install_pid=$!
fi

step "services (Apache Kafka, Redis, PostgreSQL on loopback)"
# A separate folder per run: a previous run's state never leaks into this one.
export STARLING_SERVICES_DIR="$root/build/services"
bash scripts/services.sh down --wipe >/dev/null 2>&1 || true
if bash scripts/services.sh up kafka redis postgres; then
    export STARLING_TEST_KAFKA=127.0.0.1:9092
    export STARLING_TEST_REDIS=127.0.0.1:6379
    export STARLING_TEST_POSTGRES=postgresql://starling:starling@127.0.0.1:5432/starling
else
    failed_steps+=("services")
fi
trap 'bash "$root/scripts/services.sh" down >/dev/null 2>&1 || true' EXIT

step "format check"
if ! bash scripts/format.sh --check; then
    failed_steps+=("format")
fi

step "debug build (ASan + UBSan)"
if cmake --preset debug >/dev/null && cmake --build --preset debug -j "$jobs"; then
    step "unit, contract and fuzz-replay tests (ASan + UBSan)"
    ctest --test-dir build/debug --output-on-failure -j "$jobs" -L 'unit|contract|fuzz' \
        --output-junit "$results/ctest-debug.xml" || failed_steps+=("ctest-debug")
else
    failed_steps+=("build-debug")
fi

if [[ "${STARLING_SKIP_TSAN:-0}" != 1 ]]; then
    step "TSan build and concurrency tests"
    if cmake --preset tsan >/dev/null && cmake --build --preset tsan -j "$jobs" \
            --target $(bash scripts/concurrency-targets.sh); then
        TSAN_OPTIONS="halt_on_error=1 suppressions=$root/tests/tsan.supp" \
            ctest --test-dir build/tsan --output-on-failure -j "$jobs" -L concurrency \
            --output-junit "$results/ctest-tsan.xml" || failed_steps+=("ctest-tsan")
    else
        failed_steps+=("build-tsan")
    fi
fi

if [[ "${STARLING_SKIP_FUZZ:-0}" != 1 ]]; then
    step "libFuzzer (clang), bounded time per target"
    if bash scripts/fuzz.sh "${STARLING_FUZZ_SECONDS:-20}" "$results"; then :; else
        failed_steps+=("fuzz")
    fi
fi

step "benchmark smoke run (starling-bench against the debug starlingd)"
if [[ -x build/debug/bench/starling-bench && -x build/debug/src/app/starlingd ]]; then
    ASAN_OPTIONS="detect_leaks=0" timeout 300 bash bench/run.sh --smoke --build-dir build/debug \
        --no-build || failed_steps+=("bench-smoke")
else
    echo "starling-bench or starlingd was not built"
    failed_steps+=("bench-smoke")
fi

step "deployment files (Dockerfile, Compose, Kubernetes manifests, Helm chart)"
if [[ "${STARLING_SKIP_DEPLOY:-0}" != 1 ]]; then
    if [[ -n "$deploy_install_pid" ]]; then
        wait "$deploy_install_pid" || true
        cat build/validate-deploy-install.log
    fi
    # --install again: anything the background run could not install is tried once more.
    timeout 1200 bash scripts/validate-deploy.sh --install || failed_steps+=("validate-deploy")
fi

step "integration tests (real starlingd, paho-mqtt, mosquitto clients)"
if [[ -x build/debug/src/app/starlingd ]]; then
    STARLINGD="$root/build/debug/src/app/starlingd" ASAN_OPTIONS="detect_leaks=0" \
        "$root/.venv/bin/python" -m pytest tests/integration -q -p no:cacheprovider \
        --junitxml="$results/integration.xml" || failed_steps+=("integration")
else
    echo "starlingd was not built"
    failed_steps+=("integration")
fi

step "summary"
"$root/.venv/bin/python" scripts/summarize-junit.py "$results"/*.xml
summary_rc=$?
if ((${#failed_steps[@]})); then
    echo "failed steps: ${failed_steps[*]}"
    echo "$(scripts/summarize-junit.py --line "$results"/*.xml 2>/dev/null || true)"
    exit 1
fi
exit $summary_rc
