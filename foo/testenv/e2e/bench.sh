#!/usr/bin/env bash
# Runs BenchmarkConvergence (benchmark 3: the examples/foo binary brings
# 1,000 new Foos to their end state on a full control plane; benchmark 5:
# the API server's own floor for the same end state), summarises the runs
# and writes a self-contained markdown report.
#
#   ./bench.sh OUTPUT.md [COUNT]
#
# COUNT (default 5, or $BENCH_COUNT) is the number of rounds; each starts a
# control plane and runs one iteration of each peer on it, and medians are
# taken over the rounds. A round takes about 3 minutes on 2 cores. The control-plane binaries must be built
# (../hack/build-binaries.sh). benchstat is installed from the Go module
# proxy at a pinned version when it is not on PATH; the tables come from
# ../bench/cmd/benchreport, as for the other benchmarks.
#
# CONVERGENCE_ARGS adds flags to every run, e.g. for a quick check of the
# script: CONVERGENCE_ARGS='-convergence.foos=50 -convergence.resync=5s'.
set -euo pipefail

# shellcheck source=../bench/lib.sh
source "$(dirname "$0")/../bench/lib.sh"
bench_args 5 "$@"

cd "$(dirname "$0")/.." # the foo/testenv module
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ensure_benchstat

(cd bench && go build -o "$tmp/benchreport" ./cmd/benchreport)
# Build the test binary before anything is timed.
go test -c -o "$tmp/e2e.test" ./e2e/

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
begin=$(date +%s)
# Round i runs one iteration of each peer on a control plane of its own,
# ctrlkit first, so that changes in the machine's load spread over both
# peers (a -test.count N run would repeat each peer N times in a row).
: >"$tmp/Convergence.txt"
failed=0
for ((i = 1; i <= count; i++)); do
	echo "+ round $i of $count: BenchmarkConvergence" >&2
	# Like go test, run the binary in the package directory. A failed round
	# is reported, and the others still count.
	# shellcheck disable=SC2086 # CONVERGENCE_ARGS holds several flags
	if ! (cd e2e && "$tmp/e2e.test" -test.run '^$' -test.bench '^BenchmarkConvergence$' \
		-test.benchtime 1x -test.count 1 -test.timeout 1h ${CONVERGENCE_ARGS:-}) |
		tee -a "$tmp/Convergence.txt" >&2; then
		failed=$((failed + 1))
		echo "+ round $i failed" >&2
	fi
done
elapsed=$(($(date +%s) - begin))
load_after=$(load)

# values IMPL METRIC: the metric's value in every run of a peer, one per line.
values() {
	awk -v impl="$1" -v metric="$2" '
		$1 ~ "^BenchmarkConvergence/impl=" impl "(-[0-9]+)?$" {
			for (i = 3; i < NF; i += 2) if ($(i + 1) == metric) print $i
		}' "$tmp/Convergence.txt"
}
# median IMPL METRIC, max IMPL METRIC
median() {
	values "$1" "$2" | sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "n/a"; exit }
		m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.3g\n", m }'
}
maximum() { values "$1" "$2" | sort -g | tail -1 | awk '{ printf "%.3g\n", $1 }'; }
runs=$(values ctrlkit converge-s | wc -l)
floor_runs=$(values apiserver-floor converge-s | wc -l)
if ((runs == 0 || floor_runs == 0)); then
	echo "$0: no complete run of both peers; see the output above" >&2
	exit 1
fi
verdict() { if awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; then echo "**met**"; else echo "**not met**"; fi; }

ratio=$(awk -v a="$(median ctrlkit converge-s)" -v b="$(median apiserver-floor converge-s)" 'BEGIN { printf "%.2f", a / b }')
cr_ratio=$(awk -v a="$(median controller-runtime converge-s)" -v b="$(median apiserver-floor converge-s)" 'BEGIN { if (a == "n/a") print "n/a"; else printf "%.2f", a / b }')
writes_median=$(median ctrlkit writes/foo)
writes_max=$(maximum ctrlkit writes/foo)
worst_foo=$(maximum ctrlkit max-writes)
idle_max=$(maximum ctrlkit idle-writes)
restart_max=$(maximum ctrlkit restart-writes)

cpu_model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
pin() { sed -n "s/^[[:space:]]*$1 = \"\\(.*\\)\"/\\1/p" binaries/binaries.go; }
mod_version() { go list -m -f '{{.Version}}' "$1"; }
commit=$(git -C ../.. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C ../.. status --porcelain 2>/dev/null | head -1) ]]; then
	commit="$commit (with uncommitted changes)"
fi

{
	cat <<EOF
## Convergence on a real control plane, and the API server's floor

Benchmarks 3 and 5 run in $count rounds. Each round starts a full control
plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
with one fake node) and runs one iteration of ctrlkit, one of
controller-runtime and then one of the floor on it, each in a new namespace that is deleted, and gone, before the
next iteration starts. Tables show the median of the runs, the largest
deviation of a single run from it, and the ratio to the best peer (lowest
value).

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
| Runs | $runs of ctrlkit, $floor_runs of the floor ($failed of $count rounds failed); $elapsed s in all |
| Extra flags | ${CONVERGENCE_ARGS:-none} |
| load average (1, 5, 15 min) | before: $load_before; after: $load_after |

Commands, in \`foo/testenv\` (what \`./e2e/bench.sh OUT.md $count\` runs): the
benchmark command is run $count times, one round each.

\`\`\`sh
go test -c -o e2e.test ./e2e/
cd e2e && ../e2e.test -test.run '^\$' -test.bench '^BenchmarkConvergence\$' -test.benchtime 1x -test.count 1
$(basename "$benchstat") -col /impl Convergence.txt
\`\`\`

(\`go test -run '^\$' -bench Convergence -benchtime 1x -count $count ./e2e/\` runs
the same iterations on one control plane, ctrlkit's first.)

Each iteration: 32 goroutines of an admin client (no client-side rate
limit) create 1,000 Foos (\`-convergence.foos\`) with \`spec.replicas: 1\` at
once. A Foo has converged when its Deployment exists and is controlled by
it, the Deployment's \`availableReplicas\` is 1 (kwok makes pods Ready at
once), and the Foo's status mirrors it (\`availableReplicas\` 1, current
\`observedGeneration\`, \`Ready=True\`); \`converge-s\` runs from the first
create until a watch has seen every Foo converged.

- \`ctrlkit\`: the \`examples/foo\` binary (built without the race detector)
  runs with its default flags (\`--workers 2\`, \`--kube-api-qps 500\`,
  \`--kube-api-burst 1000\`, \`--resync 10m\`; only the kubeconfig and the
  ports are set) as a static-token user bound to the ClusterRole of
  \`examples/foo/deploy\`. It is started, and ready, before the first create.
- \`controller-runtime\`: \`bench/cmd/crfoo\`, the same controller written
  with controller-runtime v0.25 as its documentation teaches (\`For(Foo)\`,
  \`Owns(Deployment)\`, default options, the manager's event recorder,
  which writes events.k8s.io Events), with the same flags, as a user bound to
  the same ClusterRole and to events.k8s.io Events.
- \`apiserver-floor\`: no controller. The same goroutines create each Foo and
  right after it its Deployment (the controller's template and controller
  owner reference); as soon as a Deployment is available, one status update
  mirrors it into its Foo. That is the least the API server and the kube
  controllers need to reach the same end state.

Before the first iteration, 32 Foos go through the floor's steps once, so
that neither peer pays for what the API server sets up on the first write
of a kind. kube-controller-manager and kube-scheduler run with
\`--kube-api-qps 500 --kube-api-burst 1000\` (the Foo controller's
defaults) instead of their defaults (20/30 and 50/100 requests per second),
which would make their own client-side rate limits the pace of both peers. The API server's audit log
(Metadata level, blocking) attributes every request to its user.

EOF
	"$tmp/benchreport" -peer impl -metrics converge-s,writes/foo,total-writes/foo,api-writes/foo \
		"$tmp/Convergence.txt"
	cat <<EOF
- \`writes/foo\`: write requests for Foos and Deployments per Foo, by the
  controller (from the first create until it is stopped after settling)
  or by the floor's client (Foo creates not counted): Deployment
  creates, Foo status updates and any other write to either kind, failed ones
  included. Events are not counted here.
- \`total-writes/foo\`: the same with the controller's Event creates and
  patches.
- \`api-writes/foo\`: the write requests of every client in the namespace
  (the Foo creates, the kube controllers, the scheduler, kwok, events) from
  the first create until convergence.

Each controller's writes in detail, and after convergence. The idle phase
restarts the binary with \`--resync 30s\` (\`-convergence.resync\`):
\`restart-writes\` are its writes until it has reconciled every Foo of the
initial list and settled; \`idle-writes\` those of the following resync
period (at least one period, and until a resync has reconciled every Foo
again).

EOF
	echo "| metric | ctrlkit median | ctrlkit largest run | controller-runtime median | controller-runtime largest run |"
	echo "|---|---:|---:|---:|---:|"
	for m in deploy-creates/foo status-updates/foo other-writes/foo events/foo conflicts/foo max-writes restart-writes idle-writes; do
		echo "| \`$m\` | $(median ctrlkit "$m") | $(maximum ctrlkit "$m") | $(median controller-runtime "$m") | $(maximum controller-runtime "$m") |"
	done
	cat <<EOF

Goals (on medians, and on every run where it says so):

- converge-s: ctrlkit / apiserver-floor = ${ratio}×, controller-runtime /
  apiserver-floor = ${cr_ratio}× (reported).
- ctrlkit: at most 3 Foo and Deployment writes per Foo before availability (events
  not counted): median $writes_median, largest run $writes_max, most for
  any one Foo $worst_foo: $(verdict "$worst_foo" 3).
- ctrlkit: no writes during an idle resync period: largest run $idle_max: $(verdict "$idle_max" 0)
  (restart: largest run $restart_max).

<details><summary>benchstat output</summary>

\`\`\`
EOF
	(cd "$tmp" && "$benchstat" -col /impl Convergence.txt)
	echo '```'
	echo
	echo "</details>"
} >"$out"
echo "Wrote $out" >&2
