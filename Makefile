# ctrlkit — see README.md. `make test` is what CI runs.

SHELL := /bin/bash
GO ?= go
TESTENV := testenv
# Packages whose statement coverage must stay at or above COVER_MIN percent.
CORE_PKGS := reconcile reconcile/reconciletest reconcile/write reconcile/finalizer reconcile/condition queue queue/leader queue/operator queue/queuetest queue/shard queue/tracing queue/multicluster queue/multicluster/kubeconfig queue/multicluster/clusterprofile \
	informer informer/optional owner events events/eventstest metrics metrics/metricstest webhook webhook/webhooktest foo
COVER_MIN := 85
# The tools users run with go tool (cmd/apigen, cmd/image), a module of
# their own, which pins the code generators apigen runs.
CMD := cmd
APIGEN := $(CURDIR)/_output/bin/apigen
FUZZTIME ?= 60s

.PHONY: all help test test-times vet verify-generate generate apigen unit simulation cover-check \
	testenv-binaries test-testenv demo demo-once cluster cluster-down \
	fuzz bench bench-fleet bench-queue bench-shard mutants image test-cmd test-bench test-widget

all: test

help:
	@echo "make demo             a real control plane, the Foo controller and an example Foo (Ctrl-C stops)"
	@echo "make test             everything CI runs: vet, generated code, unit, integration and e2e tests, the demo"
	@echo "make test-times       the time table of the last make test, by stage and by package"
	@echo "make generate         regenerate the code, CRDs and RBAC roles derived from the API types and markers"
	@echo "make image            reproducible images of the example operators in _output/images (OCI layout and tarball each)"
	@echo "make cluster          start a full control plane in the background; prints the kubeconfig path"
	@echo "make cluster-down     stop it"
	@echo "make fuzz             run every fuzz target for FUZZTIME (default 60s) each"
	@echo "make bench            all benchmarks with their peers, written to BENCHMARKS.md (about 100 minutes)"
	@echo "make bench-queue      worker-loop benchmark (ctrlkit vs hand-written client-go loop)"
	@echo "make bench-fleet      fleet benchmarks: a quiet cluster beside a busy one, memory per replica (a few minutes)"
	@echo "make mutants          mutation test of queue/shard, the Lease requests' timeouts and the fleet's probe and sync timeouts: which planted bugs the tests and the simulation catch (about an hour; MUTANTS_FLAGS='-tests REGEXP -schedules N' for a quick run)"

# The steps of make test, in order; STAGE+STAGE runs stages side by side.
# hack/test-stages.sh keeps each stage's output in _output/test-STAGE.log and
# its wall and CPU time in _output/test-times.tsv; the time table
# (hack/test-times.sh) is printed at the end, failed or not. Side by side:
# vet with the check of the generated code and the control-plane binaries
# (built only if missing); then the unit tests and the tools' tests (mostly
# the compiler and the code generators) with the tests of testenv, the
# longest stage, which mostly waits on control planes once compiled; then
# the simulation (two processes) with the other two testenv modules.
TEST_STAGES := vet+verify-generate+testenv-binaries unit+test-cmd+test-testenv cover-check simulation+test-bench+test-widget demo-once
# cmd/apigen took 1,713 s of go test's -timeout on a loaded 2-core machine
# (apigen create's tests generate and test whole modules): 60 leaves room.
TEST_TIMEOUT_MINUTES := 60

test:
	@MAKE="$(MAKE)" bash hack/test-stages.sh $(TEST_STAGES); rc=$$?; \
	echo; TEST_TIMEOUT_MINUTES=$(TEST_TIMEOUT_MINUTES) bash hack/test-times.sh; \
	exit $$rc

# The time table of the last make test, again.
test-times:
	@TEST_TIMEOUT_MINUTES=$(TEST_TIMEOUT_MINUTES) bash hack/test-times.sh

vet:
	$(GO) vet ./...
	cd $(TESTENV) && $(GO) vet ./...
	cd $(TESTENV)/bench && $(GO) vet ./...
	cd $(TESTENV)/examples/widget && $(GO) vet ./...
	cd $(CMD) && $(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	@out=$$(git ls-files 2>/dev/null | while IFS= read -r f; do \
		[ -f "$$f" ] && [ "$$(head -c 4 "$$f" | tr -d '\177')" = ELF ] && echo "$$f"; done; true); \
	if [ -n "$$out" ]; then echo "executables tracked by git (build them, do not commit them):"; echo "$$out"; exit 1; fi

# Everything derived from the API types and the +kubebuilder markers: deep
# copies, clientsets (and fakes), listers, informers, apply configurations
# with their OpenAPI schema, CRDs, the RBAC roles of each example, the
# webhook manifests of examples/bucket and every example's deploy folder
# but its patches. The
# widget module runs the generator as any other module would: go tool apigen.
# verify-generate writes nothing and fails on anything out of date.
generate: apigen
	$(APIGEN) $(APIGEN_FLAGS) -header hack/boilerplate.go.txt -out foo/generated -crd foo/crd \
	  -rbac examples/foo/deploy -rbac-role foo-controller -rbac-paths "./foo ./examples/foo" \
	  -deploy examples/foo/deploy -deploy-namespace foo-system -deploy-image ctrlkit/foo-controller:dev foo/apis
	$(APIGEN) $(APIGEN_FLAGS) -header hack/boilerplate.go.txt -out examples/bucket/generated -crd examples/bucket/deploy/crd \
	  -rbac examples/bucket/deploy -rbac-role bucket-operator -rbac-paths ./examples/bucket \
	  -webhook examples/bucket/deploy -webhook-paths ./examples/bucket \
	  -deploy examples/bucket/deploy -deploy-namespace bucket-system -deploy-image ctrlkit/bucket:dev examples/bucket/apis
	$(APIGEN) $(APIGEN_FLAGS) -out "" -crd "" -rbac examples/external/deploy -rbac-role external-targets -rbac-paths ./examples/external \
	  -deploy examples/external/deploy -deploy-namespace external-system -deploy-image ctrlkit/external:dev
	$(APIGEN) $(APIGEN_FLAGS) -header hack/boilerplate.go.txt -out examples/configset/generated -crd examples/configset/deploy/crd \
	  -rbac examples/configset/deploy -rbac-role configset-operator -rbac-paths ./examples/configset \
	  -deploy examples/configset/deploy -deploy-namespace configset-system -deploy-image ctrlkit/configset:dev examples/configset/apis
	$(APIGEN) $(APIGEN_FLAGS) -out "" -crd "" -rbac examples/fleet/deploy -rbac-role configmap-copier -rbac-paths ./examples/fleet \
	  -deploy examples/fleet/deploy -deploy-namespace fleet-system -deploy-image ctrlkit/fleet:dev
	$(APIGEN) $(APIGEN_FLAGS) -out "" -crd "" -rbac examples/summary/deploy -rbac-role foo-summary -rbac-paths "./examples/summary ./informer/optional" \
	  -deploy examples/summary/deploy -deploy-namespace summary-system -deploy-image ctrlkit/summary:dev
	cd $(TESTENV)/examples/widget && $(GO) tool apigen $(APIGEN_FLAGS) -rbac config/rbac -rbac-role widget-controller -rbac-paths .

verify-generate:
	@$(MAKE) --no-print-directory generate APIGEN_FLAGS=-verify

apigen:
	cd $(CMD) && $(GO) build -o $(APIGEN) ./apigen

# Race-enabled tests of the root module. Fuzz targets run their seed
# corpora as ordinary tests here. Up to four tests of a package run at once
# (-parallel): the parallel ones mostly wait on Lease timing in real time.
# The sharding simulation (TestSimulation) runs in the simulation stage
# instead, without the race detector: it runs the whole group on one
# goroutine, where the race detector has nothing to find, and under it
# and the coverage counters its 100 schedules cost as much CPU as all the
# package's other tests (which cover 94% of the package on their own).
# Its replays of earlier failures (TestSimulationRegressions) run here.
unit:
	mkdir -p _output
	$(GO) test -race -count=1 -parallel 4 -timeout $(TEST_TIMEOUT_MINUTES)m -skip '^TestSimulation$$' -coverprofile=_output/cover.out ./... 2>&1 | tee _output/unit.txt | grep -v '^[IWE][0-9]\{4\} '; \
	exit $${PIPESTATUS[0]}

# The sharding simulation without the race detector: 5,000 schedules, seeds
# 1 to 2,500 and 2,501 to 5,000 in two processes side by side, so that
# neither comes near its timeout on a loaded machine.
SIM_HALF := 2500
simulation:
	@mkdir -p _output; \
	sim() { $(GO) test -count=1 -timeout $(TEST_TIMEOUT_MINUTES)m -run '^TestSimulation$$' -v ./queue/shard/ \
	  -shard.sim.schedules $(SIM_HALF) -shard.sim.first $$1 > _output/simulation-$$1.txt 2>&1; }; \
	sim 1 & first=$$!; sim $$(( $(SIM_HALF) + 1 )); second=$$?; wait $$first; first=$$?; \
	grep -hE '^(---|ok|FAIL|PASS)|schedules|seed [0-9]+:' _output/simulation-1.txt _output/simulation-$$(( $(SIM_HALF) + 1 )).txt; \
	[ $$first -eq 0 ] && [ $$second -eq 0 ]

cover-check:
	@fail=0; for p in $(CORE_PKGS); do \
	  pct=$$(grep -E "^ok[[:space:]]+github.com/ctrlkit/ctrlkit/$$p[[:space:]]" _output/unit.txt | sed -n 's/.*coverage: \([0-9.]*\)% of statements.*/\1/p'); \
	  if [ -z "$$pct" ]; then echo "coverage: no figure for $$p"; fail=1; continue; fi; \
	  ok=$$(awk -v p="$$pct" -v m="$(COVER_MIN)" 'BEGIN{print (p>=m)?"yes":"no"}'); \
	  echo "coverage: $$p $$pct% (minimum $(COVER_MIN)%)"; \
	  [ "$$ok" = yes ] || fail=1; \
	done; exit $$fail

# The tests of the cmd module: the generator (which generates a fixture
# module and tests it on the generated fake) and the image builder (which
# builds the image of examples/foo twice and runs its binary). They run
# without the race detector: most of their time is the code generators,
# which -race would instrument for nothing, and the module starts no
# goroutine but apigen's signal handler, whose shared state is all under
# one mutex (testenv/layout checks that no other go statement appears).
test-cmd:
	cd $(CMD) && $(GO) test -count=1 -timeout $(TEST_TIMEOUT_MINUTES)m ./...

# Reproducible images of the example operators, built without a daemon by
# cmd/image, FROM scratch: the static binary, a nonroot user, /tmp. Each
# is an OCI image layout, _output/images/NAME/, and a
# tarball for docker load, podman load or kind load image-archive,
# _output/images/NAME.tar; one line "IMAGE sha256:DIGEST" each. The names
# are those of examples/*/deploy. IMAGE_ARCH sets the architecture;
# SOURCE_DATE_EPOCH the time of every file (default 1970-01-01).
IMAGE_ARCH ?= amd64
IMAGES := $(CURDIR)/examples/foo=ctrlkit/foo-controller:dev \
	$(CURDIR)/examples/bucket=ctrlkit/bucket:dev \
	$(CURDIR)/examples/external=ctrlkit/external:dev \
	$(CURDIR)/examples/fleet=ctrlkit/fleet:dev \
	$(CURDIR)/examples/configset=ctrlkit/configset:dev
image:
	@cd $(CMD) && $(GO) run ./image -output $(CURDIR)/_output/images -arch $(IMAGE_ARCH) -go $(GO) $(IMAGES)

# Control-plane binaries and kubectl built from the Go module proxy into the
# per-user cache (~/.cache/ctrlkit-testenv, or $$CTRLKIT_TESTENV_BIN_DIR). The
# first build on a machine takes 8 to 11 minutes on 2 cores; every
# later clone and every module importing testenv reuses it.
testenv-binaries:
	./hack/build-binaries.sh

# Control-plane smoke tests, integration tests (API server only) and e2e
# tests (full control plane, examples/foo as a process); the e2e tests run
# in parallel, each with its own control plane, four at a time: they
# mostly wait on Lease timings and on their control planes.
test-testenv: testenv-binaries
	cd $(TESTENV) && $(GO) test -race -count=1 -parallel 4 -timeout $(TEST_TIMEOUT_MINUTES)m ./... 2>&1 | grep -v '^[IWE][0-9]\{4\} '; \
	exit $${PIPESTATUS[0]}

# The tests of the benchmark module (the harness, the controller-runtime
# twins on an API server, the line counts).
test-bench: testenv-binaries
	cd $(TESTENV)/bench && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT_MINUTES)m ./... 2>&1 | grep -v '^[IWE][0-9]\{4\} '; \
	exit $${PIPESTATUS[0]}

# The example module that imports testenv as another operator would.
test-widget: testenv-binaries
	cd $(TESTENV)/examples/widget && $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT_MINUTES)m ./... 2>&1 | grep -v '^[IWE][0-9]\{4\} '; \
	exit $${PIPESTATUS[0]}

demo: testenv-binaries
	cd $(TESTENV) && $(GO) run ./cmd/demo

demo-once:
	DEMO_ONCE=1 $(MAKE) --no-print-directory demo

cluster:
	@cd $(TESTENV) && $(GO) run ./cmd/cluster up

cluster-down:
	@cd $(TESTENV) && $(GO) run ./cmd/cluster down

fuzz:
	FUZZTIME=$(FUZZTIME) bash hack/fuzz.sh

# Every benchmark of issue-level interest, side by side with its peers, into
# BENCHMARKS.md: the worker loop, fresh events during a storm, informer
# memory and one informer's cache of 100,000 Deployments on a real API
# server (testenv/bench), and convergence of 1,000 Foos (3 rounds) and
# 10,000 Foos (1 round) on the full control plane with the API server's own
# floor (testenv/e2e). The file opens with a summary, one table per
# benchmark (the scripts' OUTPUT.summary.md), then the detailed sections.
bench: testenv-binaries
	mkdir -p _output
	bash $(TESTENV)/bench/run.sh $(CURDIR)/_output/bench-peers.md
	PROFILE_DIR=$(CURDIR)/_output/profiles bash $(TESTENV)/e2e/bench.sh $(CURDIR)/_output/bench-convergence.md 3
	cd $(TESTENV) && $(GO) test -run '^$$' -bench BenchmarkStart -benchtime 5x ./controlplane/ | tee $(CURDIR)/_output/bench-startup.txt
	cd $(TESTENV)/bench && $(GO) build -o $(CURDIR)/_output/benchreport ./cmd/benchreport
	_output/benchreport -summary -peer '' -metrics median-start-ms,median-rss-MiB _output/bench-startup.txt > _output/bench-startup.summary.md
	commit=$$(git rev-parse --short HEAD); \
	if [ -n "$$(git status --porcelain | head -1)" ]; then commit="$$commit (with uncommitted changes)"; fi; \
	{ echo "# Benchmarks"; echo; \
	  echo "Written by \`make bench\` on $$(date -u '+%Y-%m-%d %H:%M UTC'), commit $$commit; every table compares peers measured in the same run."; echo; \
	  echo "## Summary"; echo; \
	  cat _output/bench-peers.summary.md _output/bench-convergence.summary.md; \
	  echo "### Test control plane start-up (testenv, binaries built; every value the median of 5 starts)"; echo; \
	  cat _output/bench-startup.summary.md; \
	  cat _output/bench-peers.md; echo; cat _output/bench-convergence.md; echo; \
	  echo "## Test control plane start-up (testenv, binaries built, 5 starts each)"; echo; \
	  echo '```'; grep '^Benchmark' _output/bench-startup.txt; echo '```'; echo; \
	  echo "Earlier measurements, written by hand after their runs and dated, are in"; \
	  echo "[docs/benchmarks-history.md](docs/benchmarks-history.md)."; } > BENCHMARKS.md
	@echo "wrote BENCHMARKS.md"

bench-shard: testenv-binaries
	mkdir -p _output
	cd $(TESTENV)/e2e && $(GO) test -run '^$$' -bench BenchmarkShardedConvergence -benchtime 1x -timeout 3h -convergence.foos $${SHARD_FOOS:-10000} . | tee $(CURDIR)/_output/bench-shard.txt

# The fleet benchmarks of testenv/bench alone (also part of make bench): a
# quiet cluster's first reconcile beside a busy one, and memory per replica
# with 20 member clusters; a few minutes.
bench-fleet:
	mkdir -p _output
	cd $(TESTENV)/bench && $(GO) test -run '^$$' -bench '^BenchmarkFleet' -benchtime 1x -count $${BENCH_COUNT:-6} . | tee $(CURDIR)/_output/bench-fleet.txt

bench-queue:
	mkdir -p _output
	$(GO) test -run '^$$' -bench BenchmarkWorkerLoop -benchtime 50x -count 10 ./queue/ | tee _output/bench-queue.txt

# Mutation test of queue/shard, not part of test (about an hour on 2
# cores): every bug listed in hack/mutants/mutants.go is planted in
# turn, through go test -overlay, and the simulation alone and then all of
# the package's tests run against it (for a bug in the timeouts of
# queue/leader's or queue/internal/lease's Lease requests, or in the
# probe and sync timeouts of queue/multicluster's Fleet, that package's
# tests). Fails if a bug survives both, or a mutant no longer applies. MUTANTS_FLAGS adds flags: -report-only,
# -run NAME, -check (apply and build only), -rev REV; a quick run:
# -tests REGEXP (only these package tests, the baseline's too) and
# -schedules N (the simulation's schedules, 5000 by default).
mutants:
	$(GO) run ./hack/mutants -go $(GO) $(MUTANTS_FLAGS)
