#!/bin/bash
# deploy/slurm/train.sbatch under a real Slurm: Debian's slurmctld, slurmd and munged, started by
# this script under its own temporary directory (a generated munge key, a one-node configuration
# on free ports, no cgroups, no accounting), as root:
#  1. sbatch runs train.sbatch (IMAGE=none: dl-launch from PATH, no container) on a Fashion-MNIST
#     subset; `scancel --signal=TERM` mid-epoch: dl-launch forwards it, dl-train saves last.pt with
#     its position and exits 143, which is the job's exit code;
#  2. `scontrol requeue` starts the same job again: train.sbatch adds --resume, dl-train goes on
#     at the step after the saved one and ends; the job completes with exit 0 after 1 restart;
#  3. the final weights equal (bitwise, torch.equal) those of the same run never interrupted.
# Prints what Slurm and the job said at each stage.
#
#   tests/deploy/slurm_test.sh LAUNCHER_DIR [PYTHON]
#     LAUNCHER_DIR: the folder of dl-launch (dl-train in ../trainer); PYTHON: one with torch
#     (default /usr/bin/python3, Debian's python3-torch)
#
# Exit codes: 0 passed, 1 a check failed, 77 skipped (not root, Slurm or munge not installed,
# dl-train not built, no Fashion-MNIST or no python3 torch).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
launcher_dir=$(cd "${1:?usage: slurm_test.sh LAUNCHER_DIR}" && pwd)
trainer_dir=$(cd "$launcher_dir/../trainer" && pwd)
python=${2:-/usr/bin/python3}
skip() { echo "SKIPPED: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "slurmd and slurmctld are started as root here (run as root)"
for tool in slurmctld slurmd sbatch scontrol scancel munged mungekey; do
  command -v "$tool" >/dev/null || skip "$tool not installed (apt-get install slurmctld slurmd slurm-client munge; env/install-native.sh installs them)"
done
[ -x "$trainer_dir/dl-train" ] || skip "dl-train was not built (LibTorch missing)"
fashion=/usr/share/datasets/fashion-mnist
[ -f "$fashion/train-images-idx3-ubyte.gz" ] || skip "$fashion missing (apt-get install dataset-fashion-mnist)"
"$python" -c 'import torch' 2>/dev/null || skip "$python cannot import torch (apt-get install python3-torch)"

work=$(mktemp -d)
chmod 700 "$work"
export SLURM_CONF=$work/slurm.conf
cleanup() {
  scancel --full "${job:-0}" >/dev/null 2>&1 || true
  for pidfile in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    if [ -f "$pidfile" ]; then kill "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  sleep 0.5
  for pidfile in "$work/slurmd.pid" "$work/slurmctld.pid" "$work/munge/munged.pid"; do
    if [ -f "$pidfile" ]; then kill -KILL "$(cat "$pidfile")" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "slurm_test.sh: FAILED: $*" >&2
  for log in "$work"/log/*.log; do echo "--- $log" >&2; tail -n 15 "$log" >&2; done
  exit 1
}
step() { echo "--- $*"; }
free_port() { "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# Polls `condition` (a command) every 0.2 s for up to $2 seconds.
wait_until() {
  local what=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || fail "timed out after ${seconds} s waiting for $what"
    sleep 0.2
  done
}
job_field() { scontrol show job "$job" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1; }

step "a one-node Slurm under $work"
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/log"
chmod 700 "$work/munge"
mungekey -c -k "$work/munge/munge.key" -b 1024
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" --seed-file="$work/munge/seed"
node=$(hostname -s)
cat >"$SLURM_CONF" <<CONF
ClusterName=dltest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A requeued job waits for the old job credential to expire (120 s by default) before it starts.
AuthInfo=socket=$work/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobRequeue=1
KillWait=30
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
slurmctld -i
slurmd -N "$node"
node_idle() { sinfo -h -o %T 2>/dev/null | grep -qx idle; }
wait_until "the node to be idle (sinfo)" 30 node_idle
sinfo

ws=$work/ws
mkdir -p "$ws/data"
# Epochs of 400 batches (about 3 s each here): scancel's signal takes a second or two to reach
# dl-train, and a 40-batch epoch could end before it did (stop 43's CI: the signal landed at the
# epoch's boundary).
"$python" "$repo/bench/fashion_subset.py" "$fashion" "$ws/data" 6400 200
export PATH=$launcher_dir:$trainer_dir:$PATH
train_args=(--data data --device cpu --epochs 2 --limit-batches 400 --batch-size 16 --threads 1
  --workers 0 --monitor-every 0 --log-every 1 --seed 5 --checkpoint-every 0)

step "the same run never interrupted (dl-launch, no Slurm)"
(unset "${!SLURM_@}"; cd "$ws" && env -u SLURM_CONF dl-launch --workspace "$ws" --name ref "${train_args[@]}") \
  >"$work/ref.log" 2>&1 || fail "the reference run exited $?: $(tail -n 5 "$work/ref.log")"
tail -n 1 "$work/ref.log"

step "1. sbatch train.sbatch, then scancel --signal=TERM mid-epoch"
out=$work/job.out
job=$(cd "$ws" && IMAGE=none WORKSPACE=$ws sbatch --parsable --nodes=1 --ntasks-per-node=1 \
  --gpus-per-node=0 --cpus-per-task="$(nproc)" --time=30 --output="$out" \
  "$repo/deploy/slurm/train.sbatch" "${train_args[@]}")
echo "sbatch: job $job"
in_epoch() { grep -q "epoch 1/2 batch 10/400" "$out" 2>/dev/null; }
wait_until "job $job to train 10 batches" 120 in_epoch
scancel --signal=TERM "$job"
echo "scancel --signal=TERM $job"
job_ended() { case "$(job_field JobState)" in COMPLETED | FAILED | CANCELLED | TIMEOUT) return 0 ;; *) return 1 ;; esac; }
wait_until "job $job to end after the signal" 120 job_ended
echo "job $job: JobState=$(job_field JobState) ExitCode=$(job_field ExitCode)"
[ "$(job_field ExitCode)" = "143:0" ] || fail "the stopped job's exit code is $(job_field ExitCode), expected 143:0 (dl-launch's after SIGTERM)"
# "Terminated received in epoch E after B of 400 batches (step S): saved ..." -> "E B S"
read -r epoch after saved < <(sed -n 's/.*Terminated received in epoch \([0-9]*\) after \([0-9]*\) of 400 batches (step \([0-9]*\)): saved.*/\1 \2 \3/p' "$out" | head -1) || true
[ -n "$saved" ] || fail "dl-train did not say it saved last.pt at a step: $(tail -n 5 "$out")"
[ "$after" -gt 0 ] || fail "the signal reached dl-train at an epoch's boundary, not inside one: $(tail -n 5 "$out")"
run=$ws/runs/slurm-$job.0
[ -f "$run/last.pt" ] || fail "no $run/last.pt"
grep "Terminated received" "$out" | head -2

step "2. scontrol requeue: the job starts again and goes on at step $((saved + 1))"
scontrol requeue "$job"
requeued() { [ "$(job_field Restarts)" = 1 ] && job_ended; }
wait_until "the requeued job $job to end" 300 requeued
echo "job $job: JobState=$(job_field JobState) ExitCode=$(job_field ExitCode) Restarts=$(job_field Restarts)"
[ "$(job_field JobState)" = COMPLETED ] || fail "the requeued job ended $(job_field JobState) $(job_field ExitCode): $(tail -n 5 "$out")"
grep -q "continuing runs/slurm-$job.0 from its last.pt" "$out" || fail "train.sbatch did not continue the run"
grep -q "inside epoch $epoch at step $saved .*the epoch goes on at batch $((after + 1))," "$out" ||
  fail "dl-train did not go on at step $((saved + 1)): $(grep 'resumed from' "$out")"
grep -E "started again|resumed from|done:" "$out" | sed 's/^\[[0-9:]*\] //'

step "3. the weights against the uninterrupted run's"
"$python" - "$run/last.pt" "$ws/runs/ref/last.pt" <<'PY' || fail "the weights differ from the uninterrupted run's"
import sys, torch
a, b = (torch.load(p, map_location="cpu") for p in sys.argv[1:3])
assert a["extra"]["global_step"] == b["extra"]["global_step"] == 800, (a["extra"]["global_step"], b["extra"]["global_step"])
diff = [k for k in b["model_state_dict"] if not torch.equal(a["model_state_dict"][k], b["model_state_dict"][k])]
print(f"{len(b['model_state_dict'])} tensors, step {a['extra']['global_step']}: "
      f"{'all equal' if not diff else 'different: ' + ', '.join(diff)}")
sys.exit(1 if diff else 0)
PY
echo "slurm_test.sh: passed"
