"""Drives a redstream cluster with redis-py's RedisCluster, as a Python
service would, in two phases: the Go test (tests/cluster_scripted_test.go)
kills a group's leader between them and then writes "go" on stdin.
Prints one JSON line per phase; any failure exits non-zero.

redis-py comes from Debian's python3-redis (.ci/run installs it), so run
this with the system python3.
"""
import json
import sys
import time

from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import ClusterCrossSlotError, ConnectionError

KEYS = 16


def connect(addrs):
    nodes = []
    for addr in addrs:
        host, port = addr.rsplit(":", 1)
        nodes.append(ClusterNode(host, int(port)))
    # An election takes a few seconds. redis-py sleeps 0.25 s before each
    # retry of -CLUSTERDOWN or a refused connection, so 80 attempts ride
    # out 20 s of failover, as a service would be configured to.
    rc = RedisCluster(startup_nodes=nodes, cluster_error_retry_attempts=80,
                      dynamic_startup_nodes=False)
    # redis-py 4.3.4 connects only to the first seed that answers; when it
    # must ask another for the slot map (the first has died), it builds
    # that connection from a deep copy of its settings, which holds a
    # lock, and fails under Python 3.11. Give every seed its connection.
    for seed in rc.nodes_manager.startup_nodes.values():
        if seed.redis_connection is None:
            seed.redis_connection = rc.get_node(node_name=seed.name).redis_connection
    return rc


def movable_keys(rc, fn, *args, **kwargs):
    """Runs a command whose keys redis-py finds with COMMAND GETKEYS
    (XREADGROUP), which it sends to its "default node". redis-py 4.3.4,
    Debian 12's, keeps a dead default node, so every such command fails
    until the client is rebuilt; later versions pick another node
    (RedisCluster.replace_default_node). This does what they do."""
    for _ in range(80):
        try:
            return fn(*args, **kwargs)
        except ConnectionError:
            # Any node answers COMMAND GETKEYS: take the next one.
            nodes = rc.get_nodes()
            names = [n.name for n in nodes]
            dead = rc.get_default_node().name
            at = names.index(dead) if dead in names else -1
            rc.set_default_node(nodes[(at + 1) % len(nodes)])
            time.sleep(0.25)
    return fn(*args, **kwargs)


def phase1(rc):
    added = 0
    for i in range(KEYS):
        rc.xadd(f"orders:{{{i}}}", {"n": str(i)})
        added += 1
        rc.lpush(f"jobs:{{{i}}}", f"job-{i}")
        rc.xgroup_create(f"orders:{{{i}}}", "g", id="0")
    crossslot = ""
    try:
        # redis-py refuses a cross-slot MSET itself; naming a node makes it
        # send the command, so the server's answer shows.
        rc.execute_command("MSET", "orders:{0}", "x", "orders:{1}", "y",
                           target_nodes=RedisCluster.RANDOM)
    except ClusterCrossSlotError as e:
        # redis-py keeps the error code as the exception's class.
        crossslot = f"CROSSSLOT {e}"
    # Counted on every master: redis-py adds up what they answer (DBSIZE
    # alone would go to one node).
    return {"phase": 1, "added": added, "masters": len(rc.get_primaries()),
            "crossslot": crossslot,
            "dbsize": rc.dbsize(target_nodes=RedisCluster.PRIMARIES),
            "scanned": sum(1 for _ in rc.scan_iter(count=100))}


def phase2(rc):
    added = read = acked = popped = 0
    for i in range(KEYS):
        key = f"orders:{{{i}}}"
        rc.xadd(key, {"n": f"{i}-again"})
        added += 1
        res = movable_keys(rc, rc.xreadgroup, "g", "c", {key: ">"}, count=10)
        entries = res[0][1] if res else []
        read += len(entries)
        if entries:
            acked += rc.xack(key, "g", *[e[0] for e in entries])
        job = rc.brpop(f"jobs:{{{i}}}", timeout=1)
        if job and job[1] == f"job-{i}".encode():
            popped += 1
    return {"phase": 2, "added": added, "read": read, "acked": acked,
            "popped": popped}


def main():
    rc = connect(sys.argv[1:])
    print(json.dumps(phase1(rc)), flush=True)
    for line in sys.stdin:
        if line.strip() == "go":
            break
    print(json.dumps(phase2(rc)), flush=True)
    rc.close()


if __name__ == "__main__":
    main()
