#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine (Debian's docker-compose v1 parses and
# resolves it: `config -q`), checks that the services the README names are there, that the
# resolved jobs keep their promises (GPU reservation where it belongs and none where it must not
# be, device, /dev/shm, ulimits, grace period), and that the DL_* pass-through list holds every
# setting of the registry but the few named below, each with its reason.
#
#   tests/image/compose_check.sh [REPO] [DL_LAUNCH]
#
# DL_LAUNCH is the built dl-launch (CMake passes $<TARGET_FILE:dl-launch>; by hand the default is
# REPO/build/release/launcher/dl-launch). The registry's names come from its --help: the options
# of its "... settings" sections are settings::launch() and settings::train(), the very registry
# whose keys DL_* variables map to (settings::env_to_key), as compiled. Reading core/settings.cpp
# instead would tie the check to how that source is laid out (one `("name", po::value...)` per
# line, every setting in that one file), which a reformat or a setting added elsewhere breaks
# silently; the binary is there whenever ctest runs (dl-launch builds even without LibTorch).
#
# Exit codes: 0 valid, 1 invalid, a service or a setting missing, 77 skipped (docker-compose not
# installed; the pass-through list is still checked first when python3 has PyYAML).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
dl_launch=${2:-$root/build/release/launcher/dl-launch}
compose=$root/docker-compose.yml
me=compose_check.sh

# The settings a user may not pass through compose, each with why; docker-compose.yml's comment
# above x-dl-environment must name each too (checked below), so the file tells its reader.
declare -A excluded=(
  [DL_WORKSPACE]="the container's workspace is fixed: ./workspace mounted at /root/workspace"
  [DL_NVML_LIBRARY]="a host path; the NVIDIA runtime puts libnvidia-ml.so.1 where the default finds it"
  [DL_TRAINER]="a host's trainer path is not in the image; a program of your own goes after --"
  [DL_PROBE_BATCH]="internal: the batch-size search's probes get --probe-batch; it would turn a run into a probe"
)

# The calling shell's DL_* variables would change the resolved file (train's DL_DEVICE, say).
while read -r var; do unset "$var"; done < <(compgen -e | grep '^DL_' || true)

# The registry, from dl-launch --help.
if [[ ! -x $dl_launch ]]; then
  echo "$me: dl-launch not found at $dl_launch (build it, or give its path as the second argument)" >&2
  exit 1
fi
if ! help=$("$dl_launch" --help); then
  echo "$me: $dl_launch --help failed" >&2
  exit 1
fi
registry=$(awk '
  /^[^ ].*:$/ { in_settings = ($0 ~ / settings/) }   # a section heading: "Launch settings:"
  in_settings && match($0, /^  --[a-z0-9][a-z0-9-]*/) {
    name = toupper(substr($0, RSTART + 4, RLENGTH - 4)); gsub("-", "_", name); print "DL_" name
  }' <<<"$help" | sort -u)
# A help whose layout changed must not pass as "no settings, none missing".
if (($(wc -l <<<"$registry") < 20)) || ! grep -qx DL_EPOCHS <<<"$registry"; then
  echo "$me: could not read the settings from $dl_launch --help (found: $(tr '\n' ' ' <<<"$registry"))" >&2
  exit 1
fi
for var in "${!excluded[@]}"; do
  if ! grep -qx "$var" <<<"$registry"; then
    echo "$me: $var is excluded here but is no setting of dl-launch --help any more: drop it from the exclusions" >&2
    exit 1
  fi
done
exclusions=$(for var in "${!excluded[@]}"; do printf '%s\t%s\n' "$var" "${excluded[$var]}"; done)
export DL_CHECK_REGISTRY=$registry DL_CHECK_EXCLUDED=$exclusions

# The pass-through list against the registry, on the file as written (PyYAML resolves the anchor).
if python3 -c 'import yaml' 2>/dev/null; then
  python3 - "$compose" <<'EOF' || exit 1
import os, re, sys, yaml
path = sys.argv[1]
text = open(path).read()
try:
    listed = set((yaml.safe_load(text).get("x-dl-environment") or {}).keys())
except yaml.YAMLError as e:
    sys.exit(f"compose_check.sh: {path} is not valid YAML: {' '.join(str(e).split())}")
registry = set(os.environ["DL_CHECK_REGISTRY"].split())
excluded = dict(line.split("\t", 1) for line in os.environ["DL_CHECK_EXCLUDED"].splitlines())
comments = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
problems = []
for var in sorted(registry - listed - set(excluded)):
    problems.append(f"{var} is a setting (dl-launch --help) but not in x-dl-environment: add it "
                    f"to the list in docker-compose.yml, or to this script's exclusions with the reason")
for var in sorted(listed - registry):
    problems.append(f"x-dl-environment lists {var}, which is no setting of dl-launch --help "
                    "(a typo, or a setting that is gone)")
for var in sorted(listed & set(excluded)):
    problems.append(f"x-dl-environment lists {var}, which must not be passed: {excluded[var]}")
for var in sorted(excluded):
    if not re.search(rf"\b{var}\b", comments):
        problems.append(f"{var} is not passed, but no comment in docker-compose.yml says so and why")
for p in problems:
    print(f"compose_check.sh: {p}", file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
fi

if ! command -v docker-compose >/dev/null 2>&1; then
  echo "SKIPPED: docker-compose is not installed (apt-get install docker-compose; env/install-native.sh installs it)"
  exit 77
fi

if ! docker-compose --project-directory "$root" -f "$compose" config -q; then
  echo "$me: $compose is not valid (docker-compose config)" >&2
  exit 1
fi
services=$(docker-compose --project-directory "$root" -f "$compose" config --services)
for service in train train-cpu plan plan-gpu shell shell-cpu test; do
  grep -qx "$service" <<<"$services" || { echo "$me: no service '$service' in $compose" >&2; exit 1; }
done

# What the jobs promise, on the resolved file (docker-compose depends on PyYAML, so python3 has it):
# train, plan-gpu and shell reserve all GPUs (train and plan-gpu ask for cuda); train-cpu, plan,
# shell-cpu and test reserve none, so they start without the NVIDIA runtime (train-cpu asks for
# cpu); every job has a large /dev/shm, unlimited memlock, a 64 MB stack and time to save a
# checkpoint.
resolved=$(mktemp)
trap 'rm -f "$resolved"' EXIT
docker-compose --project-directory "$root" -f "$compose" config >"$resolved"
python3 - "$resolved" <<'EOF' || exit 1
import re, sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
problems = []
def devices(s):
    return s.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
def gpus(s):
    return any(d.get("driver") == "nvidia" and d.get("count") == "all" and "gpu" in d.get("capabilities", []) for d in devices(s))
def seconds(text):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(text))
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0) if m else 0
for name in ("train", "plan-gpu", "shell"):
    if not gpus(services[name]): problems.append(name + " does not reserve all GPUs (driver nvidia, count all, [gpu])")
for name in ("train-cpu", "plan", "shell-cpu", "test"):
    if devices(services[name]): problems.append(name + " reserves devices (deploy.resources.reservations.devices): it would fail without the NVIDIA runtime")
for name in ("train", "plan-gpu"):
    if services[name].get("environment", {}).get("DL_DEVICE") != "cuda": problems.append(name + ": DL_DEVICE is not cuda")
if services["train-cpu"].get("environment", {}).get("DL_DEVICE") != "cpu": problems.append("train-cpu: DL_DEVICE is not cpu")
if services["plan"].get("environment", {}).get("DL_DEVICE") is not None: problems.append("plan: DL_DEVICE is set (the dry run should plan for what the container sees)")
for name in ("train", "train-cpu", "plan", "plan-gpu", "shell", "shell-cpu"):
    s = services[name]
    if "/root/workspace" not in " ".join(map(str, s.get("volumes", []))): problems.append(name + ": ./workspace is not mounted at /root/workspace")
    if not s.get("shm_size") and s.get("ipc") != "host": problems.append(name + ": no shm_size (Docker gives 64 MB)")
    limits = s.get("ulimits", {})
    if limits.get("memlock") != -1 or limits.get("stack") != 67108864: problems.append(name + ": ulimits memlock -1 and stack 67108864 expected")
    if seconds(s.get("stop_grace_period", "10s")) <= 30: problems.append(name + ": stop_grace_period not above dl-launch's 30 s grace period")
for name in ("shell", "shell-cpu"):
    if not (services[name].get("stdin_open") and services[name].get("tty")): problems.append(name + " is not interactive (stdin_open, tty)")
for p in problems: print("compose_check.sh: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF

# Every setting reaches every job that runs dl-launch, as `DL_RESUME=true docker compose up train`
# gives it: each registry variable is set to a marker in the calling shell, and the resolved file
# must pass each one on (but a fixed DL_DEVICE) and none of the exclusions; `test` takes none.
# The object store's variables that remote_store reads (trainer/data/s3_request.cpp) go with them.
store_vars="AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_REGION AWS_DEFAULT_REGION AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE AWS_MAX_ATTEMPTS"
export DL_CHECK_STORE_VARS=$store_vars
marked=()
while read -r var; do marked+=("$var=compose-check-marker"); done <<<"$registry"
for var in $store_vars; do marked+=("$var=compose-check-marker"); done
env "${marked[@]}" docker-compose --project-directory "$root" -f "$compose" config >"$resolved"
python3 - "$resolved" <<'EOF' || exit 1
import os, sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
registry = os.environ["DL_CHECK_REGISTRY"].split()
excluded = dict(line.split("\t", 1) for line in os.environ["DL_CHECK_EXCLUDED"].splitlines())
fixed = {("train-cpu", "DL_DEVICE")}  # DL_DEVICE: cpu, whatever the shell says
problems = []
for name in ("train", "train-cpu", "plan", "plan-gpu", "shell", "shell-cpu"):
    env = services[name].get("environment") or {}
    for var in registry:
        if var in excluded and var in env:
            problems.append(f"{name} passes {var} on, which it must not: {excluded[var]}")
    lost = [v for v in registry + os.environ["DL_CHECK_STORE_VARS"].split()
            if v not in excluded and (name, v) not in fixed and env.get(v) != "compose-check-marker"]
    if lost:
        problems.append(f"{name} does not pass on from the calling shell: {', '.join(lost)} "
                        f"(`{lost[0]}=... docker compose up {name}` would not reach dl-launch)")
leaked = sorted(v for v in (services["test"].get("environment") or {}) if v.startswith(("DL_", "AWS_")))
if leaked: problems.append("test takes the calling shell's " + ", ".join(leaked) + " (the suite decides its own)")
for p in problems: print("compose_check.sh: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
echo "$me: $compose is valid; services: $(paste -sd ' ' <<<"$services"); $(wc -l <<<"$registry")" \
  "settings, all passed on but ${!excluded[*]}"
