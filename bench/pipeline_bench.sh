#!/usr/bin/env bash
# The data-pipeline benchmark, one command, one sitting, A and B alternating (ABC, then CBA):
#
#   1. Loader only: an ImageFolder of 256x256 JPEGs (bench/make_jpeg_set, from Fashion-MNIST),
#      RandomResizedCrop 224 + flip + normalize, batch 64: dl-train's loader (bench/loader_bench)
#      against torchvision's DataLoader (bench/reference/loader_reference.py) at equal worker
#      counts 0..cores, and the OpenCV decode-only ceiling with as many threads.
#      Targets: >= 2.0x torchvision, >= 0.8x the ceiling.
#   2. End to end: Fashion-MNIST, small CNN, batch 64, one epoch, dl-train against the PyTorch
#      reference (bench/epoch_bench.sh). Targets: <= 0.8x the reference's time, data wait <= 2%.
#   3. Workers and threads: dl-train's measured choice (--workers auto --threads auto) against the
#      cores-2 rule and every worker count 0..cores (compute gets the remaining cores, at least
#      one), on Fashion-MNIST (--limit-batches, a third of an epoch) and on the JPEG set (64x64).
#      Target: auto at least as fast as the rule everywhere.
#
# Usage: bench/pipeline_bench.sh [--repeat N] [--build DIR] [--python PATH] [--per-class N]
#                                [--parts "1 2 3"] [--quick] [--keep DIR]
#   --quick   part 2 trains 200 batches instead of the whole epoch.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
repeat=3
build="$repo/build/release"
python=/usr/bin/python3
per_class=200
parts="1 2 3"
quick=0
keep=""

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "pipeline_bench: $*" >&2; exit 64; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --repeat) [[ $# -ge 2 ]] || die "--repeat needs a number"; repeat="$2"; shift 2 ;;
    --build) [[ $# -ge 2 ]] || die "--build needs a directory"; build="$2"; shift 2 ;;
    --python) [[ $# -ge 2 ]] || die "--python needs a path"; python="$2"; shift 2 ;;
    --per-class) [[ $# -ge 2 ]] || die "--per-class needs a number"; per_class="$2"; shift 2 ;;
    --parts) [[ $# -ge 2 ]] || die "--parts needs a list, e.g. \"1 3\""; parts="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --keep) [[ $# -ge 2 ]] || die "--keep needs a directory"; keep="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat $repeat: expected a whole number >= 1"
[[ "$per_class" =~ ^[1-9][0-9]*$ ]] || die "--per-class $per_class: expected a whole number >= 1"
for tool in trainer/dl-train bench/loader_bench bench/make_jpeg_set; do
  [[ -x "$build/$tool" ]] || die "--build $build: no $tool (build it: cmake --build $build)"
done
"$python" -c 'import torch, torchvision' 2>/dev/null \
  || die "--python $python: cannot import torch and torchvision"

cores=$(nproc)
work="$(mktemp -d "${TMPDIR:-/tmp}/pipeline_bench.XXXXXX")"
cleanup() { [[ -n "$keep" ]] && { mkdir -p "$keep"; cp -r "$work"/. "$keep"/; }; rm -rf "$work"; }
trap cleanup EXIT
# Binaries copied once: a rebuild during the bench cannot mix two versions.
cp "$build/trainer/dl-train" "$build/bench/loader_bench" "$work/"
rows="$work/rows.tsv"
: >"$rows"
clean_env=(env)
while IFS= read -r name; do clean_env+=(-u "$name"); done < <(compgen -e | grep '^DL_' || true)

echo "pipeline_bench: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)" >&2
echo "pipeline_bench: $repeat repetition(s), load average at start $(cut -d' ' -f1-3 /proc/loadavg), $(git -C "$repo" describe --always --dirty 2>/dev/null || echo "no git")" >&2

jpegs="$work/jpegs"
if [[ " $parts " == *" 1 "* || " $parts " == *" 3 "* ]]; then
  "$build/bench/make_jpeg_set" --out "$jpegs" --per-class "$per_class" >&2
fi

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
value() { awk -F'\t' -v a="$1" -v b="$2" -v c="$3" '$1 == a && $2 == b && $3 == c { print $4 }' "$rows" | median; }

# ---- 1. loader only -------------------------------------------------------------------------
if [[ " $parts " == *" 1 "* ]]; then
  echo "== 1. loader only ($(( per_class * 10 )) JPEGs, RandomResizedCrop 224 + flip + normalize, batch 64)" >&2
  run_loader() {  # kind workers
    case "$1" in
      dl) "$work/loader_bench" --data "$jpegs/train" --mode loader --workers "$2" ;;
      torchvision) "${clean_env[@]}" "$python" "$here/reference/loader_reference.py" --data "$jpegs/train" --workers "$2" ;;
      decode) "$work/loader_bench" --data "$jpegs/train" --mode decode --workers "$2" ;;
    esac | awk '/^images_per_second/ { print $2 }'
  }
  for ((rep = 1; rep <= repeat; ++rep)); do
    for ((w = 0; w <= cores; ++w)); do
      if (( rep % 2 )); then order=(dl torchvision decode); else order=(decode torchvision dl); fi
      for kind in "${order[@]}"; do
        rate=$(run_loader "$kind" "$w")
        [[ -n "$rate" ]] || die "part 1: $kind with $w workers printed no rate"
        printf 'loader\t%s\t%s\t%s\n' "$kind" "$w" "$rate" >>"$rows"
        echo "  rep $rep workers $w $kind: $rate images/s" >&2
      done
    done
  done
fi

# ---- 3. workers and threads -----------------------------------------------------------------
# One dl-train epoch; prints "samples_per_s wait_pct workers threads" (what it ran with).
run_train() {  # data_args... -- workers threads
  local args=() dir
  while [[ "$1" != "--" ]]; do args+=("$1"); shift; done
  shift
  dir="$(mktemp -d "$work/train.XXXXXX")"
  (cd "$dir" && "${clean_env[@]}" DL_RUN_DIR="$dir/run" "$work/dl-train" "${args[@]}" --epochs 1 \
     --batch-size 64 --workers "$1" --threads "$2" --monitor-every 0 --log-every 100000 \
     >"$dir/log" 2>&1) || { tail -n 20 "$dir/log" >&2; die "dl-train failed; log above"; }
  local chosen
  chosen=$(sed -n 's/.*model .* on [a-z0-9:]*, \([0-9]*\) threads, \([0-9]*\) workers,.*/\2 \1/p' "$dir/log" | head -n 1)
  awk -F, -v chosen="$chosen" '
    NR == 1 { for (i = 1; i <= NF; ++i) col[$i] = i }
    NR == 2 { printf "%s %s %s\n", $col["samples_per_second"], $col["data_wait_percent"], chosen }' \
    "$dir/run/metrics.csv"
}
if [[ " $parts " == *" 3 "* ]]; then
  echo "== 3. workers and threads (dl-train, $cores cores)" >&2
  rule_w=$(( cores - 2 > 1 ? cores - 2 : 1 ))
  rule_t=$(( cores - rule_w > 1 ? cores - rule_w : 1 ))
  configs=("auto auto" "$rule_w $rule_t")
  for ((w = 0; w <= cores; ++w)); do
    t=$(( cores - w > 1 ? cores - w : 1 ))
    [[ "$w $t" == "$rule_w $rule_t" ]] || configs+=("$w $t")
  done
  for set in fashion-mnist jpeg-64; do
    case "$set" in
      fashion-mnist) data_args=(--data /usr/share/datasets/fashion-mnist --limit-batches 300) ;;
      jpeg-64) data_args=(--data "$jpegs" --image-size 64) ;;
    esac
    for ((rep = 1; rep <= repeat; ++rep)); do
      if (( rep % 2 )); then order=("${configs[@]}"); else order=(); for ((i = ${#configs[@]} - 1; i >= 0; --i)); do order+=("${configs[i]}"); done; fi
      for cfg in "${order[@]}"; do
        read -r w t <<<"$cfg"
        read -r rate wait used_w used_t < <(run_train "${data_args[@]}" -- "$w" "$t")
        label="$w/$t"
        [[ "$cfg" == "auto auto" ]] && label="auto"
        [[ "$cfg" == "$rule_w $rule_t" ]] && label="rule"
        printf 'train-%s\t%s\tsamples_per_s\t%s\n' "$set" "$label" "$rate" >>"$rows"
        printf 'train-%s\t%s\twait\t%s\n' "$set" "$label" "$wait" >>"$rows"
        printf 'train-%s\t%s\tused\t%s\n' "$set" "$label" "$used_w/$used_t" >>"$rows"
        echo "  $set rep $rep $label: ${rate} samples/s, wait ${wait}%, ran with ${used_w} worker(s) / ${used_t} thread(s)" >&2
      done
    done
  done
fi

echo "pipeline_bench: load average at end $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# ---- the tables -----------------------------------------------------------------------------
echo
echo "Medians of $repeat run(s), alternating; $cores cores; $(date -u +%Y-%m-%d)."
if [[ " $parts " == *" 1 "* ]]; then
  echo
  echo "1. Loader only, $(( per_class * 10 )) JPEGs 256x256, RandomResizedCrop 224 + flip + normalize, batch 64 (images/s)"
  echo
  echo "| workers | dl-train loader | torchvision | ratio (>= 2.0) | decode-only ceiling | of ceiling (>= 0.8) |"
  echo "|---|---|---|---|---|---|"
  for ((w = 0; w <= cores; ++w)); do
    a=$(value loader dl "$w"); b=$(value loader torchvision "$w"); c=$(value loader decode "$w")
    awk -v w="$w" -v a="$a" -v b="$b" -v c="$c" 'BEGIN {
      r = a / b; f = a / c
      printf "| %d | %.0f | %.0f | %.2f %s | %.0f | %.2f %s |\n", w, a, b, r, (r >= 2.0 ? "ok" : "MISSED"), c, f, (f >= 0.8 ? "ok" : "MISSED") }'
  done
fi
if [[ " $parts " == *" 3 "* ]]; then
  for set in fashion-mnist jpeg-64; do
    echo
    case "$set" in
      fashion-mnist) echo "3. Workers and threads: Fashion-MNIST, small CNN, batch 64, 300 batches (w/t = workers/compute threads)" ;;
      jpeg-64) echo "3. Workers and threads: $(( per_class * 10 )) JPEGs at 64x64, small CNN, batch 64, one epoch" ;;
    esac
    echo
    echo "| configuration | ran with w/t | samples/s | data wait % | vs rule |"
    echo "|---|---|---|---|---|"
    rule=$(value "train-$set" rule samples_per_s)
    for cfg in "${configs[@]}"; do
      read -r w t <<<"$cfg"
      label="$w/$t"
      [[ "$cfg" == "auto auto" ]] && label="auto"
      [[ "$cfg" == "$rule_w $rule_t" ]] && label="rule"
      rate=$(value "train-$set" "$label" samples_per_s)
      wait=$(value "train-$set" "$label" wait)
      used=$(awk -F'\t' -v s="train-$set" -v l="$label" '$1 == s && $2 == l && $3 == "used" { print $4 }' "$rows" | sort | uniq -c | sort -rn | awk '{ printf "%s%s", sep, $2; sep = ", " }')
      name="$label"
      [[ "$label" == "auto" ]] && name="auto (measured)"
      [[ "$label" == "rule" ]] && name="cores-2 rule"
      awk -v n="$name" -v u="$used" -v r="$rate" -v wt="$wait" -v rule="$rule" -v l="$label" 'BEGIN {
        x = r / rule
        printf "| %s | %s | %.0f | %.2f | %.2fx%s |\n", n, u, r, wt, x, (l == "auto" ? (x >= 0.97 ? " ok" : " MISSED") : "") }'
    done
  done
fi

# ---- 2. end to end (its own table) ----------------------------------------------------------
if [[ " $parts " == *" 2 "* ]]; then
  echo
  echo "2. End to end: Fashion-MNIST, small CNN, batch 64, one epoch, dl-train vs the PyTorch reference"
  echo
  quick_args=()
  [[ $quick -eq 1 ]] && quick_args=(--quick)
  "$here/epoch_bench.sh" --repeat "$repeat" --workers "0 1" --dl-train "$build/trainer/dl-train" \
    --python "$python" --settle 0 "${quick_args[@]}"
fi
