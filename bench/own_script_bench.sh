#!/usr/bin/env bash
# The tutorial's table, redone by dl-launch on a user's own script: by default the workspace
# template's python/train.py (the OptimizedTrainer on dl_plan, with validation and checkpoints),
# or with --script own the bare adaptation bench/own_script/optimized_trainer.py, on a JPEG
# ImageFolder of photo-sized images (sides 300-1000 px, bench/make_jpeg_set), crop 128, the small
# CNN, batch 64: one epoch each at 0 workers, at the rule of thumb (usable cores - 2, at least 1)
# and at the count dl-launch measured, runs alternated (ABC, then CBA) in one sitting; medians of
# epoch time and data wait. Also what the measuring costs: the calibration's probes and seconds
# cold (--retune), and the cached start.
#
#   bench/own_script_bench.sh [--script template|own] [--repeat N] [--per-class N]
#                             [--python PATH] [--keep DIR]
#
# Prints a markdown table (bench/RESULTS.md keeps the figures).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
build="$repo/build/release"
repeat=3
per_class=100
python=/usr/bin/python3
keep=""
which=template
while [ $# -gt 0 ]; do
  case "$1" in
    --repeat) repeat=$2; shift ;;
    --per-class) per_class=$2; shift ;;
    --python) python=$2; shift ;;
    --keep) keep=$2; shift ;;
    --script) which=$2; shift ;;
    *) echo "own_script_bench: unknown option '$1'" >&2; exit 64 ;;
  esac
  shift
done
for tool in launcher/dl-launch bench/make_jpeg_set; do
  [ -x "$build/$tool" ] || { echo "own_script_bench: $build/$tool not built (env/build.sh)" >&2; exit 69; }
done

work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
data="$work/jpegs"
[ -d "$data/train" ] || "$build/bench/make_jpeg_set" --out "$data" --per-class "$per_class" --sides 300-1000 >&2
ws="$work/ws-$which"
launch=("$build/launcher/dl-launch" --workspace "$ws")
case "$which" in
  template)
    # As a user has it: `dl-launch init`, then the template's trainer on the photos. dl-launch
    # puts its dl_plan on PYTHONPATH.
    [ -d "$ws" ] || "$build/launcher/dl-launch" init "$ws" >/dev/null
    script=(-- "$python" python/train.py --data "$data/train" --model cnn --image-size 128
            --epochs 1 --log-every 0 --json)
    what="the template's python/train.py" ;;
  own)
    mkdir -p "$ws"
    cp "$here/own_script/optimized_trainer.py" "$ws/"
    export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
    script=(-- "$python" optimized_trainer.py --data "$data/train")
    what="optimized_trainer.py" ;;
  *) echo "own_script_bench: --script $which: expected template or own" >&2; exit 64 ;;
esac

# Milliseconds a command takes; its output in $work/last.out and last.err.
ms_of() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >"$work/last.out" 2>"$work/last.err"
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

# The calibration, cold and cached.
cold=$(ms_of "${launch[@]}" --dry-run --retune --json "${script[@]}")
read -r measured probes trials < <("$python" - "$work/last.out" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["script_probes"]
t = sorted(p["worker_trials"], key=lambda t: t["workers"])
print(p["workers"], len(t), ",".join(f"{x['workers']}->{x['samples_per_second']:.0f}" for x in t))
PY
)
cached=$(ms_of "${launch[@]}" --dry-run "${script[@]}")
grep -q "workers from the cache" "$work/last.err" || { echo "own_script_bench: the second start did not read the cache" >&2; exit 1; }
cores=$("$python" -c 'import os; print(len(os.sched_getaffinity(0)))')
rule=$(( cores - 2 > 1 ? cores - 2 : 1 ))

# One epoch at W workers through dl-launch (its plan sets the threads for W), a run of its own
# (the template refuses a fresh start over checkpoints); its JSON line.
epoch() {
  "${launch[@]}" --name "w$1-r$2" --overwrite --workers "$1" "${script[@]}" 2>/dev/null |
    grep '^{"epoch' | tail -1
}
: >"$work/rows"
order=(0 "$rule" "$measured")
for ((r = 1; r <= repeat; r++)); do
  list=("${order[@]}")
  [ $((r % 2)) -eq 0 ] && list=("${order[2]}" "${order[1]}" "${order[0]}")
  for w in "${list[@]}"; do
    echo "$w $(epoch "$w" "$r")" >>"$work/rows"
    echo "run $r: $w workers done" >&2
  done
done

"$python" - "$work/rows" "$measured" "$rule" "$cold" "$cached" "$probes" "$trials" "$cores" "$per_class" "$what" <<'PY'
import json, statistics, sys
rows, measured, rule, cold, cached, probes, trials, cores, per_class, what = sys.argv[1:]
runs = {}
for line in open(rows):
    w, _, js = line.partition(" ")
    if js.strip():
        runs.setdefault(int(w), []).append(json.loads(js))
print(f"{what}, {10 * int(per_class)} JPEGs of 300-1000 px, crop 128, small CNN, batch 64, "
      f"{cores} cores; medians of {min(len(v) for v in runs.values())} runs, alternated")
print()
print("| workers | chosen by | epoch s | data wait s | wait % | samples/s |")
print("|---|---|---|---|---|---|")
base = None
for w, who in ((0, "none"), (int(rule), "rule of thumb"), (int(measured), "dl-launch measured")):
    r = runs[w]
    e = statistics.median(x["epoch_seconds"] for x in r)
    base = base or e
    print(f"| {w} | {who} | {e:.2f} ({e / base:.2f}x) | "
          f"{statistics.median(x['data_wait_seconds'] for x in r):.2f} | "
          f"{statistics.median(x['data_wait_percent'] for x in r):.1f} | "
          f"{statistics.median(x['samples_per_second'] for x in r):.0f} |")
print()
print(f"calibration: {probes} loader probes ({trials} samples/s), {int(cold) / 1000:.1f} s cold "
      f"(--retune); cached start {int(cached) / 1000:.2f} s")
PY
