#!/usr/bin/env bash
# Prints the time table of the last `make test`: the wall and CPU time of
# each stage (as hack/test-stages.sh recorded them) and, from go test's own
# "ok"/"FAIL" lines, the time of each test package with the share of its
# timeout it used. make test prints it at its end,
# `make test-times` again.
#
#   hack/test-times.sh [OUTPUT_DIR]   (default _output)
#
# TEST_TIMEOUT_MINUTES is go test's -timeout of every package (default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-_output}
stages=$out/test-times.tsv
[ -s "$stages" ] || { echo "no stage times in $stages: run make test first" >&2; exit 1; }

echo "make test, stage by stage (wall time; CPU time of all it ran, and the cores that kept busy; | marks stages run side by side):"
awk -F'\t' '
  {
    step = ($5 == "" ? NR : $5)
    if (!(step in wall)) order[++steps] = step
    if ($2 > wall[step]) wall[step] = $2
    n[step]++
    cpu = ($4 == "" ? "" : sprintf("%6.0fs cpu  %4.1f cores", $4, ($2 > 0 ? $4 / $2 : 0)))
    line[NR] = sprintf("%-16s %6ds  %s  %s", $1, $2, cpu, ($3 == 0 ? "ok" : "FAILED (exit " $3 ")"))
    of[NR] = step; cpus += $4
  }
  END {
    for (i = 1; i <= NR; i++) printf "  %s %s\n", (n[of[i]] > 1 ? "|" : " "), line[i]
    for (i = 1; i <= steps; i++) total += wall[order[i]]
    printf "    %-16s %6ds %6.0fs cpu  (%.1f minutes)\n", "total", total, cpus, total / 60
  }' "$stages"

echo
echo "test packages, slowest first (go test's own time; share of the package's timeout):"
for f in "$out"/test-*.log; do
  [ -e "$f" ] || continue
  stage=$(basename "$f" .log); stage=${stage#test-}
  awk -v stage="$stage" -v timeout="${TEST_TIMEOUT_MINUTES:-60}" '
    match($0, /^(ok|FAIL)[ \t]+[^ \t]+[ \t]+[0-9.]+s/) {
      split(substr($0, RSTART, RLENGTH), f, /[ \t]+/)
      secs = f[3]; sub(/s$/, "", secs)
      printf "%8.1f\t%3.0f%%\t%s\t%s%s\n", secs, 100 * secs / (timeout * 60), stage, f[2], (f[1] == "FAIL" ? "\tFAIL" : "")
    }' "$f"
done | sort -rn | head -${TEST_TIMES_TOP:-25} | awk -F'\t' '{ printf "  %7ss %5s of timeout  %-14s %s%s\n", $1, $2, $3, $4, ($5 ? "  " $5 : "") }'
