// Drives a redstream cluster with ioredis's Cluster client, as a Node.js
// service would, in two phases: the Go test (tests/cluster_scripted_test.go)
// kills a group's leader between them and then writes "go" on stdin.
// Prints one JSON line per phase; any failure exits non-zero.
'use strict';
const Redis = require('ioredis');
const readline = require('readline');

const seeds = process.argv.slice(2).map((addr) => {
  const [host, port] = addr.split(':');
  return { host, port: Number(port) };
});
const keys = 16;
const cluster = new Redis.Cluster(seeds, {
  // An election takes a few seconds: keep retrying -CLUSTERDOWN and
  // redirects through it, as a service would be configured to.
  maxRedirections: 200,
  retryDelayOnClusterDown: 100,
  retryDelayOnFailover: 100,
  retryDelayOnTryAgain: 100,
  slotsRefreshTimeout: 2000,
});
cluster.on('error', () => {}); // node errors are retried; failures surface on commands

async function phase1() {
  const ids = [];
  for (let i = 0; i < keys; i++) {
    ids.push(await cluster.xadd(`orders:{${i}}`, '*', 'n', `${i}`));
    await cluster.lpush(`jobs:{${i}}`, `job-${i}`);
    await cluster.xgroup('CREATE', `orders:{${i}}`, 'g', '0');
  }
  let crossslot = '';
  try {
    await cluster.sendCommand(new Redis.Command('MSET', ['orders:{0}', 'x', 'orders:{1}', 'y']));
  } catch (e) {
    crossslot = e.message;
  }
  // A service counts the cluster's keys by asking every master.
  const masters = cluster.nodes('master');
  let dbsize = 0;
  for (const node of masters) dbsize += await node.dbsize();
  return { phase: 1, added: ids.length, masters: masters.length, crossslot, dbsize };
}

async function phase2() {
  let added = 0, read = 0, acked = 0, popped = 0;
  for (let i = 0; i < keys; i++) {
    const key = `orders:{${i}}`;
    await cluster.xadd(key, '*', 'n', `${i}-again`);
    added++;
    const res = await cluster.xreadgroup('GROUP', 'g', 'c', 'COUNT', 10, 'STREAMS', key, '>');
    const entries = res ? res[0][1] : [];
    read += entries.length;
    if (entries.length > 0) {
      acked += await cluster.xack(key, 'g', ...entries.map((e) => e[0]));
    }
    const job = await cluster.brpop(`jobs:{${i}}`, 1);
    if (job && job[1] === `job-${i}`) popped++;
  }
  return { phase: 2, added, read, acked, popped };
}

async function main() {
  console.log(JSON.stringify(await phase1()));
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    if (line.trim() === 'go') break;
  }
  rl.close();
  console.log(JSON.stringify(await phase2()));
  cluster.disconnect();
  process.exit(0);
}

main().catch((e) => {
  console.error(`ioredis: ${e && e.stack ? e.stack : e}`);
  process.exit(1);
});
