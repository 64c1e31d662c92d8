#!/usr/bin/env bash
# Validates docker-compose.yml without a Docker engine (Debian's docker-compose v1 parses and
# resolves it: `config -q`), checks that the services the README names are there, and that the
# resolved jobs keep their promises (GPU reservation, device, /dev/shm, ulimits, grace period).
#
#   tests/image/compose_check.sh [REPO]
#
# Exit codes: 0 valid, 1 invalid or a service missing, 77 skipped (docker-compose not installed).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
compose=$root/docker-compose.yml
if ! command -v docker-compose >/dev/null 2>&1; then
  echo "SKIPPED: docker-compose is not installed (apt-get install docker-compose; env/install-native.sh installs it)"
  exit 77
fi

if ! docker-compose --project-directory "$root" -f "$compose" config -q; then
  echo "compose_check.sh: $compose is not valid (docker-compose config)" >&2
  exit 1
fi
services=$(docker-compose --project-directory "$root" -f "$compose" config --services)
for service in train train-cpu plan shell test; do
  grep -qx "$service" <<<"$services" || { echo "compose_check.sh: no service '$service' in $compose" >&2; exit 1; }
done

# What the jobs promise, on the resolved file (docker-compose depends on PyYAML, so python3 has it):
# train reserves all GPUs and asks for cuda, train-cpu reserves none and asks for cpu, every job
# has a large /dev/shm, unlimited memlock, a 64 MB stack and time to save a checkpoint.
docker-compose --project-directory "$root" -f "$compose" config | python3 -c '
import re, sys, yaml
services = yaml.safe_load(sys.stdin)["services"]
problems = []
def gpus(s):
    devices = s.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
    return any(d.get("driver") == "nvidia" and d.get("count") == "all" and "gpu" in d.get("capabilities", []) for d in devices)
def seconds(text):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(text))
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0) if m else 0
if not gpus(services["train"]): problems.append("train does not reserve all GPUs (driver nvidia, count all, [gpu])")
if services["train"].get("environment", {}).get("DL_DEVICE") != "cuda": problems.append("train: DL_DEVICE is not cuda")
if gpus(services["train-cpu"]): problems.append("train-cpu reserves GPUs")
if services["train-cpu"].get("environment", {}).get("DL_DEVICE") != "cpu": problems.append("train-cpu: DL_DEVICE is not cpu")
for name in ("train", "train-cpu", "plan", "shell"):
    s = services[name]
    if "/root/workspace" not in " ".join(map(str, s.get("volumes", []))): problems.append(name + ": ./workspace is not mounted at /root/workspace")
    if not s.get("shm_size") and s.get("ipc") != "host": problems.append(name + ": no shm_size (Docker gives 64 MB)")
    limits = s.get("ulimits", {})
    if limits.get("memlock") != -1 or limits.get("stack") != 67108864: problems.append(name + ": ulimits memlock -1 and stack 67108864 expected")
    if seconds(s.get("stop_grace_period", "10s")) <= 30: problems.append(name + ": stop_grace_period not above dl-launch'"'"'s 30 s grace period")
if not (services["shell"].get("stdin_open") and services["shell"].get("tty")): problems.append("shell is not interactive (stdin_open, tty)")
for p in problems: print("compose_check.sh: " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
' || exit 1
echo "compose_check.sh: $compose is valid; services: $(tr '\n' ' ' <<<"$services")"
