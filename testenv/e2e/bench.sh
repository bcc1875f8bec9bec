#!/usr/bin/env bash
# Runs BenchmarkConvergence (benchmark 3: the examples/foo binary, the same
# controller asking for JSON only, and a controller-runtime
# Foo controller bring new Foos to their end state on a full control plane;
# benchmark 5: the API server's own floor for the same end state) at 1,000
# and at 10,000 Foos, summarises the runs and writes a self-contained
# markdown report.
#
#   ./bench.sh OUTPUT.md [COUNT]
#
# It also writes the summary table, a heading and one table with a row per
# number of Foos and peer and a column per metric, to OUTPUT.summary.md
# (OUTPUT.md's name with .summary.md in place of .md).
#
# COUNT (default 5, or $BENCH_COUNT) is the number of rounds at 1,000 Foos;
# LARGE_COUNT (default 1) the number at LARGE_FOOS (default 10000; 0 skips
# them). Each round starts a control plane and runs one iteration of each
# peer on it; medians are taken over the rounds. A round takes about 5
# minutes at 1,000 Foos and about 50 at 10,000 on 2 cores. The
# control-plane binaries must be built (make testenv-binaries).
# benchstat is installed from the Go module proxy at a pinned version when
# it is not on PATH; the tables come from ../bench/cmd/benchreport, as for
# the other benchmarks.
#
# CONVERGENCE_ARGS adds flags to every run, e.g. for a quick check of the
# script: CONVERGENCE_ARGS='-convergence.resync=5s' SMALL_FOOS=50 LARGE_FOOS=100.
# PROFILE_DIR, if set, keeps CPU profiles of each controller and of
# kube-apiserver, taken during the first 20 seconds of convergence in the
# last round at 1,000 Foos, there (-convergence.profile-dir), and the report
# shows where the CPU time went.
set -euo pipefail

# shellcheck source=../bench/lib.sh
source "$(dirname "$0")/../bench/lib.sh"
bench_args 5 "$@"

cd "$(dirname "$0")/.." # the testenv module
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ensure_benchstat

(cd bench && go build -o "$tmp/benchreport" ./cmd/benchreport)
# Build the test binary before anything is timed.
go test -c -o "$tmp/e2e.test" ./e2e/

small=${SMALL_FOOS:-1000}
large=${LARGE_FOOS:-10000}
large_count=${LARGE_COUNT:-1}
profile_args=()
if [[ -n ${PROFILE_DIR:-} ]]; then
	mkdir -p "$PROFILE_DIR"
	rm -f "$PROFILE_DIR"/*.pprof
	profile_args=(-convergence.profile-dir "$(realpath "$PROFILE_DIR")")
fi

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
begin=$(date +%s)
# rounds FOOS N: N rounds at FOOS Foos into $tmp/Convergence-FOOS.txt. Round
# i runs one iteration of each peer on a control plane of its own, ctrlkit
# first, so that changes in the machine's load spread over the peers (a
# -test.count N run would repeat each peer N times in a row). A failed round
# is reported, and the others still count.
declare -A failed
rounds() {
	local foos=$1 n=$2 i
	: >"$tmp/Convergence-$foos.txt"
	failed[$foos]=0
	for ((i = 1; i <= n; i++)); do
		echo "+ round $i of $n at $foos Foos: BenchmarkConvergence" >&2
		# Profiling costs the profiled processes a little: only one round.
		local profile=()
		if ((foos == small && i == n)); then
			profile=("${profile_args[@]}")
		fi
		# Like go test, run the binary in the package directory.
		# shellcheck disable=SC2086 # CONVERGENCE_ARGS holds several flags
		if ! (cd e2e && "$tmp/e2e.test" -test.run '^$' -test.bench '^BenchmarkConvergence$' \
			-test.benchtime 1x -test.count 1 -test.timeout 4h -convergence.foos "$foos" \
			"${profile[@]}" ${CONVERGENCE_ARGS:-}) |
			tee -a "$tmp/Convergence-$foos.txt" >&2; then
			failed[$foos]=$((failed[$foos] + 1))
			echo "+ round $i failed" >&2
		fi
	done
}
sizes=("$small")
rounds "$small" "$count"
if ((large > 0 && large_count > 0)); then
	sizes+=("$large")
	rounds "$large" "$large_count"
fi
elapsed=$(($(date +%s) - begin))
load_after=$(load)

# values FILE IMPL METRIC: the metric's value in every run of a peer, one per line.
values() {
	awk -v impl="$2" -v metric="$3" '
		$1 ~ "^BenchmarkConvergence/impl=" impl "(-[0-9]+)?$" {
			for (i = 3; i < NF; i += 2) if ($(i + 1) == metric) print $i
		}' "$1"
}
# median FILE IMPL METRIC, maximum FILE IMPL METRIC
median() {
	values "$@" | sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "n/a"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3g\n", m }'
}
maximum() { values "$@" | sort -g | tail -1 | awk '{ printf "%.3g\n", $1 }'; }
if (($(values "$tmp/Convergence-$small.txt" ctrlkit converge-s | wc -l) == 0)); then
	echo "$0: no complete run at $small Foos; see the output above" >&2
	exit 1
fi
verdict() { if awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "n/a" && a <= b) }'; then echo "**met**"; else echo "**not met**"; fi; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "n/a" || b == "n/a" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

cpu_model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
pin() { sed -n "s/^[[:space:]]*$1 = \"\\(.*\\)\"/\\1/p" binaries/binaries.go; }
mod_version() { go list -m -f '{{.Version}}' "$1"; }
commit=$(git -C .. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C .. status --porcelain 2>/dev/null | head -1) ]]; then
	commit="$commit (with uncommitted changes)"
fi

# The metrics of the tables, in the detailed sections and in the summary.
report_flags=(-peer impl -metrics converge-s,total-writes/foo,writes/foo,events/foo,api-writes/foo,cpu-s,peak-rss-MiB,heap-MiB,idle-cpu-s,apiserver-cpu-s)

# section FOOS: the tables and goals of the runs at FOOS Foos.
section() {
	local foos=$1 file="$tmp/Convergence-$1.txt"
	local runs
	runs=$(values "$file" ctrlkit converge-s | wc -l)
	echo "### $foos Foos ($runs rounds, ${failed[$foos]} failed)"
	echo
	if ((runs == 0)); then
		echo "No complete round."
		echo
		return
	fi
	"$tmp/benchreport" "${report_flags[@]}" \
		-goal "converge-s:ctrlkit<=1.10*apiserver-floor" \
		-goal "converge-s:ctrlkit<=1*controller-runtime" \
		-goal "total-writes/foo:ctrlkit<=1*controller-runtime" \
		-goal "cpu-s:ctrlkit<=0.6*controller-runtime" \
		-goal "peak-rss-MiB:ctrlkit<=0.5*controller-runtime" \
		-goal "heap-MiB:ctrlkit<=0.35*controller-runtime" \
		"$file"
	local worst idle restart total
	total=$(median "$file" ctrlkit total-writes/foo)
	worst=$(maximum "$file" ctrlkit total-writes/foo)
	idle=$(maximum "$file" ctrlkit idle-writes)
	restart=$(maximum "$file" ctrlkit restart-writes)
	cat <<MD
- total writes per Foo, Events included, goal ctrlkit ≤ 3: median $total,
  largest run $worst: $(verdict "$worst" 3)
- no writes during an idle resync period, goal ctrlkit = 0: largest run
  $idle: $(verdict "$idle" 0) (restart: largest run $restart)
- converge-s against the floor: ctrlkit $(ratio "$(median "$file" ctrlkit converge-s)" "$(median "$file" apiserver-floor converge-s)")×,
  controller-runtime $(ratio "$(median "$file" controller-runtime converge-s)" "$(median "$file" apiserver-floor converge-s)")×
- ctrlkit asking for protobuf (its default) and for JSON only: controller
  CPU $(median "$file" ctrlkit cpu-s) and $(median "$file" ctrlkit-json cpu-s) s, kube-apiserver CPU until
  convergence $(median "$file" ctrlkit apiserver-cpu-s) and $(median "$file" ctrlkit-json apiserver-cpu-s) s
  (controller-runtime: $(median "$file" controller-runtime apiserver-cpu-s) s; the floor: $(median "$file" apiserver-floor apiserver-cpu-s) s)

Each controller's writes in detail (medians; largest run in brackets):

| metric | ctrlkit | ctrlkit-json | controller-runtime |
|---|---:|---:|---:|
MD
	local m
	for m in deploy-creates/foo status-updates/foo other-writes/foo events/foo conflicts/foo max-writes restart-writes idle-writes; do
		echo "| \`$m\` | $(median "$file" ctrlkit "$m") ($(maximum "$file" ctrlkit "$m")) | $(median "$file" ctrlkit-json "$m") ($(maximum "$file" ctrlkit-json "$m")) | $(median "$file" controller-runtime "$m") ($(maximum "$file" controller-runtime "$m")) |"
	done
	cat <<MD

<details><summary>benchstat output, $foos Foos</summary>

\`\`\`
MD
	cp "$file" "$tmp/Convergence.txt"
	(cd "$tmp" && "$benchstat" -col /impl Convergence.txt)
	echo '```'
	echo
	echo "</details>"
	echo
}

# profiles: the heaviest functions of each CPU profile in PROFILE_DIR.
profiles() {
	cat <<MD
### Where the CPU time goes ($small Foos, last round)

CPU profiles of each controller and of kube-apiserver over the first 20
seconds after the first create (\`-convergence.profile-dir\`), kept in
\`$PROFILE_DIR\`. The top functions by cumulative time (\`go tool pprof -top -cum\`):

MD
	local f
	for f in "$PROFILE_DIR"/*.pprof; do
		[[ -e $f ]] || continue
		echo "<details><summary>$(basename "$f" .pprof)</summary>"
		echo
		echo '```'
		go tool pprof -top -cum -nodecount 25 "$f" 2>/dev/null | sed -n '1,40p'
		echo '```'
		echo
		echo "</details>"
		echo
	done
}

{
	cat <<MD
## Convergence on a real control plane, and the API server's floor

Benchmarks 3 and 5 run in $count rounds at $small Foos and $large_count at $large
(\`-convergence.foos\`). Each round starts a full control plane (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kwok with one
fake node) and runs one iteration of each peer on it, in this order:
ctrlkit, ctrlkit-json, controller-runtime, the floor; each in a
new namespace that is deleted, and gone, before the next iteration starts.
Tables show the median of the runs, the largest deviation of a single run
from it, and the ratio to the best peer (lowest value).

| | |
|---|---|
| Date | $(date -u '+%Y-%m-%d %H:%M UTC') |
| ctrlkit | commit $commit |
| CPUs (\`nproc\`) | $(nproc) |
| CPU | ${cpu_model:-unknown} |
| OS | $(uname -sr) |
| Go | $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH) |
| Control plane | Kubernetes $(pin KubernetesVersion), etcd $(pin EtcdVersion), kwok $(pin KwokVersion) |
| client-go | $(mod_version k8s.io/client-go) |
| controller-runtime | $(cd bench && mod_version sigs.k8s.io/controller-runtime) |
| Time | $elapsed s in all |
| Extra flags | ${CONVERGENCE_ARGS:-none} |
| load average (1, 5, 15 min) | before: $load_before; after: $load_after |

Commands, in \`testenv\` (what \`./e2e/bench.sh OUT.md $count\` runs): the
benchmark command is run once per round.

\`\`\`sh
go test -c -o e2e.test ./e2e/
cd e2e && ../e2e.test -test.run '^\$' -test.bench '^BenchmarkConvergence\$' -test.benchtime 1x -test.count 1 -convergence.foos $small
cd e2e && ../e2e.test -test.run '^\$' -test.bench '^BenchmarkConvergence\$' -test.benchtime 1x -test.count 1 -convergence.foos $large
$(basename "$benchstat") -col /impl Convergence.txt
\`\`\`

Each iteration: 32 goroutines of an admin client (no client-side rate
limit) create the Foos with \`spec.replicas: 1\` at once. A Foo has
converged when its Deployment exists and is controlled by it, the
Deployment's \`availableReplicas\` is 1 (kwok makes pods Ready at once), and
the Foo's status mirrors it (\`availableReplicas\` 1, current
\`observedGeneration\`, \`Ready=True\`).

- \`ctrlkit\`: the \`examples/foo\` binary (built without the race detector)
  runs with its default flags (\`--workers 2\`, \`--kube-api-qps 500\`,
  \`--kube-api-burst 1000\`, \`--resync 10m\`, protobuf answers for
  built-in kinds, managedFields dropped from the Foos' cache, the
  Deployments' cache trimmed to the fields the controller reads; only the
  kubeconfig and the ports are set) as a static-token user bound
  to the ClusterRole of \`examples/foo/deploy\`. It is started, and ready,
  before the first create.
- \`ctrlkit-json\`: the same with \`--kube-api-content-type=application/json\`:
  every answer in JSON.
- \`controller-runtime\`: \`bench/cmd/crfoo\`, the same controller written
  with controller-runtime as its documentation teaches (\`For(Foo)\`,
  \`Owns(Deployment)\`, default options, the manager's event recorder,
  which writes events.k8s.io Events), with the same flags, as a user bound to
  the same ClusterRole and to events.k8s.io Events. Its caches are
  controller-runtime's default ones, which drop managedFields
  (\`cache.TransformStripManagedFields\`), and its clients ask for
  protobuf for built-in kinds, as controller-runtime's do by default.
- \`apiserver-floor\`: no controller. The same goroutines create each Foo and
  right after it its Deployment (the controller's template and controller
  owner reference); as soon as a Deployment is available, one status update
  mirrors it into its Foo. That is the least the API server and the kube
  controllers need to reach the same end state.

Before the first iteration, 32 Foos go through the floor's steps once, so
that no peer pays for what the API server sets up on the first write of a
kind. kube-controller-manager and kube-scheduler run with
\`--kube-api-qps 500 --kube-api-burst 1000\` (the Foo controller's
defaults) instead of their defaults (20/30 and 50/100 requests per second),
which would make their own client-side rate limits the pace of every
peer. The API server's audit log (Metadata level, blocking) attributes
every request to its user.

The metrics:

- \`converge-s\`: from the first create until a watch has seen every Foo
  converged.
- \`writes/foo\`: write requests for Foos and Deployments per Foo, by the
  controller (from the first create until it is stopped after settling)
  or by the floor's client (Foo creates not counted): Deployment
  creates, Foo status updates and any other write to either kind, failed
  ones included. \`events/foo\`: its Event creates and patches.
  \`total-writes/foo\`: both together.
- \`api-writes/foo\`: the write requests of every client in the namespace
  (the Foo creates, the kube controllers, the scheduler, kwok, events) from
  the first create until convergence.
- \`cpu-s\`: the controller process's CPU time (user and system, from
  \`/proc\`) from the first create until it has settled (empty queue, no
  reconcile running, its events sent). \`peak-rss-MiB\`: its peak resident
  memory (\`VmHWM\`) then. \`heap-MiB\`: its live heap after a forced
  garbage collection (\`HeapAlloc\` of \`/debug/pprof/heap?gc=1\`) then.
- \`apiserver-cpu-s\`: kube-apiserver's CPU time from the first create
  until convergence, for every peer (the floor's is the least the API
  server spends on the same end state).
- The idle phase restarts the binary with \`--resync 30s\`
  (\`-convergence.resync\`): \`restart-writes\` are its writes until it has
  reconciled every Foo of the initial list and settled; \`idle-writes\`
  those of the following resync period (at least one period, and until a
  resync has reconciled every Foo again); \`idle-cpu-s\` its CPU time in
  that window, scaled to one resync period.

MD
	for foos in "${sizes[@]}"; do
		section "$foos"
	done
	if [[ -n ${PROFILE_DIR:-} ]]; then
		profiles
	fi
} >"$out"

# The summary: the runs of every size with a complete round, each result
# labelled foos=FOOS so that the sizes are configurations of one table.
: >"$tmp/Convergence-all.txt"
for foos in "${sizes[@]}"; do
	if (($(values "$tmp/Convergence-$foos.txt" ctrlkit converge-s | wc -l) > 0)); then
		sed "s#^BenchmarkConvergence/#BenchmarkConvergence/foos=$foos/#" "$tmp/Convergence-$foos.txt" >>"$tmp/Convergence-all.txt"
	fi
done
{
	printf '### %s\n\n' "Benchmarks 3 and 5: convergence on a real control plane, and the API server's floor"
	"$tmp/benchreport" -summary "${report_flags[@]}" "$tmp/Convergence-all.txt"
} >"$summary"
echo "Wrote $out and $summary" >&2
