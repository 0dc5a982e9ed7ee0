// The README's TypeScript blocks (compiled from readme/, which
// scripts/snippets.mjs writes), run against a fresh s3q dev as a reader
// would run them.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { before, test } from "node:test";
import { Client } from "@s3q/client";
import { eventually, freePort, queueName, startDev, type Dev } from "./helpers.js";

let dev: Dev;
before(async () => {
  dev = await startDev();
});

function run(name: string, env: Record<string, string> = {}) {
  const file = fileURLToPath(new URL(`../readme/${name}.js`, import.meta.url));
  const proc = spawn(process.execPath, [file], { env: { ...process.env, S3Q_URL: dev.url, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout.on("data", (b: Buffer) => (out += b.toString()));
  proc.stderr.on("data", (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
  return { proc, output: () => out, exited };
}

test("README: the client block submits and lists; the worker block completes the task and stops on SIGTERM", async () => {
  const c = run("client");
  assert.equal(await c.exited, 0, c.output());
  const id = /submitted (\S+) pending/.exec(c.output())?.[1];
  assert.ok(id, c.output());
  assert.match(c.output(), new RegExp(`pending ${id}`));

  const emails = new Client(dev.url, { queue: "emails" });
  const bad = (await emails.submit("email.send", {})).task;
  const w = run("worker");
  const done = await eventually("the README's task completed", async () => {
    const t = await emails.get(id);
    return t.status === "completed" ? t : undefined;
  });
  assert.equal((done.output as { sent_to: string }).sent_to, "a@example.com");
  const failed = await eventually("the task without an address failed", async () => {
    const t = await emails.get(bad.id);
    return t.status === "failed" ? t : undefined;
  });
  assert.equal(failed.attempt, 1, "Permanent: no retry");
  w.proc.kill("SIGTERM");
  assert.equal(await w.exited, 0, w.output());
});

test("README: the push block is a push target s3q dev delivers to", async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const queue = queueName("hooks");
  const p = run("push", { TARGET_URL: url, QUEUE: queue });
  try {
    const c = new Client(dev.url, { queue });
    await c.declareQueue(queue, { target: { url, secret: "dev" } });
    const { task } = await c.submit("email.send", { to: "c@example.com" });
    const done = await eventually("the pushed task completed", async () => {
      const t = await c.get(task.id);
      return t.status === "completed" ? t : undefined;
    });
    assert.deepEqual(done.output, { sent_to: "c@example.com" });
  } finally {
    p.proc.kill("SIGTERM");
  }
});

test("docs/clients.md: the queues block declares a rate limit, schedules, refuses bad input by type and cancels a running task", async () => {
  const d = run("docs-queues");
  assert.equal(await d.exited, 0, d.output());
  assert.match(d.output(), /refused: expiresAt/);
  assert.match(d.output(), /server said: 400 invalid_input priority/);
  assert.match(d.output(), /now cancelled/);
  const c = new Client(dev.url, { queue: "reports" });
  const q = await c.getQueue("reports");
  assert.deepEqual([q.max_per_second, q.burst], [2, 1]);
  const fired = (await c.scheduleHistory("nightly").all())[0];
  assert.ok(fired?.task_id, "the trigger made a task");
  const t = await c.get(fired.task_id);
  assert.deepEqual([t.status, t.priority], ["cancelled", 2]);
  assert.equal((await c.list({ status: "pending" }).all()).length, 2, "the delayed and the scheduled report");
});
