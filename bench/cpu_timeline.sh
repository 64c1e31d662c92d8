#!/usr/bin/env bash
# Where a long command's time goes on this machine: runs it, and every INTERVAL seconds records
# how busy the cores were (from /proc/stat: user+system, iowait, idle, as shares of all cores) and
# which of the suite's heavy checks were running then, so that a cold `.ci/run` shows which
# phases leave cores idle (waiting on the disk or the network) and which are bound by the CPU.
# Prints a summary per phase at the end (a phase: one set of heavy checks running together).
#
#   bench/cpu_timeline.sh [--interval SECONDS] [--csv FILE] -- COMMAND...
#
# Exit status: the command's.
set -euo pipefail

interval=10
csv=cpu-timeline.csv
while [ $# -gt 0 ]; do
  case $1 in
    --interval) interval=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "cpu_timeline.sh: unknown option $1 (usage: [--interval S] [--csv FILE] -- COMMAND...)" >&2
       exit 64 ;;
  esac
done
[ $# -gt 0 ] || { echo "cpu_timeline.sh: no command after --" >&2; exit 64; }

# The heavy checks, by the script each runs (tests/*/...), and the host's own build and tests.
# (One bracketed letter each: the pattern does not match the grep and pgrep that carry it.)
heavy='cuda_buil[d]\.sh|oldest_buil[d]\.sh|smoke_buil[d]\.sh|sanitizer_suit[e]\.sh (asan-core|tsan)|fuzz_ru[n]\.sh|doc_command[s]\.py|env/buil[d]\.sh|ctest --prese[t]'
running() {
  pgrep -af -- "$heavy" | grep -oE "$heavy" | sed -E 's/.*(cuda|oldest|smoke)_build.*/\1/; s/sanitizer_suite\.sh //;
    s/fuzz_run\.sh/fuzz/; s/doc_commands\.py/docs/; s|env/build\.sh|build|; s/ctest .*/ctest/' |
    sort -u | paste -sd+ -
}
cpu() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $6, $5}' /proc/stat; } # busy iowait idle

"$@" &
pid=$!
echo "seconds,busy,iowait,idle,running" >"$csv"
start=$SECONDS
read -r b0 w0 i0 < <(cpu)
while kill -0 "$pid" 2>/dev/null; do
  sleep "$interval" # a sampling period, not a wait for a result
  read -r b1 w1 i1 < <(cpu)
  total=$(((b1 - b0) + (w1 - w0) + (i1 - i0)))
  [ "$total" -gt 0 ] || total=1
  echo "$((SECONDS - start)),$((100 * (b1 - b0) / total)),$((100 * (w1 - w0) / total)),$((100 * (i1 - i0) / total)),$(running)" >>"$csv"
  b0=$b1 w0=$w1 i0=$i1
done
rc=0
wait "$pid" || rc=$?

# Per phase: its wall time and the cores' mean shares.
awk -F, 'NR > 1 {
    key = ($5 == "" ? "(none)" : $5)
    if (!(key in n)) order[++k] = key
    n[key]++; busy[key] += $2; wait[key] += $3; idle[key] += $4
  }
  END {
    printf "%-40s %8s %6s %7s %6s\n", "running", "seconds", "busy%", "iowait%", "idle%"
    for (j = 1; j <= k; j++) {
      key = order[j]
      printf "%-40s %8d %6.0f %7.0f %6.0f\n", key, n[key] * iv, busy[key] / n[key], wait[key] / n[key], idle[key] / n[key]
    }
  }' iv="$interval" "$csv"
exit "$rc"
