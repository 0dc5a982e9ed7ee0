// The worker's outcomes and concurrency, against a fresh s3q dev.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Client, Permanent, Reschedule, TaskAborted, Worker } from "@s3q/client";
import { eventually, queueName, startDev, type Dev } from "./helpers.js";

let dev: Dev;
before(async () => {
  dev = await startDev();
});
const workers: Worker[] = [];
after(async () => {
  await Promise.all(workers.map((w) => w.stop()));
});

function start(c: Client, options: ConstructorParameters<typeof Worker>[1] = {}): Worker {
  const w = new Worker(c, { waitMs: 1_000, logger: null, stopOnSignals: false, ...options });
  workers.push(w);
  return w;
}

async function status(c: Client, id: string, want: string) {
  return eventually(`task ${id} ${want}`, async () => {
    const t = await c.get(id);
    return t.status === want ? t : undefined;
  });
}

test("a handler's Permanent dead-letters at once, a plain error is retried, a Reschedule gives the attempt back, an output JSON cannot encode fails", async () => {
  const c = new Client(dev.url, { queue: queueName("outcomes") });
  let flakyRuns = 0;
  const w = start(c);
  w.handle("bounce", () => {
    throw new Permanent("mailbox does not exist");
  });
  w.handle("flaky", () => {
    flakyRuns++;
    if (flakyRuns === 1) throw new Error("smtp timeout");
    return { ok: flakyRuns };
  });
  w.handle("later", () => {
    throw new Reschedule({ delay: "1h" });
  });
  w.handle("bigint", () => ({ n: 10n }));
  const bounce = (await c.submit("bounce", {})).task;
  const flaky = (await c.submit("flaky", {})).task;
  const later = (await c.submit("later", {})).task;
  const big = (await c.submit("bigint", {}, { maxAttempts: 3 })).task;
  void w.run();

  const b = await status(c, bounce.id, "failed");
  assert.equal(b.attempt, 1);
  assert.equal(b.last_error, "mailbox does not exist");
  const f = await status(c, flaky.id, "completed");
  assert.equal(f.attempt, 2, "retried once after the plain error");
  assert.deepEqual(f.output, { ok: 2 });
  const l = await eventually("the rescheduled task back to pending, an hour out", async () => {
    const t = await c.get(later.id);
    return t.status === "pending" && t.ended_by === "reschedule" ? t : undefined;
  });
  assert.ok(new Date(l.available_at).getTime() > Date.now() + 55 * 60_000, `available_at ${l.available_at}`);
  const g = await status(c, big.id, "failed");
  assert.match(g.last_error ?? "", /output/);
  assert.equal(g.attempt, 1, "no retry can mend an output that cannot be encoded");
});

test("a worker of concurrency 4 runs 4 handlers at once, each seeing its task's deadline", async () => {
  const c = new Client(dev.url, { queue: queueName("conc") });
  let running = 0;
  let peak = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const deadlines: (number | undefined)[] = [];
  const w = start(c, { concurrency: 4 });
  w.handle("job", async (_task, { deadline, remainingMs }) => {
    running++;
    peak = Math.max(peak, running);
    deadlines.push(deadline?.getTime());
    assert.ok((remainingMs() ?? 0) > 0);
    if (running === 4) release();
    await gate;
    running--;
    return null;
  });
  const ids = [];
  for (let i = 0; i < 4; i++) ids.push((await c.submit("job", { i }, { ttl: "1h" })).task.id);
  void w.run();
  for (const id of ids) await status(c, id, "completed");
  assert.equal(peak, 4);
  assert.equal(deadlines.length, 4);
  for (const d of deadlines) assert.ok(d !== undefined && d > Date.now() + 50 * 60_000);
});

test("a handler whose lease is lost sees its signal fire (lease_lost) and its result is dropped", async () => {
  const c = new Client(dev.url, { queue: queueName("lost") });
  let reason: unknown;
  const w = start(c, { leaseForMs: 1_500, cancelPollMs: -1 });
  w.handle("job", async (_task, { signal, lease }) => {
    // Someone else ends the lease (as a reclaim after expiry would): the next heartbeat finds it gone.
    await c.complete(lease, { by: "someone else" });
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    reason = signal.reason;
    return { by: "the handler" };
  });
  const { task } = await c.submit("job", {});
  void w.run();
  await eventually("the handler's signal fired", async () => (reason === undefined ? undefined : true));
  assert.ok(reason instanceof TaskAborted, String(reason));
  assert.equal(reason.kind, "lease_lost");
  const t = await c.get(task.id);
  assert.equal(t.status, "completed");
  assert.deepEqual(t.output, { by: "someone else" }, "the handler's result was dropped");
});
