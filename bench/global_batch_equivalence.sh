#!/usr/bin/env bash
# --global-batch keeps the recipe (issue 37's must-show): N optimizer steps of the default CNN on
# Fashion-MNIST at global batch 256, run as one process without accumulation (dl-train --batch-size
# 256), and through dl-launch --global-batch 256 --lr-scaling linear with --batch-size 64 on 1 rank (4 micro-batches
# of 64) and on 2 ranks (2 of 64 each). Prints each run's relative weight difference to the first
# (||a - b|| / ||b|| over the model's tensors, read with Python's torch) and its wall time.
# Every process uses oneDNN's SSE4.1 kernels so that the comparison checks the arithmetic of the
# split, not the instruction set's rounding (as tests/integration/distributed_train_test.cpp).
#
#   bench/global_batch_equivalence.sh BUILD_DIR [STEPS]   (default 20 steps; /usr/bin/python3)
set -euo pipefail
build=$(cd "${1:?usage: global_batch_equivalence.sh BUILD_DIR [STEPS]}" && pwd)
steps=${2:-20}
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
export ONEDNN_MAX_CPU_ISA=SSE41
common=(--device cpu --threads 1 --workers 0 --monitor-every 0 --seed 5 --epochs 1
        --limit-batches "$steps" --clip-norm 0)
"$build/launcher/dl-launch" init "$ws/w" >/dev/null
t0=$(date +%s.%N)
DL_RUN_DIR=$ws/whole "$build/trainer/dl-train" "${common[@]}" --batch-size 256 >"$ws/whole.log" 2>&1
t1=$(date +%s.%N)
times=("$(echo "$t1 - $t0" | bc)")
for n in 1 2; do
  t0=$(date +%s.%N)
  "$build/launcher/dl-launch" --workspace "$ws/w" --trainer "$build/trainer/dl-train" \
    --name "g$n" --nproc-per-node "$n" --global-batch 256 --batch-size 64 --lr-scaling linear \
    "${common[@]}" \
    >"$ws/g$n.log" 2>&1 || { cat "$ws/g$n.log"; exit 1; }
  t1=$(date +%s.%N)
  times+=("$(echo "$t1 - $t0" | bc)")
  grep -m1 -o "batch [0-9]* in [0-9]* micro-batches of at most [0-9]*" "$ws/g$n.log"
done
/usr/bin/python3 - "$ws" "$steps" "${times[@]}" <<'PY'
import sys, torch
ws, steps, times = sys.argv[1], sys.argv[2], [float(t) for t in sys.argv[3:]]
def weights(p):
    return torch.load(p, map_location="cpu")["model_state_dict"]
ref = weights(f"{ws}/whole/last.pt")
def diff(p):
    w = weights(p)
    num = sum(float((w[k].double() - ref[k].double()).pow(2).sum()) for k in ref)
    den = sum(float(ref[k].double().pow(2).sum()) for k in ref)
    return (num / den) ** 0.5
print(f"{'run (global batch 256, ' + steps + ' steps)':<52}{'rel. diff':>12}{'wall s':>9}")
print(f"{'dl-train --batch-size 256 (no accumulation)':<52}{'-':>12}{times[0]:>9.1f}")
for n, t in zip((1, 2), times[1:]):
    label = f"dl-launch --global-batch 256 --batch-size 64, {n} rank" + ("s" if n > 1 else "")
    print(f"{label:<52}{diff(f'{ws}/w/runs/g{n}/last.pt'):>12.2e}{t:>9.1f}")
PY
