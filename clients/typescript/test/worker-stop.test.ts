// The worker under SIGTERM with a task in flight, as a child process.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { before, test } from "node:test";
import { Client } from "@s3q/client";
import { eventually, queueName, scenario, startDev, type Dev } from "./helpers.js";

let dev: Dev;
before(async () => {
  dev = await startDev();
});

const fixture = fileURLToPath(new URL("./fixtures/stop-worker.js", import.meta.url));

/** Starts the worker process; resolves its output and exit once it exits. */
function startWorker(queue: string, env: Record<string, string>) {
  const proc = spawn(process.execPath, [fixture], { env: { ...process.env, S3Q_URL: dev.url, QUEUE: queue, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout.on("data", (b: Buffer) => (out += b.toString()));
  proc.stderr.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  return { proc, output: () => out, exited };
}

scenario("worker_graceful_stop", async () => {
  const q = queueName("stop");
  const c = new Client(dev.url, { queue: q });
  const { task } = await c.submit("slow.job", {});
  const w = startWorker(q, { HOLD_MS: "1500", GRACE_MS: "20000" });
  await eventually("the handler started", async () => (w.output().includes(`started ${task.id}`) ? true : undefined));
  w.proc.kill("SIGTERM");
  assert.equal(await w.exited, 0, w.output());
  assert.match(w.output(), /stopped/);
  // The task in flight finished within the grace: completed, once.
  const t = await c.get(task.id);
  assert.equal(t.status, "completed", w.output());
  assert.deepEqual(t.output, { done: task.id });
  assert.equal(t.attempt, 1);
  assert.equal(w.output().split(`started ${task.id}`).length - 1, 1, "the handler ran once");
});

test("a worker stopped with a task that outlasts the grace hands it back, and the next worker completes it", async () => {
  const q = queueName("handback");
  const c = new Client(dev.url, { queue: q });
  const { task } = await c.submit("slow.job", {});
  const w = startWorker(q, { HOLD_MS: "60000", GRACE_MS: "300" });
  await eventually("the handler started", async () => (w.output().includes(`started ${task.id}`) ? true : undefined));
  w.proc.kill("SIGTERM");
  assert.equal(await w.exited, 0, w.output());
  const back = await c.get(task.id);
  assert.equal(back.status, "pending", "handed back, not lost");
  const w2 = startWorker(q, { HOLD_MS: "10", GRACE_MS: "5000" });
  const done = await eventually("the next worker completed it", async () => {
    const t = await c.get(task.id);
    return t.status === "completed" ? t : undefined;
  });
  assert.deepEqual(done.output, { done: task.id });
  w2.proc.kill("SIGTERM");
  assert.equal(await w2.exited, 0, w2.output());
});
