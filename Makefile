# wimro — the two commands that set everything up are `make run` and `make test`.
GO      ?= go
BIN     := bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# REVISION is the commit, for wimro_build_info (Go's own stamp is off
# under -buildvcs=false).
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X main.version=$(VERSION) -X main.revision=$(REVISION)

.PHONY: all deps build package run test test-short bench soak fuzz lint fmt vet staticcheck openapi-lint clean

all: build

# deps installs what the daemon and the tests need on this machine:
# PostgreSQL server binaries (Debian's postgresql package) and yanglint
# (libyang2-tools, for the RFC 8466 and TAPI body validation) when missing,
# promtool (Debian's prometheus package: the alerts' and the dashboard's
# checks), lintian (the package test checks the .deb with it), Chromium
# (Debian's chromium package: the console's browser tests drive it), and the
# Consul agent the coordinator tests run (built once from the Go module
# proxy, about 10 minutes the first time, then cached outside the repo).
deps:
	@scripts/ensure-postgres.sh
	@scripts/ensure-yanglint.sh
	@scripts/ensure-systemd-analyze.sh
	@scripts/ensure-promtool.sh
	@scripts/ensure-lintian.sh
	@scripts/ensure-chromium.sh
	@scripts/ensure-consul.sh >/dev/null

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# package builds, without Docker, the Debian package $(BIN)/wimro_*.deb
# (nfpm, pinned, from the Go module proxy) and wimd's OCI image
# $(BIN)/wimd-image/ (a layout) and $(BIN)/wimd-image.tar (its archive),
# from static binaries; docs/operations.md, "Packages", says how to install them.
package:
	@scripts/package.sh $(BIN) $(VERSION)

# run builds wimd and starts it on a local PostgreSQL that it owns under
# .wimro/ (created on first run, migrations applied), listening on
# WIMRO_LISTEN (default 127.0.0.1:9090).
run: deps build
	$(BIN)/wimd serve --dev-connectors

# test runs the whole suite with the race detector against real services
# that the harness starts itself. Under CI (CI set) it also fuzzes every
# target briefly (CI_FUZZTIME), bounded: the corpora alone run in the
# suite. The budget is a count of executions, not a duration: Go 1.26's
# fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when a -fuzztime duration ends (golang/go#75804, fixed in Go
# 1.27); a count has no deadline to race.
CI_FUZZTIME ?= 300x

test: deps
	$(GO) vet ./...
	@scripts/openapi-lint.sh
	$(GO) test -race -count=1 -timeout 30m ./...
	@if [ -n "$$CI" ]; then $(MAKE) --no-print-directory fuzz FUZZTIME=$(CI_FUZZTIME); fi

test-short: deps
	$(GO) test -count=1 ./...

# bench prints every figure of BENCHMARKS.md with its baseline ratio,
# measured in the same run on a throwaway PostgreSQL (about 20 minutes;
# ActionThroughput includes River burning down 100,000 jobs as its
# baseline; the Cluster benchmarks run wimd with the cluster settings of
# before issue 31 beside the new defaults; ConsoleRender times the
# console in headless Chromium, 1,000 links against 10).
bench: deps
	$(GO) test -run '^$$' -bench DeriveWANLinks -benchtime 20x ./engine/
	$(GO) test -run '^$$' -bench PurgeAndScrape -benchtime 1x -timeout 20m ./persistence/
	$(GO) test -run '^$$' -bench 'ActionThroughput|QueueStatements|LatencyBound|LatencyBoundScale|ScaleAccounts|FirstClaim|LeaseRenewalCost' -benchtime 1x -timeout 20m ./wimthread/
	$(GO) test -run '^$$' -bench 'APILatency|IdleEventStreams' -benchtime 1x ./httpapi/
	$(GO) test -run '^$$' -bench Cluster -benchtime 1x -timeout 60m ./cmd/wimd/
	$(GO) test -run '^$$' -bench ConsoleRender -benchtime 5x ./cmd/wimd/

# soak runs the soak (internal/testkit/soak): three wimd in consul mode, one
# PostgreSQL, one Consul agent and two controller emulators under a
# continuous load and random faults for DURATION, the schedule drawn from
# SEED (0: a new one, printed; the same seed replays the same faults);
# FAULTS narrows the kinds (comma-separated, e.g. kill,pg-immediate).
# `make test` runs it for 3 minutes. It prints the table BENCHMARKS.md
# keeps.
DURATION ?= 10m
SEED     ?= 0
FAULTS   ?=

soak: deps
	$(GO) test -run '^TestSoak$$' -count=1 -v -timeout 3h ./internal/testkit/soak/ \
		-args -soak.duration=$(DURATION) -soak.seed=$(SEED) -soak.faults=$(FAULTS)

# fuzz runs every fuzz target (request decoding and validation, port
# mappings, list queries, endpoint ids) for FUZZTIME each; `make test`
# already runs each target's seeds and testdata/fuzz corpus, without
# fuzzing. New failing inputs land in the package's testdata/fuzz.
FUZZTIME ?= 60s
FUZZPKGS := . ./httpapi/ ./engine/

fuzz:
	@for pkg in $(FUZZPKGS); do \
		for t in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
			echo "== $$pkg $$t ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# staticcheck is fetched from the Go module proxy at a pinned version (not
# a dependency of the module).
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: fmt vet staticcheck openapi-lint

staticcheck:
	$(GO) run $(STATICCHECK) ./...

# openapi-lint lints the OpenAPI document /openapi.json serves with a
# pinned @redocly/cli (through npx; npm's cache outside the repo): any
# error fails. It needs Node.js 20.19+ and npm.
openapi-lint:
	@scripts/openapi-lint.sh

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
