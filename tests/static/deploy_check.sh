#!/usr/bin/env bash
# Checks deploy/: the Slurm batch script parses (bash -n, and shellcheck where installed), asks
# for one task per GPU and runs dl-launch under srun in the image; the Kubernetes manifest is a
# Kubeflow PyTorchJob (kubeflow.org/v1) with Master and Worker replicas whose pods run dl-launch
# with nvidia.com/gpu limits equal to nprocPerNode, a memory-backed /dev/shm and the workspace on
# a PersistentVolumeClaim that the file defines.
#
#   tests/static/deploy_check.sh [REPO]
#
# Exit codes: 0 fine, 1 a check failed, 77 skipped (python3 with PyYAML missing: python3-yaml).
set -euo pipefail

root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
sbatch=$root/deploy/slurm/train.sbatch
manifest=$root/deploy/kubernetes/pytorchjob.yaml
fail() { echo "deploy_check.sh: $*" >&2; exit 1; }

# --- The Slurm batch script ---
[ -f "$sbatch" ] || fail "$sbatch is missing"
bash -n "$sbatch" || fail "$sbatch does not parse (bash -n)"
if command -v shellcheck >/dev/null 2>&1; then
  shellcheck "$sbatch" || fail "$sbatch: shellcheck found problems"
else
  echo "deploy_check.sh: shellcheck not installed: only bash -n checked $sbatch"
fi
head -n 1 "$sbatch" | grep -qx '#!/bin/bash' || fail "$sbatch: the first line must be #!/bin/bash"
sbatch_value() { sed -n "s/^#SBATCH --$1=\\(.*\\)$/\\1/p" "$sbatch"; }
for option in job-name nodes ntasks-per-node gpus-per-node time; do
  [ -n "$(sbatch_value "$option")" ] || fail "$sbatch: no #SBATCH --$option line"
done
tasks=$(sbatch_value ntasks-per-node)
gpus=$(sbatch_value gpus-per-node)
[ "$tasks" = "$gpus" ] || fail "$sbatch: --ntasks-per-node $tasks != --gpus-per-node $gpus (one task per GPU)"
# #SBATCH lines count only before the first command.
first_command=$(grep -n -v -E '^(#|$)' "$sbatch" | head -n 1 | cut -d: -f1)
last_sbatch=$(grep -n '^#SBATCH' "$sbatch" | tail -n 1 | cut -d: -f1)
[ "$last_sbatch" -lt "$first_command" ] || fail "$sbatch: an #SBATCH line after the first command is ignored by sbatch"
# The step: srun, in the image, dl-launch on the mounted workspace.
step=$(sed -n '/^srun /,/[^\\]$/p' "$sbatch")
[ -n "$step" ] || fail "$sbatch: no srun step"
for part in '--container-image=' '--kill-on-bad-exit' 'dl-launch --workspace /root/workspace'; do
  grep -qF -- "$part" <<<"$step" || fail "$sbatch: the srun step lacks '$part'"
done

# --- The PyTorchJob ---
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "SKIPPED: python3 has no PyYAML (apt-get install python3-yaml; env/install-native.sh installs it)"
  exit 77
fi
python3 - "$manifest" <<'PY'
import sys
import yaml

path = sys.argv[1]
docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]

def fail(msg):
    sys.exit(f"deploy_check.sh: {path}: {msg}")

by_kind = {d.get("kind"): d for d in docs}
job = by_kind.get("PyTorchJob") or fail("no PyTorchJob document")
claim = by_kind.get("PersistentVolumeClaim") or fail("no PersistentVolumeClaim for the workspace")
if job.get("apiVersion") != "kubeflow.org/v1":
    fail(f"apiVersion {job.get('apiVersion')!r}, expected kubeflow.org/v1")
if "ReadWriteMany" not in claim["spec"]["accessModes"]:
    fail("the workspace claim must be ReadWriteMany: every pod mounts it")
spec = job["spec"]
nproc = str(spec.get("nprocPerNode", ""))
if not nproc.isdigit():
    fail(f"spec.nprocPerNode {nproc!r}: expected the GPUs per pod as a number in a string")
replicas = spec["pytorchReplicaSpecs"]
if set(replicas) != {"Master", "Worker"}:
    fail(f"replica specs {sorted(replicas)}, expected Master and Worker")
if replicas["Master"]["replicas"] != 1:
    fail("exactly one Master replica (it hosts rank 0)")
for role, r in replicas.items():
    if not isinstance(r.get("replicas"), int) or r["replicas"] < 1:
        fail(f"{role}: replicas must be a positive number")
    pod = r["template"]["spec"]
    containers = pod["containers"]
    if [c["name"] for c in containers] != ["pytorch"]:
        fail(f"{role}: one container named 'pytorch' (the operator's name)")
    c = containers[0]
    cmd = c.get("command", []) + c.get("args", [])
    if not cmd or cmd[0] != "dl-launch" or "--workspace" not in cmd:
        fail(f"{role}: the command must be dl-launch --workspace ..., got {cmd}")
    if str(c["resources"]["limits"].get("nvidia.com/gpu")) != nproc:
        fail(f"{role}: nvidia.com/gpu must equal nprocPerNode {nproc} (one process per GPU)")
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    workspace = cmd[cmd.index("--workspace") + 1]
    names = [n for n, p in mounts.items() if p == workspace]
    if not names or volumes[names[0]].get("persistentVolumeClaim", {}).get("claimName") != claim["metadata"]["name"]:
        fail(f"{role}: {workspace} must be the claim {claim['metadata']['name']}")
    shm = [n for n, p in mounts.items() if p == "/dev/shm"]
    if not shm or volumes[shm[0]].get("emptyDir", {}).get("medium") != "Memory":
        fail(f"{role}: /dev/shm must be an emptyDir with medium Memory")
print(f"deploy_check.sh: {path}: PyTorchJob with Master x1 and Worker x{replicas['Worker']['replicas']}, "
      f"{nproc} processes per pod")
PY
echo "deploy_check.sh: deploy/ is fine"
