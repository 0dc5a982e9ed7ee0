// Priorities, W3C trace context and a rate-limited queue's held-back
// claims against a fresh s3q dev; the Retry-After of a held-back claim, to
// the millisecond, also against a tiny local HTTP server that answers as a
// rate-limited queue does (204 with Retry-After).

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { BadRequestError, Client, InvalidArgumentError, Worker, type TaskContext } from "@s3q/client";
import { eventually, queueName, scenario, startDev, type Dev } from "./helpers.js";

const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

let dev: Dev;
before(async () => {
  dev = await startDev();
});
const workers: Worker[] = [];
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

scenario("priority_claim_order", async () => {
  const c = new Client(dev.url, { queue: queueName("prio") });
  const ids = new Map<number, string>();
  for (const p of [5, 3, 1, 4, 2]) ids.set(p, (await c.submit("job", { p }, { priority: p })).task.id);
  const plain = (await c.submit("job", { p: null })).task;
  assert.equal(plain.priority ?? 3, 3);
  const order: string[] = [];
  for (let i = 0; i < 6; i++) {
    const [claimed] = await c.claim({ maxTasks: 1 });
    assert.ok(claimed);
    order.push(claimed.task.id);
  }
  assert.deepEqual(order, [ids.get(1), ids.get(2), ids.get(3), plain.id, ids.get(4), ids.get(5)]);
  assert.equal((await c.get(ids.get(1)!)).priority, 1);
});

test("a queue's default priority and a schedule's apply", async () => {
  const c = new Client(dev.url, { queue: queueName("prio") });
  const q = queueName("prio-default");
  const d = c.in(q);
  assert.equal((await c.declareQueue(q, { priority: 2 })).queue.priority, 2);
  assert.equal((await d.submit("job")).task.priority, 2);
  assert.equal((await d.submit("job", undefined, { priority: 5 })).task.priority, 5);
  assert.equal((await d.createSchedule({ id: "nightly", taskType: "job", cron: "@hourly", priority: 1 })).priority, 1);
  const fire = await d.triggerSchedule("nightly");
  assert.equal((await d.get(fire.task_id!)).priority, 1);
});

test("a bad priority is refused naming it", async () => {
  const c = new Client(dev.url, { queue: queueName("prio-bad") });
  await assert.rejects(c.submit("job", undefined, { priority: 9 }), (e: unknown) => e instanceof BadRequestError && e.field === "priority");
  await assert.rejects(c.submit("job", undefined, { priority: 1.5 }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "priority");
});

scenario("trace_context_reaches_handler", async () => {
  const c = new Client(dev.url, { queue: queueName("trace") });
  const traced = (await c.submit("traced", { n: 1 }, { traceparent: TP, tracestate: "vendor=abc" })).task;
  assert.equal(traced.traceparent, TP);
  assert.equal(traced.tracestate, "vendor=abc");
  assert.equal((await c.get(traced.id)).traceparent, TP);
  const plain = (await c.submit("traced", { n: 2 })).task;
  assert.equal((await c.get(plain.id)).traceparent, undefined);
  const batch = await c.submitBatch([{ taskType: "traced" }, { taskType: "traced", traceparent: TP2 }], { traceparent: TP, tracestate: "v=1" });
  assert.deepEqual(
    batch.map((r) => r.task?.traceparent),
    [TP, TP2],
  );

  const seen = new Map<string, Pick<TaskContext, "traceparent" | "tracestate" | "traceHeaders">>();
  const w = new Worker(c, { waitMs: 1_000, logger: null, stopOnSignals: false });
  workers.push(w);
  w.handle("traced", (task, ctx) => {
    seen.set(task.id, { traceparent: ctx.traceparent, tracestate: ctx.tracestate, traceHeaders: ctx.traceHeaders });
  });
  void w.run();
  await eventually("the four tasks handled", async () => (seen.size === 4 ? true : undefined));
  await w.stop();
  assert.deepEqual(seen.get(traced.id), { traceparent: TP, tracestate: "vendor=abc", traceHeaders: { traceparent: TP, tracestate: "vendor=abc" } });
  assert.deepEqual(seen.get(plain.id), { traceparent: undefined, tracestate: undefined, traceHeaders: {} });
  assert.equal(seen.get(batch[1]!.task!.id)?.traceparent, TP2);
});

test("a claim the queue's rate limit holds back answers no task and how long to wait; the worker waits it out", async () => {
  const name = queueName("limited");
  const c = new Client(dev.url, { queue: name });
  const { queue } = await c.declareQueue(name, { maxPerSecond: 0.5, burst: 1 }); // one task every 2 seconds
  assert.equal(queue.max_per_second, 0.5);
  assert.equal(queue.burst, 1);
  const ids = new Set<string>();
  for (let n = 0; n < 3; n++) ids.add((await c.submit("job", { n })).task.id);
  const first = await c.claimHeld({ maxTasks: 1 });
  assert.equal(first.tasks.length, 1);
  assert.equal(first.retryAfterMs, undefined);
  const held = await c.claimHeld({ maxTasks: 1 });
  assert.deepEqual(held.tasks, []);
  assert.ok(held.retryAfterMs !== undefined && held.retryAfterMs > 0 && held.retryAfterMs <= 2000, `Retry-After ${held.retryAfterMs}ms`);
  assert.deepEqual(await c.claim({ maxTasks: 1 }), []);
  await c.complete(first.tasks[0]!.lease);

  const done: string[] = [];
  const w = new Worker(c, { waitMs: 0, idleBackoffMs: 10, maxIdleBackoffMs: 10, logger: null, stopOnSignals: false });
  workers.push(w);
  w.handle("job", (task) => {
    done.push(task.id);
  });
  void w.run();
  await eventually("the two other tasks", async () => (done.length === 2 ? true : undefined));
  await w.stop();
  assert.deepEqual(new Set([...done, first.tasks[0]!.task.id]), ids);
  const starts = (await Promise.all([...ids].map((id) => c.get(id)))).map((t) => Date.parse(t.started_at!)).sort((a, b) => a - b);
  for (let i = 1; i < starts.length; i++) assert.ok(starts[i]! - starts[i - 1]! >= 1900, `started ${starts.join(", ")}`);
});

test("a malformed traceparent is refused naming it", async () => {
  const c = new Client(dev.url, { queue: queueName("trace-bad") });
  await assert.rejects(c.submit("job", undefined, { traceparent: "00-not-a-trace-01" }), (e: unknown) => e instanceof BadRequestError && e.field === "traceparent");
  await assert.rejects(c.submit("job", undefined, { traceparent: "00-x\r\nevil: 1" }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "traceparent");
});

/** A server answering every claim 204, the first with Retry-After; it records when each came. */
async function heldBack(retryAfter: string, retryAfterMs?: string): Promise<{ url: string; claims: { path: string; at: number }[]; close: () => Promise<void> }> {
  const claims: { path: string; at: number }[] = [];
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      claims.push({ path: req.url ?? "", at: performance.now() });
      if (claims.length === 1) res.setHeader("Retry-After", retryAfter);
      if (claims.length === 1 && retryAfterMs !== undefined) res.setHeader("S3q-Retry-After-Ms", retryAfterMs);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const addr = srv.address();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return {
    url: `http://127.0.0.1:${addr.port}`,
    claims,
    close: () => new Promise<void>((r) => {
      srv.closeAllConnections();
      srv.close(() => r());
    }),
  };
}

test("a claim answered 204 with Retry-After returns how long to wait", async () => {
  const s = await heldBack("1.5");
  try {
    const c = new Client(s.url, { queue: "limited" });
    assert.deepEqual(await c.claimHeld({ maxTasks: 1 }), { tasks: [], retryAfterMs: 1500 });
    assert.deepEqual(await c.claimHeld({ maxTasks: 1 }), { tasks: [], retryAfterMs: undefined });
    assert.deepEqual(await c.claim(), []);
  } finally {
    await s.close();
  }
});

test("S3q-Retry-After-Ms is read before Retry-After", async () => {
  const s = await heldBack("1", "250");
  try {
    assert.deepEqual(await new Client(s.url, { queue: "limited" }).claimHeld(), { tasks: [], retryAfterMs: 250 });
  } finally {
    await s.close();
  }
});

test("the worker waits as long as a claim's Retry-After asks", async () => {
  // Without the header the next claim would come after idleBackoffMs (10ms);
  // with it, no sooner than Retry-After (1s). A lower bound: it holds on any machine.
  const s = await heldBack("1");
  try {
    const w = new Worker(new Client(s.url, { queue: "limited" }), { waitMs: 0, idleBackoffMs: 10, maxIdleBackoffMs: 10, logger: null, stopOnSignals: false });
    w.handle("job", () => undefined);
    void w.run();
    await eventually("three claims", async () => (s.claims.length >= 3 ? true : undefined));
    await w.stop();
    const [first, second] = s.claims;
    assert.equal(first!.path, "/queues/limited/claim");
    assert.ok(second!.at - first!.at >= 990, `the second claim came ${(second!.at - first!.at).toFixed(0)}ms after a Retry-After of 1s`);
  } finally {
    await s.close();
  }
});
