#!/usr/bin/env bash
# kill -9 against dl-train's checkpoints: a ResNet-50 run on a tiny Fashion-MNIST subset (every
# epoch: 1 step, 4 validation images, then best.pt and last.pt of about 280 MB each), killed N
# times and restarted with --resume after each kill. Odd kills land while a checkpoint is being
# written (the 1st, 2nd or 3rd write of the run: the script waits for a "<name>.pt.tmp.<pid>" to
# appear, then a random 0-300 ms more); even kills 0-3 s after a new last.pt is in place (the next
# epoch's start, step, validation or writes), so the run makes progress between kills. After every
# kill it checks, and prints one row:
#   - every *.pt in the run directory loads in Python's torch.load as dl-train's dict;
#   - no temporary file piles up: the killed process's own at most, and one of the run before when
#     the kill came before the start-up cleanup (the next restart removes them);
#   - the restart resumed from last.pt's epoch as it was before the restart.
# A last run with --resume trains one more epoch to its end: exit 0, no temporary file left.
# Ends with a verdict line; the exit status is 1 when any check failed.
#
# Usage: bench/kill_bench.sh [N (default 8)] [--dir DIR (default a new directory in /dev/shm, or
#        $TMPDIR)] [--dl-train PATH] [--python PATH] [--seed N] [--keep]
# The workspace and data live in DIR (about 1 GB at a time); --keep leaves them there.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
kills=8
dir=""
dl_train="$repo/build/release/trainer/dl-train"
python=/usr/bin/python3
seed=$$
keep=0

die() { echo "kill_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) [[ $# -ge 2 ]] || die "--dir needs a directory"; dir="$2"; shift 2 ;;
    --dl-train) [[ $# -ge 2 ]] || die "--dl-train needs a path"; dl_train="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --seed) [[ $# -ge 2 ]] || die "--seed needs a number"; seed="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) kills="$1"; shift ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[[ "$kills" =~ ^[1-9][0-9]*$ ]] || die "N $kills: expected a whole number >= 1"
[[ -x "$dl_train" ]] || die "$dl_train is not an executable (build it, or pass --dl-train)"
fashion=/usr/share/datasets/fashion-mnist
[[ -f "$fashion/train-images-idx3-ubyte.gz" ]] || die "$fashion missing (apt-get install dataset-fashion-mnist)"
"$python" -c 'import torch' 2>/dev/null || die "$python cannot import torch (apt-get install python3-torch)"

# Checkpoints are written to memory when /dev/shm has room: what a kill leaves on disk does not
# depend on where the page cache is flushed to, and 2 GB of writes per kill stay off the disk.
if [[ -z "$dir" ]]; then
  base="${TMPDIR:-/tmp}"
  if [[ -d /dev/shm && $(df -Pk /dev/shm | awk 'NR==2 {print $4}') -gt 2000000 ]]; then base=/dev/shm; fi
  dir="$(mktemp -d "$base/dl-kill.XXXXXX")"
fi
mkdir -p "$dir"
[[ $keep -eq 1 ]] || trap 'rm -rf "$dir"' EXIT
RANDOM=$seed
ws="$dir/ws"
run="$ws/runs/kill"
mkdir -p "$ws" "$dir/data"

# 16 training and 4 test images of Fashion-MNIST as raw IDX files.
"$python" "$here/fashion_subset.py" "$fashion" "$dir/data" 16 4

# Prints "<file>:<epoch>" for every checkpoint, or "<file>:BAD(<reason>)"; exit 1 if any is bad.
cat > "$dir/check.py" <<'EOF'
import glob, os, sys
import torch
bad = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.pt"))):
    name = os.path.basename(path)
    try:
        c = torch.load(path, map_location="cpu")
        assert type(c) is dict and {"model_state_dict", "optimizer_state_dict", "epoch"} <= set(c)
        assert len(c["model_state_dict"]) > 300, "not ResNet-50's state"
        print(f"{name}:{c['epoch']}", end=" ")
    except Exception as e:
        bad += 1
        print(f"{name}:BAD({str(e).splitlines()[0][:60]})", end=" ")
print()
sys.exit(1 if bad else 0)
EOF

common=(--data "$dir/data" --model resnet50 --threads 1 --workers 1 --monitor-every 0
        --batch-size 2 --limit-batches 1 --name kill)
temporaries() { find "$run" -maxdepth 1 -name '*.pt.tmp.*' -printf '%f\n' 2>/dev/null | sort | tr '\n' ' '; }
last_epoch() {
  [[ -f "$run/last.pt" ]] || { echo none; return; }
  "$python" -c 'import sys, torch; print(torch.load(sys.argv[1], map_location="cpu")["epoch"])' "$run/last.pt"
}

failures=0
fail() { echo "  FAIL: $*"; failures=$((failures + 1)); }
printf '%-4s %-36s %-8s %-26s %-34s %s\n' kill moment "resumed" "temporaries left" "checkpoints (file:epoch)" checks
start_all=$(date +%s)
for ((i = 1; i <= kills; i++)); do
  before=$(last_epoch)
  args=("${common[@]}" --epochs 1000)
  [[ "$before" != none ]] && args+=(--resume)
  (cd "$ws" && exec "$dl_train" "${args[@]}") > "$dir/run$i.log" 2>&1 &
  pid=$!
  if ((i % 2 == 1)); then
    # The 1st, 2nd or 3rd checkpoint write of this run (a temporary appearing), then a random
    # moment within it.
    writes=$((RANDOM % 3 + 1)); seen=0; present=0
    while ((seen < writes)) && kill -0 $pid 2>/dev/null; do
      if [[ -n "$(find "$run" -maxdepth 1 -name "*.pt.tmp.$pid" 2>/dev/null)" ]]; then
        ((present)) || seen=$((seen + 1)); present=1
      else
        present=0
      fi
      if ((seen < writes)); then sleep 0.02; fi
    done
    ms=$((RANDOM % 300))
    moment="${ms} ms into write $writes"
  else
    # A new last.pt in place (its inode changes with each rename), then 0-3 s: the next epoch's
    # start, step, validation or writes.
    old_inode=$(stat -c %i "$run/last.pt" 2>/dev/null || echo none)
    while [[ "$(stat -c %i "$run/last.pt" 2>/dev/null || echo none)" == "$old_inode" ]] && kill -0 $pid 2>/dev/null; do
      sleep 0.05
    done
    ms=$((RANDOM % 3000))
    moment="${ms} ms after new last.pt"
  fi
  sleep "$((ms / 1000)).$(printf '%03d' $((ms % 1000)))"
  writing=$(find "$run" -maxdepth 1 -name "*.pt.tmp.$pid" -printf '%f' 2>/dev/null | sed "s/\.tmp\.$pid//")
  kill -9 $pid 2>/dev/null || true
  wait $pid 2>/dev/null || true
  moment="$moment${writing:+ ($writing)}"

  left=$(temporaries)
  checks="ok"
  # A run killed before its start-up cleanup (it logs the data line right after) may leave the
  # one temporary of the writer before it; otherwise only its own.
  earlier=0
  for t in $left; do [[ "$t" == *".tmp.$pid" ]] || earlier=$((earlier + 1)); done
  if grep -q ' data: ' "$dir/run$i.log"; then allowed=0; else allowed=1; fi
  ((earlier <= allowed)) || { fail "kill $i: stale temporaries of earlier runs: $left"; checks=FAIL; }
  if ! loaded=$("$python" "$dir/check.py" "$run"); then fail "kill $i: a checkpoint does not load: $loaded"; checks=FAIL; fi
  resumed=$(grep -o 'resumed from .* after epoch [0-9]*' "$dir/run$i.log" | grep -o '[0-9]*$' || true)
  if [[ "$before" != none && "$resumed" != "" && "$resumed" != "$before" ]]; then
    fail "kill $i: resumed after epoch $resumed, last.pt held epoch $before"; checks=FAIL
  fi
  grep -q 'removed .* temporary file' "$dir/run$i.log" && resumed="${resumed:--}+clean"
  printf '%-4s %-36s %-8s %-26s %-34s %s\n' "$i" "$moment" "${resumed:--}" "${left:--}" "$loaded" "$checks"
done

# The last restart runs one more epoch to its end.
before=$(last_epoch)
args=("${common[@]}" --epochs $(( ${before/none/0} + 1 )))
[[ "$before" != none ]] && args+=(--resume)
set +e
(cd "$ws" && exec "$dl_train" "${args[@]}") > "$dir/final.log" 2>&1
code=$?
set -e
left=$(temporaries)
loaded=$("$python" "$dir/check.py" "$run") || fail "final: a checkpoint does not load: $loaded"
[[ $code -eq 0 ]] || fail "final run exited $code: $(tail -n 3 "$dir/final.log")"
[[ -z "$left" ]] || fail "final run left temporaries: $left"
after=$(last_epoch)
[[ "$after" == $(( ${before/none/0} + 1 )) ]] || fail "final run: last.pt epoch $after, expected $(( ${before/none/0} + 1 ))"
echo "final: resumed after epoch $before, exit $code, last.pt epoch $after, temporaries left: ${left:-none}; $loaded"
echo "verdict: $kills kills (seed $seed) in $(( $(date +%s) - start_all )) s, $failures failed check(s)$([[ $failures -eq 0 ]] && echo ': every checkpoint loaded, no temporary piled up, every restart resumed from last.pt')"
[[ $failures -eq 0 ]]
