#!/usr/bin/env bash
# The batch the search picks against the largest that fits and against batch 64, measured by
# training (issue 37's case: dl-train's embedded default, Fashion-MNIST and the small CNN on the
# CPU, under --memory-budget 600MiB). In one sitting:
#   1. the probe's own agreement: `dl-train --probe-batch N` run --spread times at two sizes, the
#      spread of step_seconds ((max - min) / median); --spread 0 leaves it out;
#   2. the search (`dl-launch --json --retune`): its curve (batch, peak, samples/s) and choice;
#   3. training at 64, the chosen batch and the largest that fits, --repeat rounds, the order
#      rotated each round, each run --samples samples (--limit-batches rounded up), samples/s
#      from metrics.csv; a table of medians and ratios against the chosen batch.
#
# Usage: bench/batch_objective_bench.sh [--budget 600MiB] [--repeat 3] [--samples 12000]
#                                       [--spread 5] [--build DIR] [--keep DIR] [-- dl-launch options]
# The dl-launch options may end with `-- python3 script.py ...`: the search and the runs are then
# the script's, through dl_plan (its metrics.csv in runs/<name>/ as dl-train's).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(dirname "$here")/build/release"
budget=600MiB
repeat=3
samples=12000
spread=5
keep=""
die() { echo "batch_objective_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --budget) budget="${2:?}"; shift 2 ;;
    --repeat) repeat="${2:?}"; shift 2 ;;
    --samples) samples="${2:?}"; shift 2 ;;
    --spread) spread="${2:?}"; shift 2 ;;
    --build) build="${2:?}"; shift 2 ;;
    --keep) keep="${2:?}"; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
extra=("$@")
launch=$build/launcher/dl-launch
train=$build/trainer/dl-train
[[ -x "$launch" && -x "$train" ]] || die "no dl-launch and dl-train in $build (env/build.sh release)"
ws=${keep:-$(mktemp -d)}
mkdir -p "$ws"
[[ -n "$keep" ]] || trap 'rm -rf "$ws"' EXIT

# A script after `--` imports dl_plan (and dl_loader) from this build.
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"

if ((spread > 0)); then
echo "## Probe agreement: dl-train --probe-batch N, $spread runs each"
echo
echo "| batch | step s (median) | min | max | spread | timed steps |"
echo "|---|---|---|---|---|---|"
for b in 32 256; do
  for _ in $(seq "$spread"); do
    (cd "$ws" && "$train" --probe-batch "$b" 2>/dev/null | tail -1)
  done | /usr/bin/python3 -c '
import json, statistics, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
s = sorted(r["step_seconds"] for r in rows)
m = statistics.median(s)
timed = ",".join(str(r.get("timed_steps", "?")) for r in rows)
print("| %d | %.4f | %.4f | %.4f | %.1f%% | %s |"
      % (rows[0]["batch"], m, s[0], s[-1], 100 * (s[-1] - s[0]) / m, timed))'
done
echo
fi

echo "## The search: dl-launch --memory-budget $budget --json --retune ${extra[*]}"
echo
t0=$SECONDS
"$launch" --workspace "$ws" --memory-budget "$budget" --retune --json "${extra[@]}" >"$ws/plan.json"
read -r chosen largest < <(/usr/bin/python3 - "$ws/plan.json" "$((SECONDS - t0))" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["batch_search"]
print("| batch | peak MiB | result | step s | samples/s |", file=sys.stderr)
print("|---|---|---|---|---|", file=sys.stderr)
for t in s["trials"]:
    res = "fits" if t["fits"] else ("out of memory" if t["out_of_memory"] else "over budget")
    print(f"| {t['batch']} | {t['peak_bytes'] / 2**20:.1f} | {res} | {t['step_seconds']:.4f} | "
          f"{t['samples_per_second']:.0f} |", file=sys.stderr)
print(f"\nchosen {s['batch']} ({s['objective']}): {s['why']}; {len(s['trials'])} probes in "
      f"{s['seconds']:.1f} s (wall {sys.argv[2]} s)\n", file=sys.stderr)
print(s["batch"], s["largest"])
PY
)

echo "## Training: samples/s from metrics.csv, $repeat rounds, order rotated, about $samples samples a run"
echo
sizes=(64 "$chosen" "$largest")
declare -A rates
for r in $(seq "$repeat"); do
  for i in 0 1 2; do
    b=${sizes[$(((i + r) % 3))]}
    limit=$(((samples + b - 1) / b))
    name=b$b-r$r
    "$launch" --workspace "$ws" --batch-size "$b" --epochs 1 --limit-batches "$limit" \
      --name "$name" --monitor-every 0 "${extra[@]}" >"$ws/$name.log" 2>&1 ||
      { tail -5 "$ws/$name.log" >&2; die "training at batch $b failed (log: $ws/$name.log)"; }
    rate=$(/usr/bin/python3 -c 'import csv,sys; print(list(csv.DictReader(open(sys.argv[1])))[-1]["samples_per_second"])' \
      "$ws/runs/$name/metrics.csv")
    rates[$b]+="$rate "
    echo "round $r: batch $b, $limit batches: $rate samples/s" >&2
  done
done
echo "| batch | role | samples/s (median) | runs | vs chosen |"
echo "|---|---|---|---|---|"
for role in "64:batch 64" "$chosen:chosen" "$largest:largest that fits"; do
  b=${role%%:*}
  /usr/bin/python3 -c '
import statistics, sys
b, role, runs, chosen = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split()], [float(x) for x in sys.argv[4].split()]
m = statistics.median(runs)
each = " ".join("%.0f" % x for x in runs)
print("| %s | %s | %.0f | %s | %.2fx |" % (b, role, m, each, m / statistics.median(chosen)))' \
    "$b" "${role#*:}" "${rates[$b]}" "${rates[$chosen]}"
done
