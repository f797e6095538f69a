# redstream — the two commands that matter: `make run` and `make test`.

GO      ?= go
BIN     := bin/redstream
FUZZTIME ?= 15s

.PHONY: build run cluster test integ unit bench fuzz lint soak soak-cluster clean readme

build:
	$(GO) build -o $(BIN) .

# Builds and starts a server on 127.0.0.1:6379 with data under ./data.
# PORT=6380 picks another port; ARGS passes anything else to
# `redstream server` (a config file, --directive value ...), e.g.
#   make run ARGS='--port 6380 --appendfsync everysec'
run: build
	./$(BIN) server$(if $(PORT), --port $(PORT))$(if $(ARGS), $(ARGS))

# Starts three nodes on 127.0.0.1:7001-7003 (Raft on 17001-17003, data
# under ./data/cluster) and makes them one replicated group; Ctrl-C
# stops all three (scripts/cluster.sh).
# CLUSTER_GROUPS=3 spreads the slots over three Raft groups (first run).
CLUSTER_GROUPS ?= 1
cluster: build
	./scripts/cluster.sh $(BIN) $(CLUSTER_GROUPS)

# Every test: unit, fuzz seed corpora, black-box tests with real clients
# (and side by side with redis-server when it is installed), under -race.
test: tests/js/node_modules
	$(GO) test -race -count=1 -timeout 30m ./...

# ioredis for the Node.js cluster test, at the version package-lock.json
# pins; without npm the test skips.
tests/js/node_modules: tests/js/package-lock.json
	@if command -v npm >/dev/null 2>&1; then npm ci --prefix tests/js --no-audit --no-fund --loglevel error || echo "npm ci failed: the ioredis test will skip"; fi

unit:
	$(GO) test -race -timeout 10m $$($(GO) list ./... | grep -v /tests)

integ: tests/js/node_modules
	$(GO) test -race -timeout 20m ./tests/...

# Measures redstream against a redis-server started in the same run and
# prints both figures and their ratio. Numbers, not pass/fail.
bench: build
	./$(BIN) bench

# The kill -9 crash loop at length: 300 cycles instead of make test's 30.
soak:
	REDSTREAM_SOAK_CYCLES=300 $(GO) test -race -timeout 90m -run 'TestKill9' -count=1 -v ./tests/

# The cluster fault tests at length: 200 fault cycles (kill -9 leader,
# follower, all three; SIGSTOP the leader; snapshot catch-up) instead of
# make test's 10.
soak-cluster:
	REDSTREAM_CLUSTER_CYCLES=200 $(GO) test -race -timeout 120m -run 'TestCluster' -count=1 -v ./tests/

# Runs every fuzz target for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  dir=$$($(GO) list -f '{{.Dir}}' $$pkg); \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# Regenerates the README's command list from the command table.
readme:
	UPDATE_README=1 $(GO) test ./cli -run TestREADMECommands

clean:
	rm -rf bin
