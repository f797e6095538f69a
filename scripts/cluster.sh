#!/bin/sh
# make cluster: three redstream nodes on 127.0.0.1:7001-7003 (Raft traffic
# on 17001-17003, data under data/cluster/700N) made one replicated group
# by `redstream cluster create`. Ctrl-C stops all three. A second run
# restarts the same group from its data (delete data/cluster to start
# over). A second argument above 1 spreads the slots over that many Raft
# groups (cluster create --groups) on the first run.
set -u
BIN=${1:-bin/redstream}
NGROUPS=${2:-1}
ROOT=data/cluster
PORTS="7001 7002 7003"

pids=""
stop() {
	trap - INT TERM EXIT
	echo
	echo "stopping the nodes"
	for pid in $pids; do kill "$pid" 2>/dev/null; done
	wait
}
trap stop EXIT
trap 'exit 0' INT TERM

for port in $PORTS; do
	dir=$ROOT/$port
	mkdir -p "$dir"
	"$BIN" server --port "$port" --bind 127.0.0.1 --dir "$dir" --logfile "$dir/redstream.log" \
		--cluster-enabled yes --cluster-port "1$port" &
	pids="$pids $!"
done

addrs=""
for port in $PORTS; do addrs="$addrs 127.0.0.1:$port"; done
if [ -e "$ROOT/created" ]; then
	# The group exists: wait (bounded) for it to elect a leader.
	tries=0
	until "$BIN" cluster check 127.0.0.1:7001 --timeout 2s >/dev/null 2>&1; do
		tries=$((tries + 1))
		if [ "$tries" -ge 30 ]; then
			"$BIN" cluster check 127.0.0.1:7001 --timeout 2s
			echo "the group did not come back; logs: $ROOT/700N/redstream.log" >&2
			exit 1
		fi
		sleep 1
	done
	"$BIN" cluster status 127.0.0.1:7001
else
	# shellcheck disable=SC2086 # one argument per address
	"$BIN" cluster create --groups "$NGROUPS" $addrs || {
		echo "cluster create failed; logs: $ROOT/700N/redstream.log" >&2
		exit 1
	}
	touch "$ROOT/created"
fi

echo
echo "A three-node cluster runs on 127.0.0.1:7001-7003. Connect with:"
echo "    redis-cli -c -p 7001"
echo "Ctrl-C stops all three."
wait
