# Shared by the benchmark scripts (bench/run.sh, e2e/bench.sh); source it.

# The benchstat release installed when none is on PATH; bump deliberately.
benchstat_version=v0.0.0-20260908200009-22c9c6c9d4da

# bench_args DEFAULT_COUNT "$@" checks the arguments OUTPUT.md [COUNT] and
# sets out (an absolute path), summary (the same path with .summary.md in
# place of a final .md, or added: where the script writes its summary
# tables) and count (COUNT, else $BENCH_COUNT, else DEFAULT_COUNT).
bench_args() {
	local default=$1
	shift
	if [[ $# -lt 1 || $# -gt 2 ]]; then
		echo "usage: $0 OUTPUT.md [COUNT]" >&2
		exit 2
	fi
	out=$(realpath -m "$1")
	summary=${out%.md}.summary.md
	count=${2:-${BENCH_COUNT:-$default}}
	if ! [[ $count =~ ^[0-9]+$ ]] || ((count < 1)); then
		echo "$0: COUNT must be a positive integer, got '$count'" >&2
		exit 2
	fi
}

# ensure_benchstat sets benchstat to a benchstat binary, installing the
# pinned release from the Go module proxy when none is on PATH.
ensure_benchstat() {
	benchstat=$(command -v benchstat || true)
	if [[ -n $benchstat ]]; then
		return
	fi
	local gobin
	gobin=$(go env GOBIN)
	gobin=${gobin:-$(go env GOPATH)/bin}
	if [[ ! -x $gobin/benchstat ]]; then
		echo "Installing benchstat $benchstat_version into $gobin" >&2
		GOBIN=$gobin go install "golang.org/x/perf/cmd/benchstat@$benchstat_version"
	fi
	benchstat=$gobin/benchstat
}
