#!/bin/bash
# abcluster.sh: compare builds inside ONE three-node cluster, a binary per
# node, so that the two followers see exactly the same traffic.
#
#   bench/abcluster.sh LEADER_BIN FOLLOWER1_BIN FOLLOWER2_BIN [ROUNDS] [WRITES]
#
# Starts three cluster-enabled nodes on ports 7101-7103 (bus 17101-17103,
# data in a temp dir), makes the first the leader (`cluster create`), then
# runs redis-benchmark (50 clients, unpipelined XADD) against the leader
# ROUNDS times and prints, per round, the writes per second and each
# node's CPU (user+sys, all threads) per write. Run the build under test
# as one follower and the base build as the other: the difference between
# the two follower columns is the change's cost, to within about 2% here,
# where `redstream bench` rows move by 10% from run to run. For a
# leader-side change, run A,B,B and B,B,B one after the other. Needs
# redis-benchmark (redis-tools). Everything it starts, it stops.
set -euf -o pipefail
bins=("$1" "$2" "$3")
rounds=${4:-3}
writes=${5:-200000}
dir=$(mktemp -d /tmp/abcluster.XXXXXX)
pids=()
cleanup() {
	kill "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$dir"
}
trap cleanup EXIT
for i in 0 1 2; do
	mkdir -p "$dir/n$i"
	"${bins[$i]}" server --port $((7101 + i)) --bind 127.0.0.1 --dir "$dir/n$i" --loglevel warning \
		--cluster-enabled yes --cluster-port $((17101 + i)) --cluster-node-timeout 1000 >"$dir/n$i.log" 2>&1 &
	pids+=($!)
done
for i in 0 1 2; do
	for _ in $(seq 200); do
		redis-cli -p $((7101 + i)) ping >/dev/null 2>&1 && break
		sleep 0.05 # waiting for a port to open: nothing to block on
	done
done
"${bins[0]}" cluster create 127.0.0.1:7101 127.0.0.1:7102 127.0.0.1:7103 >/dev/null
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
load() { redis-benchmark -p 7101 -c 50 -n "$writes" -q XADD s '*' f v >/dev/null 2>&1; }
hz=$(getconf CLK_TCK)
load # warm-up: leader settled, heap grown
for r in $(seq "$rounds"); do
	before=()
	for p in "${pids[@]}"; do before+=("$(cpu_ticks "$p")"); done
	t0=$(date +%s.%N)
	load
	t1=$(date +%s.%N)
	line=$(printf 'round %d: %6.0f writes/s' "$r" "$(echo "$writes / ($t1 - $t0)" | bc -l)")
	for k in 0 1 2; do
		used=$(($(cpu_ticks "${pids[$k]}") - ${before[$k]}))
		line+=$(printf '  node%d %5.1f us' "$k" "$(echo "$used * 1000000 / $hz / $writes" | bc -l)")
	done
	echo "$line"
done
