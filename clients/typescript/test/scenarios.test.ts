// The scenarios of contract/scenarios.json against a fresh s3q dev (the
// worker's graceful stop is in worker-stop.test.ts, the push delivery in
// push.test.ts), and the coverage test over every test file.

import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import { before, test } from "node:test";
import {
  BadRequestError,
  Client,
  ConflictError,
  LeaseError,
  NotFoundError,
  TaskAborted,
  Worker,
  newTaskId,

} from "@s3q/client";
import { eventually, pkgRoot, queueName, repoRoot, scenario, startDev, type Dev } from "./helpers.js";

let dev: Dev;
let client: Client;
before(async () => {
  dev = await startDev();
  client = new Client(dev.url, { retryBackoffMs: 20 });
});

/** A proxy in front of the dev server that drops the answer to the first submit (its request reaches the server). */
async function lossyProxy(target: string): Promise<{ url: string; submits: () => number; close: () => void }> {
  let submits = 0;
  const t = new URL(target);
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    const isSubmit = req.method === "POST" && /\/tasks$/.test(req.url ?? "");
    if (isSubmit) submits++;
    const drop = isSubmit && submits === 1;
    const up = httpRequest({ host: t.hostname, port: t.port, path: req.url, method: req.method, headers: req.headers }, (ur) => {
      if (drop) {
        ur.resume();
        ur.on("end", () => res.socket?.destroy());
        return;
      }
      res.writeHead(ur.statusCode ?? 502, ur.headers);
      ur.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const addr = srv.address();
  if (addr === null || typeof addr === "string") throw new Error("no address");
  return { url: `http://127.0.0.1:${addr.port}`, submits: () => submits, close: () => {
      srv.closeAllConnections();
      srv.close();
    },
  };
}

scenario("submit_retried_request_makes_one_task", async () => {
  const q = queueName("retried");
  const proxy = await lossyProxy(dev.url);
  try {
    const c = new Client(proxy.url, { queue: q, retryBackoffMs: 20 });
    // The first answer is lost on the way back: the client sends the same id again.
    const r = await c.submit("email.send", { to: "a@example.com" });
    assert.equal(proxy.submits(), 2, "the client retried the submit");
    assert.equal(r.replayed, true, "the retry answers the task its first attempt made");
    // Sent again by hand with the same id: the same task.
    const again = await client.in(q).submit("email.send", { to: "a@example.com" }, { id: r.task.id });
    assert.equal(again.task.id, r.task.id);
    assert.equal(again.replayed, true);
    const all = await client.in(q).list().all();
    assert.deepEqual(
      all.map((t) => t.id),
      [r.task.id],
    );
  } finally {
    proxy.close();
  }
});

scenario("submit_dedup_key", async () => {
  const c = client.in(queueName("dedup"));
  const a = await c.submit("report.build", { n: 1 }, { dedupKey: "report-2026-05" });
  const b = await c.submit("report.build", { n: 2 }, { dedupKey: "report-2026-05" });
  assert.notEqual(a.task.id, undefined);
  assert.equal(b.deduplicated, true);
  assert.equal(b.task.id, a.task.id);
  assert.equal(b.status, 200);
  assert.equal(a.status, 201);
});

scenario("lease_operation_replayed", async () => {
  const c = client.in(queueName("replay"));
  await c.submit("t", { x: 1 });
  const [claimed] = await c.claim({ leaseFor: 60_000 });
  assert.ok(claimed);
  const first = await c.complete(claimed.lease, { ok: true });
  assert.equal(first.status, "completed");
  const second = await c.complete(claimed.lease, { ok: true });
  assert.equal(second.status, "completed");
  assert.deepEqual(second.output, { ok: true });
  await assert.rejects(c.complete(claimed.lease, { ok: false }), (err: unknown) => {
    assert.ok(err instanceof ConflictError, `a conflict, got ${String(err)}`);
    assert.equal(err.status, 409);
    assert.equal(err.retryable, false);
    return true;
  });
});

scenario("cancel_reaches_handler", async () => {
  const c = client.in(queueName("cancel"));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let reason: unknown;
  // A lease of 5 minutes: the heartbeat comes every 100s; the cancel is seen by the worker's read of the task (cancelPollMs).
  const w = new Worker(c, { leaseForMs: 300_000, cancelPollMs: 500, waitMs: 1_000, logger: null, stopOnSignals: false });
  w.handle("slow.job", async (_task, { signal }) => {
    started();
    await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
    reason = signal.reason;
    throw signal.reason;
  });
  const run = w.run();
  const { task } = await c.submit("slow.job", {});
  await running;
  const asked = await c.cancel(task.id);
  assert.equal(asked.cancel_requested, true);
  const done = await eventually("the task cancelled", async () => {
    const t = await c.get(task.id);
    return t.status === "cancelled" ? t : undefined;
  });
  assert.equal(done.status, "cancelled");
  assert.ok(reason instanceof TaskAborted);
  assert.equal(reason.kind, "cancel_requested");
  await w.stop();
  await run;
});

scenario("ttl_expiry", async () => {
  const c = client.in(queueName("ttl"));
  const { task } = await c.submit("t", {}, { ttl: 300 }); // 300 ms
  assert.ok(task.expires_at);
  await eventually(
    "the task read as expired",
    async () => {
      const t = await c.get(task.id);
      return t.status === "expired" ? t : undefined;
    },
    10_000,
  );
  assert.deepEqual(await c.claim(), []);
  assert.equal((await c.get(task.id)).status, "expired");
});

scenario("dead_letter_and_retry", async () => {
  const c = client.in(queueName("dlq"));
  const { task } = await c.submit("flaky", {}, { maxAttempts: 1 });
  const [claimed] = await c.claim();
  assert.ok(claimed);
  const failed = await c.fail(claimed.lease, "boom");
  assert.equal(failed.status, "failed");
  assert.equal(failed.last_error, "boom");
  // Until the sweep (every second here) has published its Task Dead-Lettered
  // event, a retry is refused as invalid_state; then it goes through.
  const again = await eventually("the retry accepted", async () => {
    try {
      return await c.retry(task.id);
    } catch (err) {
      if (err instanceof ConflictError && err.code === "invalid_state") return undefined;
      throw err;
    }
  });
  assert.equal(again.status, "pending");
  const w = new Worker(c, { waitMs: 1_000, logger: null, stopOnSignals: false });
  w.handle("flaky", () => ({ fixed: true }));
  const run = w.run();
  const done = await eventually("the retried task completed", async () => {
    const t = await c.get(task.id);
    return t.status === "completed" ? t : undefined;
  });
  assert.deepEqual(done.output, { fixed: true });
  await w.stop();
  await run;
});

scenario("schedule_in_time_zone", async () => {
  const c = client.in(queueName("sched"));
  const s = await c.createSchedule({ id: "digest", taskType: "digest.send", cron: "0 9 * * 1-5", timezone: "Europe/Paris", input: { kind: "daily" } });
  assert.equal(s.id, "digest");
  const read: Record<string, unknown> = { ...(await c.getSchedule("digest")) };
  assert.equal(read.timezone, "Europe/Paris");
  const fire = await c.triggerSchedule("digest");
  assert.ok(fire.task_id, "the fire made a task");
  const fires = await c.scheduleHistory("digest").all();
  assert.ok(
    fires.some((f) => f.task_id === fire.task_id),
    `the history holds the fire of ${fire.task_id}`,
  );
  const made = await c.get(fire.task_id);
  assert.equal(made.task_type, "digest.send");
});

scenario("queue_pause_resume", async () => {
  const name = queueName("pause");
  const c = client.in(name);
  await c.declareQueue(name);
  const { task } = await c.submit("t", {});
  const paused = await c.pauseQueue();
  assert.equal(paused.paused, true);
  assert.deepEqual(await c.claim(), []);
  await c.resumeQueue();
  const got = await c.claim();
  assert.equal(got.length, 1);
  assert.equal(got[0]?.task.id, task.id);
});

scenario("queue_purge", async () => {
  const c = client.in(queueName("purge"));
  const a = await c.submit("t", { n: 1 });
  const b = await c.submit("t", { n: 2 });
  const res = await c.purge({ status: "pending" });
  assert.equal(res.op, "purge");
  assert.deepEqual([...res.task_ids].sort(), [a.task.id, b.task.id].sort());
  for (const id of [a.task.id, b.task.id]) {
    await assert.rejects(c.get(id), NotFoundError);
  }
});

scenario("list_pages_to_end", async () => {
  const c = client.in(queueName("list"));
  const ids = new Set<string>();
  for (let i = 0; i < 7; i++) ids.add((await c.submit("t", { i })).task.id);
  const seen: string[] = [];
  for await (const t of c.list({ limit: 2 })) seen.push(t.id);
  assert.equal(seen.length, 7, "every task once");
  assert.deepEqual(new Set(seen), ids);
  const first = await c.list({ limit: 2 }).page();
  assert.equal(first.items.length, 2);
  assert.ok(first.nextCursor, "a first page of 2 out of 7 has a cursor");
});

scenario("error_bad_request", async () => {
  await assert.rejects(client.submit("not a task type!", {}), (err: unknown) => {
    assert.ok(err instanceof BadRequestError, String(err));
    assert.equal(err.status, 400);
    assert.equal(err.code, "invalid_input");
    assert.equal(err.field, "task_type");
    assert.ok(err.message.length > 0);
    assert.equal(err.retryable, false);
    return true;
  });
});

scenario("error_not_found", async () => {
  await assert.rejects(client.get(newTaskId()), (err: unknown) => {
    assert.ok(err instanceof NotFoundError, String(err));
    assert.equal(err.status, 404);
    assert.equal(err.kind, "not_found");
    return true;
  });
});

scenario("error_conflict", async () => {
  const c = client.in(queueName("conflict"));
  const id = newTaskId();
  await c.submit("t", { n: 1 }, { id });
  await assert.rejects(c.submit("t", { n: 2 }, { id }), (err: unknown) => {
    assert.ok(err instanceof ConflictError, String(err));
    assert.ok(!(err instanceof LeaseError));
    assert.equal(err.status, 409);
    assert.equal(err.kind, "conflict");
    return true;
  });
});

scenario("error_lease", async () => {
  const c = client.in(queueName("lease"));
  await c.submit("t", {});
  const [claimed] = await c.claim({ leaseFor: 60_000 });
  assert.ok(claimed);
  const wrong = { ...claimed.lease, token: "not-the-token" };
  await assert.rejects(c.heartbeat(wrong), (err: unknown) => {
    assert.ok(err instanceof LeaseError, String(err));
    assert.equal(err.code, "lease_mismatch");
    assert.equal(err.retryable, false);
    return true;
  });
  await c.complete(claimed.lease, null);
  await assert.rejects(c.heartbeat(claimed.lease), (err: unknown) => {
    assert.ok(err instanceof LeaseError, String(err));
    assert.equal(err.kind, "lease");
    assert.equal(err.retryable, false);
    return true;
  });
});

test("every scenario of contract/scenarios.json has a test, and every scenario test names one", () => {
  const doc = JSON.parse(readFileSync(`${repoRoot}contract/scenarios.json`, "utf8")) as { scenarios: { name: string }[] };
  const want = new Set(doc.scenarios.map((s) => s.name));
  const have = new Set<string>();
  for (const f of readdirSync(`${pkgRoot}test`)) {
    if (!f.endsWith(".ts")) continue;
    for (const m of readFileSync(`${pkgRoot}test/${f}`, "utf8").matchAll(/\bscenario\("([^"]+)"/g)) have.add(m[1]!);
  }
  assert.deepEqual([...want].filter((n) => !have.has(n)), [], "scenarios without a test");
  assert.deepEqual([...have].filter((n) => !want.has(n)), [], "tests naming an unknown scenario");
});

