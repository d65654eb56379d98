# Sluice development gates. See README.md, "Development".

GO          ?= go
BIN         ?= bin/sluice
FUZZTIME    ?= 30s
STATICCHECK := $(shell $(GO) env GOPATH)/bin/staticcheck

.PHONY: all build release deb test test-alloc test-c50k test-tlsidle test-conformance lint cross fuzz bench bench-mix bench-proxy bench-tls bench-php bench-cache bench-deps redbot clean

all: lint test

# VERSION is what `sluice version` prints: the latest tag, the commits
# since and the commit (v1.2.3-4-gabcdef0), or the commit alone before the
# first tag, with -dirty for uncommitted changes. Outside a git checkout it
# is empty and sluice takes the version Go embeds (cmd/sluice/version.go).
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS     := -X main.version=$(VERSION)

## build: the sluice binary, at $(BIN), stamped with VERSION
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/sluice

## release: into dist/, archives for linux, macOS and FreeBSD, .deb packages
## for amd64 and arm64, and SHA256SUMS (packaging/release; docs/install.md)
release:
	GO=$(GO) VERSION=$(VERSION) packaging/release

## deb: into dist/, this machine's archive and .deb only (amd64 or arm64)
deb:
	GO=$(GO) VERSION=$(VERSION) TARGETS=linux/$$($(GO) env GOARCH) DEB_ARCHES=$$($(GO) env GOARCH) packaging/release

## test: every test of the modules (the server, then bench/ and gateway/), with the
## race detector, in random order (the cache's again on a disk store);
## then test-alloc
test:
	$(GO) test -race -shuffle=on -timeout 20m ./...
	$(GO) test -race -shuffle=on -timeout 10m ./cache -cache.disk
	$(GO) -C bench test -race -shuffle=on -timeout 20m ./...
	$(GO) -C gateway test -race -shuffle=on -timeout 10m ./...
	@$(MAKE) --no-print-directory test-alloc

## test-alloc: the allocation tests (names containing Alloc), without the
## race detector, whose own allocations they would count (they are built
## with !race, so the -race run above leaves them out); and the cache's
## tests of what it stores, whose copy is assembly only without the race
## detector (cache/storecopy.go)
test-alloc:
	$(GO) test -shuffle=on -run 'Alloc' ./...
	$(GO) -C bench test -shuffle=on -run 'Alloc' ./...
	$(GO) test -shuffle=on -run 'StoreCopy|BodySizes|MissBody|Recycle' ./cache

## test-c50k: C50K idle keep-alive connections (default 50,000) on one
## server, engine.TestC50KIdle, without the race detector: bounded memory,
## all answered (docs/benchmarks.md). Each of server and client needs
## C50K descriptors: the test raises its soft limit to the hard one and
## skips, saying so, if that is too low (as root, `ulimit -Hn` raises it),
## or fails when CI is set (.ci/run raises the limit and runs it).
C50K ?= 50000
test-c50k:
	SLUICE_C50K=$(C50K) $(GO) test -run '^TestC50KIdle$$' -count=1 -v ./engine

## test-tlsidle: TLSIDLE idle TLS keep-alive connections (default 10,000),
## engine.TestTLSIdleMemory, HTTP/1.1 then HTTP/2, without the race
## detector: every HTTP/1.1 one parks in bounded heap, all are answered
## again; heap, stacks and RSS per connection are logged
## (docs/benchmarks.md, "Idle TLS connections"). It skips where the
## descriptors are too few, or fails when CI is set (.ci/run runs it,
## about 15 s on 2 cores).
TLSIDLE ?= 10000
test-tlsidle:
	SLUICE_TLSIDLE=$(TLSIDLE) $(GO) test -run '^TestTLSIdleMemory$$' -count=1 -v ./engine
	SLUICE_TLSIDLE=$(TLSIDLE) SLUICE_TLSIDLE_PROTO=h2 $(GO) test -run '^TestTLSIdleMemory$$' -count=1 -v ./engine

## test-conformance: the Gateway API conformance suite (profile GATEWAY-HTTP)
## against sluice-gateway and sluice serve, then the load tests (endpoint
## churn under load, WebSockets across a route change), each in a cluster of
## tools/kube (gateway/conformance, docs/kubernetes.md "Conformance"). Root
## and etcd needed. It runs tools/kube/build.sh first, which builds the
## control plane's binaries into ~/.cache/sluice once (about 8 minutes of 2
## idle cores) and again only when tools/kube's go.mod, go.sum or build.sh
## change. The suite's report goes to CONFORMANCE_REPORT and is printed;
## CONFORMANCE_SKIP (comma-separated) names suite tests to leave out. The
## machine's one cluster at a time: it holds /tmp/kube.lock.
CONFORMANCE_SKIP   ?=
CONFORMANCE_REPORT ?= $(or $(TMPDIR),/tmp)/sluice-conformance-report.yaml
test-conformance:
	tools/kube/build.sh
	@rm -f $(CONFORMANCE_REPORT)
	@status=0; cd gateway && SLUICE_CONFORMANCE=1 flock /tmp/kube.lock $(GO) test -tags conformance -count=1 -timeout 60m -v \
		-run '^(TestConformance|TestLoad)$$' ./conformance \
		-args -report-output=$(CONFORMANCE_REPORT) $(if $(CONFORMANCE_SKIP),-skip-tests=$(CONFORMANCE_SKIP)) || status=$$?; \
	if [ -f $(CONFORMANCE_REPORT) ]; then echo "== the conformance report ($(CONFORMANCE_REPORT))"; cat $(CONFORMANCE_REPORT); \
	else echo "== no conformance report was written"; fi; exit $$status

## lint: gofmt (fails on any file to format), go vet, staticcheck; every
## module (gateway's conformance tests, tagged, too; and tools/kube); then cross
lint: | $(STATICCHECK)
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: files need formatting:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...
	$(GO) -C bench vet ./...
	cd bench && $(STATICCHECK) ./...
	$(GO) -C gateway vet ./...
	cd gateway && $(STATICCHECK) ./...
	$(GO) -C gateway vet -tags conformance ./conformance
	cd gateway && $(STATICCHECK) -tags conformance ./conformance
	$(GO) -C tools/kube vet ./...
	cd tools/kube && $(STATICCHECK) ./...
	@$(MAKE) --no-print-directory cross

## cross: go vet (which type-checks every file, tests included) of the
## server module for platforms other than this one: 32-bit and arm64
## Linux, macOS, the BSDs, and Windows, there without daemon and
## cmd/sluice, which Unix signals drive. Elsewhere than Linux the engine
## takes portable paths (see engine/doc.go, "Platforms"); tests run on
## Linux only. bench/ measures on Linux (CPU pinning, /proc) and is left out.
CROSS_TARGETS = linux/386 linux/arm64 darwin/arm64 darwin/amd64 freebsd/amd64 openbsd/amd64 netbsd/amd64
cross:
	@for t in $(CROSS_TARGETS); do \
		echo "go vet ./... for $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./... || exit 1; \
	done
	@echo "go vet for windows/amd64 (all but daemon and cmd/sluice)"
	@GOOS=windows GOARCH=amd64 $(GO) vet $$($(GO) list ./... | grep -v -e '/daemon$$' -e '/daemon/' -e '/cmd/sluice$$')

$(STATICCHECK):
	$(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

## fuzz: every Fuzz target of every package, each for FUZZTIME (default 30s)
fuzz:
	@status=0; for pkg in $$($(GO) list ./...); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) $$pkg || status=1; \
		done; \
	done; exit $$status

## bench: Go benchmarks, then the harness (the bench/ module) against the
## peer servers; updates the committed report in docs/benchmarks/ (the
## harness alone, without --out, writes to a scratch directory)
bench: build bench-deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
	$(GO) -C bench run ./cmd/sluicebench --sluice $(abspath $(BIN)) --out ../docs/benchmarks

## bench-mix: the C10K seed's mix at 10,000 connections, with a fast and a
## slow database (report in docs/benchmarks/mix/; about five minutes)
bench-mix: build bench-deps
	$(GO) -C bench run ./cmd/sluicebench --sluice $(abspath $(BIN)) --scenarios mix,mix-slowdb \
		--servers sluice,nginx,nethttp --rounds 3 --duration 5s --out ../docs/benchmarks/mix

## bench-proxy: Sluice, nginx, Caddy and HAProxy as reverse proxies in front
## of one upstream (report in docs/benchmarks/proxy/; about four minutes)
bench-proxy: build bench-deps
	$(GO) -C bench run ./cmd/sluicebench --sluice $(abspath $(BIN)) --scenarios proxy \
		--servers sluice,nginx,caddy,haproxy --rounds 3 --duration 5s --out ../docs/benchmarks/proxy

## bench-tls: Sluice, nginx, h2o and Caddy over TLS with one ECDSA P-256
## certificate: TLS HTTP/1.1 keep-alive, HTTP/2, new connections (report in
## docs/benchmarks/tls/; about five minutes)
bench-tls: build bench-deps
	$(GO) -C bench run ./cmd/sluicebench --sluice $(abspath $(BIN)) --scenarios tls \
		--servers sluice,nginx,h2o,caddy --rounds 3 --duration 5s --out ../docs/benchmarks/tls

## bench-php: Sluice, nginx and Caddy in front of one php-fpm pool, on
## hello.php and WordPress's front page (report in docs/benchmarks/php/;
## about five minutes)
bench-php: build bench-deps
	$(GO) -C bench run ./cmd/sluicebench --sluice $(abspath $(BIN)) --scenarios php \
		--servers sluice,nginx,caddy --rounds 3 --duration 5s --out ../docs/benchmarks/php

## bench-cache: Sluice's cache, nginx's proxy_cache and Varnish in front
## of one origin, hits and misses on a 4 KB and a 100 KB object, with
## Sluice's proxy alone on the same misses (report in
## docs/benchmarks/cache/; about four minutes)
bench-cache: build bench-deps
	$(GO) -C bench run ./cmd/sluicebench --sluice $(abspath $(BIN)) --scenarios cache \
		--servers sluice,nginx,varnish --rounds 3 --duration 5s --out ../docs/benchmarks/cache

## bench-grpc: gRPC unary calls through Sluice's proxy and nginx's grpc_pass
## to one gRPC upstream, over h2c and TLS, the client pinned to core 0 and
## the servers to core 1 (report in docs/benchmarks/grpc/; about three minutes)
.PHONY: bench-grpc
bench-grpc: build bench-deps
	taskset -c 0 $(GO) -C bench run ./cmd/grpcload --sluice $(abspath $(BIN)) --rounds 5 --duration 5s --out ../docs/benchmarks/grpc

## bench-deps: the peer servers and load tools the harness measures against
## (postgresql: the mix-slowdb scenario's database; haproxy: the proxy
## scenario's, whose service, started by the package, is stopped and
## disabled: the harness runs its own, as it runs its own php-fpm and
## MariaDB for the php scenario; nghttp2-client: h2load, the tls
## scenario's HTTP/2 client; varnish: the cache scenario's, whose
## services are stopped and disabled too: the harness runs its own
## varnishd)
BENCH_PACKAGES = nginx lighttpd apache2 apache2-utils caddy h2o wrk util-linux postgresql haproxy nghttp2-client \
	php-fpm php-mysql wordpress mariadb-server varnish
bench-deps:
	@missing=""; for p in $(BENCH_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing; fi; \
	case " $$missing " in *" haproxy "*) systemctl disable --now haproxy >/dev/null 2>&1 || true;; esac; \
	case " $$missing " in *" mariadb-server "*) systemctl disable --now mariadb >/dev/null 2>&1 || true;; esac; \
	case " $$missing " in *" varnish "*) systemctl disable --now varnish varnishncsa >/dev/null 2>&1 || true;; esac; \
	case " $$missing " in *" php-fpm "*) for u in $$(systemctl list-unit-files 'php*-fpm.service' --no-legend 2>/dev/null | cut -d' ' -f1); do \
		systemctl disable --now $$u >/dev/null 2>&1 || true; done;; esac

## redbot: REDbot (PyPI) against files the files package serves; fails on any BAD finding
redbot:
	command -v redbot >/dev/null || pip install --quiet redbot # .ci/run installs it in a venv
	$(GO) test ./files -run '^TestREDbot$$' -count=1 -v

clean:
	rm -rf bin dist
