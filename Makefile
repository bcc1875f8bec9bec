# ctrlkit — see README.md. `make test` is what CI runs.

SHELL := /bin/bash
GO ?= go
# Packages whose statement coverage must stay at or above COVER_MIN percent.
CORE_PKGS := reconcile queue informer owner events
COVER_MIN := 85

.PHONY: all test vet verify-generate generate unit cover-check fuzz-seeds bench-queue help

all: test

help:
	@echo "make test             vet, generated-code check, race tests, coverage gate"
	@echo "make generate         regenerate the Foo clients, listers, informers, deepcopy"
	@echo "make bench-queue      worker-loop benchmark (ctrlkit vs hand-written client-go loop)"

test: vet verify-generate unit cover-check

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

generate:
	bash foo/hack/update-codegen.sh

verify-generate:
	bash foo/hack/verify-codegen.sh

# Race-enabled unit tests of the root module. Fuzz targets run their seed
# corpora as ordinary tests here.
unit:
	mkdir -p _output
	$(GO) test -race -count=1 -coverprofile=_output/cover.out ./... 2>&1 | tee _output/unit.txt | grep -v '^[IWE][0-9]\{4\} '; \
	exit $${PIPESTATUS[0]}

cover-check:
	@fail=0; for p in $(CORE_PKGS); do \
	  pct=$$(grep -E "^ok[[:space:]]+github.com/ctrlkit/ctrlkit/$$p[[:space:]]" _output/unit.txt | sed -n 's/.*coverage: \([0-9.]*\)% of statements.*/\1/p'); \
	  if [ -z "$$pct" ]; then echo "coverage: no figure for $$p"; fail=1; continue; fi; \
	  ok=$$(awk -v p="$$pct" -v m="$(COVER_MIN)" 'BEGIN{print (p>=m)?"yes":"no"}'); \
	  echo "coverage: $$p $$pct% (minimum $(COVER_MIN)%)"; \
	  [ "$$ok" = yes ] || fail=1; \
	done; exit $$fail

bench-queue:
	$(GO) test -run '^$$' -bench BenchmarkWorkerLoop -benchtime 50x -count 10 ./queue/ | tee _output/bench-queue.txt
