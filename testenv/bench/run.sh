#!/usr/bin/env bash
# Runs the benchmarks of this package (worker loop, fresh events during a
# storm, informer memory, a fleet's fairness and memory per replica, one
# informer's cache of 100,000 Deployments on a
# real API server), summarises them with benchstat and writes a
# self-contained markdown report.
#
#   ./run.sh OUTPUT.md [COUNT]
#
# It also writes the summary tables, a heading and one table per benchmark
# with a column per metric, to OUTPUT.summary.md (OUTPUT.md's name with
# .summary.md in place of .md).
#
# COUNT (default 6, or $BENCH_COUNT) is the number of runs of every
# benchmark but the cache memory one, which runs once; medians are taken
# over them. benchstat is installed from the Go
# module proxy at a pinned version when it is not on PATH.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
bench_args 6 "$@"

cd "$(dirname "$0")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ensure_benchstat

go build -o "$tmp/benchreport" ./cmd/benchreport
# Build the test binary once, before anything is timed.
go test -c -o "$tmp/bench.test" .

# The title of every benchmark and the flags of its tables, shared by its
# detailed section and its summary table.
declare -A title=(
	[WorkerLoop]="Benchmark 1: worker loop"
	[FreshDuringStorm]="Benchmark 2: fresh events during a storm"
	[InformerMemory]="Benchmark 4: informer memory"
	[CacheMemory]="Benchmark 6: one informer's cache of 100,000 Deployments"
	[FleetFairness]="Benchmark 7: a quiet cluster beside a busy one"
	[FleetMemory]="Benchmark 8: memory per replica, 20 member clusters"
)
declare -A flags=(
	[WorkerLoop]="-peer impl -metrics ns/key,allocs/key -diff allocs/key"
	[FreshDuringStorm]="-peer impl -metrics p50-µs,p90-µs,p99-µs,max-µs,drain-ms"
	[InformerMemory]="-peer transform -metrics B/object,B/foo,B/deployment,inuse-B/object"
	[CacheMemory]="-peer cache -metrics B/object,peak-B/object"
	[FleetFairness]="-peer queue -metrics quiet-first-ms"
	[FleetMemory]="-peer replicas -metrics MiB/replica,members/replica"
)
# report NAME [FLAG...]: benchreport's tables of benchmark NAME, with its
# flags and FLAGs.
report() {
	local name=$1 f
	shift
	read -ra f <<<"${flags[$name]}"
	"$tmp/benchreport" "${f[@]}" "$@" "$tmp/$name.txt"
}

load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)

# The benchmarks and their -benchtime. Round i runs each benchmark once,
# so that slow drifts in the machine's load spread over all of them and
# over all peers (a -count N run would repeat each peer N times in a row).
benchmarks=(WorkerLoop FreshDuringStorm InformerMemory FleetFairness FleetMemory)
declare -A benchtime=([WorkerLoop]=1s [FreshDuringStorm]=2x [InformerMemory]=1x [FleetFairness]=1x [FleetMemory]=1x)
for name in "${benchmarks[@]}"; do : >"$tmp/$name.txt"; done
for ((i = 1; i <= count; i++)); do
	for name in "${benchmarks[@]}"; do
		echo "+ round $i of $count: $name" >&2
		"$tmp/bench.test" -test.run '^$' -test.bench "^Benchmark$name\$" \
			-test.benchtime "${benchtime[$name]}" -test.timeout 2h |
			tee -a "$tmp/$name.txt" >&2
	done
done
# One informer's cache of 100,000 Deployments on a real API server: one
# run, whose peers take turns against the same objects.
echo "+ CacheMemory" >&2
"$tmp/bench.test" -test.run '^$' -test.bench '^BenchmarkCacheMemory$' -test.benchtime 1x -test.timeout 2h |
	tee "$tmp/CacheMemory.txt" >&2
load_after=$(load)

cpu_model=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
mod_version() { go list -m -f '{{.Version}}' "$1"; }
commit=$(git -C ../.. rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C ../.. status --porcelain 2>/dev/null | head -1) ]]; then
	commit="$commit (with uncommitted changes)"
fi

{
	cat <<EOF
## Worker loop, fresh events during a storm, informer memory, cache memory

These benchmarks need no control plane. Every peer of a benchmark runs in
the same process, one after the other, in each of $count rounds; tables show
the median of the runs, the largest deviation of a single run from it, and
the ratio to the best peer (lowest value) of the column.

| | |
|---|---|
| Date | $(date -u '+%Y-%m-%d %H:%M UTC') |
| ctrlkit | commit $commit |
| CPUs (\`nproc\`) | $(nproc) |
| CPU | ${cpu_model:-unknown} |
| OS | $(uname -sr) |
| Go | $(go env GOVERSION) $(go env GOOS)/$(go env GOARCH) |
| client-go | $(mod_version k8s.io/client-go) |
| controller-runtime | $(mod_version sigs.k8s.io/controller-runtime) |
| load average (1, 5, 15 min) | before: $load_before; after: $load_after |

Commands, in \`testenv/bench\` (what \`./run.sh OUT.md $count\` runs): the
three benchmark commands are run in turn, $count rounds, so that changes in
the machine's load spread over all benchmarks and peers.

\`\`\`sh
go test -c -o bench.test .
$(for name in "${benchmarks[@]}"; do
		echo "./bench.test -test.run '^\$' -test.bench '^Benchmark$name\$' -test.benchtime ${benchtime[$name]}"
	done)
$(basename "$benchstat") -col /impl WorkerLoop.txt
$(basename "$benchstat") -col /impl FreshDuringStorm.txt
./bench.test -test.run '^\$' -test.bench '^BenchmarkCacheMemory\$' -test.benchtime 1x
$(basename "$benchstat") -col /transform InformerMemory.txt
$(basename "$benchstat") -col /cache CacheMemory.txt
\`\`\`

### ${title[WorkerLoop]}

A no-op reconcile over 10,000 distinct keys: one op adds all keys (with the
workers already running) and waits until each has been reconciled. ns/key
is wall time per key; allocs/key counts every allocation in the process
during the rounds. Loggers are discarded everywhere.

- \`handwritten\`: client-go's rate-limiting workqueue and a
  \`processNextWorkItem\` loop as in sample-controller, with client-go's
  default no-op metrics provider (with which the queue keeps no per-item
  timestamps).
- \`handwritten-noop-provider\`: the same loop with a named queue and a
  metrics provider that discards everything (\`queue.NoopMetrics\`): the
  queue then keeps per-item timestamps for metrics nobody reads, which is
  what ctrlkit's default configuration makes client-go do.
- \`ctrlkit\`: \`queue.Controller\` with its defaults (\`NoopMetrics\`).
- \`ctrlkit-prometheus\`: the same with \`metrics.New\` (Prometheus, the same
  series as controller-runtime), for a like-for-like comparison.
- \`controller-runtime\`: a controller from \`controller.NewTypedUnmanaged\`
  with its defaults (the priority queue, Prometheus metrics); keys are
  added to its queue through a \`source.TypedFunc\`.
- \`controller-runtime-workqueue\`: the same with \`UsePriorityQueue: false\`
  (client-go's workqueue).

EOF
	report WorkerLoop \
		-goal 'ns/key:ctrlkit<=1.10*handwritten' \
		-goal 'ns/key:ctrlkit<controller-runtime' \
		-goal 'ns/key:ctrlkit-prometheus<controller-runtime' \
		-goal 'ns/key:ctrlkit-prometheus<=1.5*handwritten'
	printf '### %s\n\n' "${title[FreshDuringStorm]}"
	cat <<'EOF'
20,000 keys arrive as initial-list events, then 100 fresh changes one
millisecond apart: half to keys of the list that are still waiting, half to
new keys. 2 workers; every reconcile takes 50µs (a busy wait that yields,
because short sleeps round up to the timer granularity of the machine).
The first fresh change comes 1ms after the last initial-list event
(`delay=1ms`, while a queue may still be taking the list in) or 100ms after
it (`delay=100ms`, in the middle of the storm, which lasts about 0.5s).
Latency is from each fresh add to the start of its reconcile, over all
changes of all storms of a run; drain-ms is the time until every key was
reconciled.

- `client-go-fifo`: the hand-written loop; everything is added with `Add`.
- `ctrlkit`: the initial list with `AddLowPriority`, fresh changes with `Add`.
- `controller-runtime-priorityqueue`: controller-runtime's default queue;
  the initial list with `handler.LowPriority` as its handlers add objects
  from the initial list, fresh changes with the default priority.

EOF
	report FreshDuringStorm -goal 'p99-µs:ctrlkit<=controller-runtime-priorityqueue'
	printf '### %s\n\n' "${title[InformerMemory]}"
	cat <<'EOF'
Live heap growth (after two forced GCs) caused by syncing a Foo informer
and a Deployment informer from fake clientsets holding 10,000 Foos and
10,000 Deployments, without a transform and with
`informer.StripManagedFields` set through the factories' `WithTransform`.
The objects are what an API server would return: server-filled defaults,
owner reference, status, and managedFields entries for every writer (Foo:
kubectl and the foo controller's status; Deployment: the foo controller,
and kube-controller-manager for the revision annotation and the status).
List responses are encoded to JSON and decoded again, so cached objects own
their strings as decoded objects do. B/object covers both kinds; inuse
counts whole heap spans.

EOF
	report InformerMemory
	printf '### %s\n\n' "${title[CacheMemory]}"
	cat <<'EOF'
An API server (the project's etcd and kube-apiserver, nothing else) holds
100,000 Deployments, created directly as the Foo controller creates them
(its template and controller owner reference), each with its status then
written by a second field manager, as kube-controller-manager's would be.
One process then caches all of them with each peer in turn, every client
asking for protobuf: the live heap the cache keeps after two forced GCs
(B/object) and the highest heap growth sampled every 2ms while it synced
(peak-B/object), per Deployment.

- `client-go-full`: a client-go informer keeping everything.
- `ctrlkit-stripped`: the same with `informer.StripManagedFields`.
- `ctrlkit-trimmed`: the same with `informer.Trim` to `foo.DeploymentFields`
  (replicas, pod labels, the containers' names and images, three status
  fields; the identity and owner references are always kept): the
  Deployments' cache of `examples/foo`.
- `controller-runtime-full`: controller-runtime's cache (`cache.New`, as a
  manager makes it) without a transform, its default.
- `controller-runtime-stripped`: the same with
  `cache.TransformStripManagedFields()` as its `DefaultTransform`.

EOF
	report CacheMemory
	printf '### %s\n\n' "${title[FleetFairness]}"
	cat <<'EOF'
One fleet (`queue/multicluster`) with fake member clusters: a busy cluster
joins with 10,000 ConfigMaps, and once their keys are queued (its initial
list, at low priority) a quiet cluster with one ConfigMap joins.
quiet-first-ms is the time from the quiet cluster's join to the start of
its first reconcile. 4 workers; every reconcile of the busy cluster takes
1ms (an API call's latency), so its backlog alone lasts 2.5s.

- `fair`: `multicluster.NewController` as it is (`queue.WithFairness` by
  cluster).
- `one`: the same with every key in one fairness group, as one plain queue
  serves them.

EOF
	report FleetFairness -goal 'quiet-first-ms:fair<=0.1*one'
	printf '### %s\n\n' "${title[FleetMemory]}"
	cat <<'EOF'
20 fake member clusters, each with 500 ConfigMaps of 2 KiB (their lists
encoded and decoded again, as from an API server), shared by 1, 2 or 4
replicas through `queue/shard` on a fake management cluster. Only the
measured replica runs a fleet (`multicluster.WithSharding`); the others
hold their Leases, so it gets its share. MiB/replica is its live heap
growth (after two forced GCs) from before its fleet started to when it had
engaged every member it owns; members/replica is how many that was
(rendezvous hashing over 20 names does not split them evenly).

EOF
	report FleetMemory
	echo "<details><summary>benchstat output</summary>"
	echo
	echo '```'
	(cd "$tmp" && "$benchstat" -col /impl WorkerLoop.txt && echo &&
		"$benchstat" -col /impl FreshDuringStorm.txt && echo &&
		"$benchstat" -col /transform InformerMemory.txt && echo &&
		"$benchstat" -col /cache CacheMemory.txt && echo &&
		"$benchstat" -col /queue FleetFairness.txt && echo &&
		"$benchstat" -col /replicas FleetMemory.txt)
	echo '```'
	echo
	echo "</details>"
} >"$out"
for name in "${benchmarks[@]}" CacheMemory; do
	printf '### %s\n\n' "${title[$name]}"
	report "$name" -summary
done >"$summary"
echo "Wrote $out and $summary" >&2
