// The TypeScript client's figures (make bench): submit latency through the
// client at latency=none and typical, a raw fetch of the same request as the
// baseline of the client's own overhead, and a worker's throughput at
// typical. It serves each profile with `scripts/latency -serve` (a dev server
// over versitygw behind the fault proxy) and only prints:
//
//   bench clients lang=typescript op=submit latency=L calls=N p50_ms=A p99_ms=B
//   bench clients lang=typescript op=raw-fetch latency=L calls=N p50_ms=A p99_ms=B
//   bench clients lang=typescript worker concurrency=4 latency=typical tasks=200 tasks_per_s=X

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Client, newTaskId, Worker, type Lease, type Task } from "@s3q/client";

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
const latencyBin = process.env.S3Q_LATENCY_BIN || `${repoRoot}.bin/latency`;
const profiles = (process.env.PROFILES ?? "none,typical").split(",");
const calls = Number(process.env.CALLS ?? 200);
const tasks = Number(process.env.TASKS ?? 200);
const concurrency = Number(process.env.CONCURRENCY ?? 4);

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
}
const f = (x: number) => x.toFixed(2);

/** Serves one latency profile; resolves the URL and a stop function. */
async function serve(profile: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const proc = spawn(latencyBin, ["-serve", profile], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: proc.stdout });
  const url = await new Promise<string>((resolve, reject) => {
    lines.on("line", (l) => {
      const m = /^serving .*url=(\S+)/.exec(l);
      if (m) resolve(m[1]!);
    });
    proc.on("exit", (code) => reject(new Error(`latency -serve exited ${code}`)));
  });
  return {
    url,
    stop: async () => {
      proc.stdin.end();
      await new Promise((r) => proc.on("exit", r));
    },
  };
}

async function submitLatency(url: string, profile: string): Promise<void> {
  const c = new Client(url, { queue: `bench-submit-${profile}` });
  for (let i = 0; i < 5; i++) await c.submit("bench", { i }); // warm: the queue exists, connections open
  const n = profile === "none" ? calls : Math.min(calls, 100);
  // Client submits and the same request with fetch alone, interleaved so
  // both see the same machine and server: the difference of their medians
  // is the client's own cost.
  const took: number[] = [];
  const raw: number[] = [];
  for (let i = 0; i < n; i++) {
    let t0 = performance.now();
    await c.submit("bench", { i, to: "a@example.com" }, { ttl: "1h" });
    took.push(performance.now() - t0);
    const body = JSON.stringify({ id: newTaskId(), task_type: "bench", input: { i, to: "a@example.com" }, ttl: "1h" });
    t0 = performance.now();
    const r = await fetch(`${url}/queues/bench-submit-${profile}/tasks`, { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body });
    await r.json();
    raw.push(performance.now() - t0);
  }
  console.log(`bench clients lang=typescript op=submit latency=${profile} calls=${n} p50_ms=${f(pct(took, 50))} p99_ms=${f(pct(took, 99))}`);
  console.log(`bench clients lang=typescript op=raw-fetch latency=${profile} calls=${n} p50_ms=${f(pct(raw, 50))} p99_ms=${f(pct(raw, 99))}`);
}

/** A client that resolves when the nth complete has been answered. */
class CountingClient extends Client {
  done = 0;
  onDone: (() => void) | undefined;
  override async complete(lease: Lease, output?: unknown): Promise<Task> {
    const t = await super.complete(lease, output);
    if (++this.done === tasks) this.onDone?.();
    return t;
  }
}

async function workerThroughput(url: string, profile: string): Promise<void> {
  const q = `bench-worker-${Date.now()}`;
  const c = new CountingClient(url, { queue: q });
  for (let i = 0; i < tasks; i += 100) {
    await c.submitBatch(Array.from({ length: Math.min(100, tasks - i) }, (_, j) => ({ taskType: "bench.noop", input: { n: i + j } })));
  }
  const all = new Promise<void>((r) => (c.onDone = r));
  const w = new Worker(c, { concurrency, logger: null, stopOnSignals: false });
  w.handle("bench.noop", () => null);
  const t0 = performance.now();
  const run = w.run();
  await all;
  const secs = (performance.now() - t0) / 1000;
  console.log(`bench clients lang=typescript worker concurrency=${concurrency} latency=${profile} tasks=${tasks} tasks_per_s=${f(tasks / secs)}`);
  await w.stop();
  await run;
}

for (const profile of profiles) {
  const s = await serve(profile);
  try {
    await submitLatency(s.url, profile);
    if (profile === "typical") await workerThroughput(s.url, profile);
  } finally {
    await s.stop();
  }
}
