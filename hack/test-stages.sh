#!/usr/bin/env bash
# Runs the stages of `make test` and records what each costs.
#
#   hack/test-stages.sh STEP...
#
# A STEP is one make target (a stage), or several joined by "+", which run
# side by side. Steps run in order; the first that fails ends the run. Each
# stage's output goes to _output/test-STAGE.log (a lone stage's is also
# shown as it runs; the stages of a group show theirs as each ends), and one
# line per stage to _output/test-times.tsv:
#
#   STAGE  WALL-SECONDS  EXIT-CODE  CPU-SECONDS  STEP-NUMBER
#
# where CPU-SECONDS is the user and system time of everything the stage ran,
# in tenths of a second.
# hack/test-times.sh prints the table. The exit code is the failed stage's.
set -uo pipefail
cd "$(dirname "$0")/.."
out=_output
mkdir -p "$out"
rm -f "$out"/test-*.log
: > "$out/test-times.tsv"

# stage STEP NAME [tee]: runs make NAME, logs it and records its line. Run
# it in a subshell of its own: the CPU time it records is that of the
# subshell's finished children, which the times builtin reports only when
# it runs in that shell itself (not in a pipe or a command substitution,
# which would be new processes with no children).
stage() {
	local step=$1 name=$2 show=${3:-} start rc
	start=$(date +%s)
	if [ -n "$show" ]; then
		${MAKE:-make} --no-print-directory "$name" 2>&1 | tee "$out/test-$name.log"
		rc=${PIPESTATUS[0]}
	else
		${MAKE:-make} --no-print-directory "$name" > "$out/test-$name.log" 2>&1
		rc=$?
	fi
	times > "$out/test-$name.cpu"
	printf '%s\t%s\t%s\t%s\t%s\n' "$name" $(($(date +%s) - start)) "$rc" \
		"$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); s += p[1] * 60 + p[2] }; printf "%.1f\n", s }' "$out/test-$name.cpu")" \
		"$step" >> "$out/test-times.tsv"
	rm -f "$out/test-$name.cpu"
	return "$rc"
}

step=0
for arg in "$@"; do
	step=$((step + 1))
	IFS=+ read -r -a names <<< "$arg"
	if [ "${#names[@]}" -eq 1 ]; then
		( stage "$step" "${names[0]}" tee ) || exit
		continue
	fi
	echo "== side by side: ${names[*]} (each log shown when it ends; live in $out/test-NAME.log)"
	declare -A pids=()
	for name in "${names[@]}"; do
		( stage "$step" "$name" ) &
		pids[$!]=$name
	done
	rc=0
	while [ "${#pids[@]}" -gt 0 ]; do
		wait -n -p done "${!pids[@]}"
		code=$?
		name=${pids[$done]}
		unset "pids[$done]"
		echo "== make $name: $([ "$code" -eq 0 ] && echo ok || echo "FAILED (exit $code)")"
		cat "$out/test-$name.log"
		[ "$code" -eq 0 ] || rc=$code
	done
	unset pids
	[ "$rc" -eq 0 ] || exit "$rc"
done
