// Every operation of the document has a Client method, and every method
// named calls it (live, against s3q dev, for the ones the scenarios do not
// already make).

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { before, test } from "node:test";
import { Client, NotFoundError, type Route } from "@s3q/client";
import { OPERATIONS } from "../src/operations.js";
import { eventually, queueName, repoRoot, startDev, type Dev } from "./helpers.js";

interface Doc {
  paths: Record<string, Record<string, { operationId?: string }>>;
}
const doc = JSON.parse(readFileSync(`${repoRoot}shared/api/openapi.json`, "utf8")) as Doc;

test("every operation of the document is a Client method, at its route", () => {
  const inDoc = new Map<string, Route>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(ops)) {
      if (!["get", "post", "put", "delete"].includes(m)) continue;
      assert.ok(op.operationId, `${m} ${path} has an operationId`);
      inDoc.set(op.operationId, `${m.toUpperCase()} ${path}` as Route);
    }
  }
  const table = new Map(Object.entries(OPERATIONS).map(([id, o]) => [id, o.route as Route]));
  assert.deepEqual([...inDoc.keys()].filter((id) => !table.has(id)), [], "operations without a method");
  assert.deepEqual([...table.keys()].filter((id) => !inDoc.has(id)), [], "methods of operations the document no longer has");
  for (const [id, route] of inDoc) assert.equal(table.get(id), route, id);
  for (const o of Object.values(OPERATIONS)) assert.equal(typeof Client.prototype[o.method], "function", o.method);
});

let dev: Dev;
let client: Client;
before(async () => {
  dev = await startDev();
  client = new Client(dev.url);
});

test("the operations the scenarios leave out work end to end", async () => {
  const name = queueName("ops");
  const c = client.in(name);
  const { queue, created } = await c.declareQueue(name, { maxAttempts: 5, timeout: "2m", ttl: 3_600_000 });
  assert.equal(created, true);
  assert.equal(queue.max_attempts, 5);
  assert.equal((await c.getQueue(name)).name, name);
  assert.ok((await c.listQueues().all()).some((q) => q.name === name));

  const batch = await c.submitBatch([
    { taskType: "a", input: { n: 1 } },
    { taskType: "b", input: { n: 2 }, delay: "1h" },
    { taskType: "not valid!", input: {} },
  ]);
  assert.equal(batch.length, 3);
  assert.ok(batch[0]?.task && batch[1]?.task);
  assert.equal(batch[2]?.error?.field, "tasks[2].task_type");
  const id = batch[0]!.task!.id;
  const [claimed] = await c.claim({ taskTypes: ["a"], leaseFor: 60_000 });
  assert.equal(claimed?.task.id, id);
  const hb = await c.heartbeat(claimed!.lease, { leaseFor: 120_000 });
  assert.equal(hb.task.status, "running");
  const back = await c.reschedule(hb.lease, { delay: 0 });
  assert.equal(back.status, "pending");
  const [again] = await c.claim({ taskTypes: ["a"], wait: 2_000 });
  assert.equal(again?.task.id, id);
  assert.equal((await c.complete(again!.lease, "done")).output, "done");
  assert.ok((await c.history(id).all()).length >= 3, "versions of the record");

  const pendingId = batch[1]!.task!.id;
  const art = await c.createArtifact(pendingId, "report.csv", 10);
  assert.ok(art.upload_url);
  const put = await fetch(art.upload_url!, { method: "PUT", body: "a,b\n1,2\n3,", headers: Object.fromEntries(Object.entries(art.headers ?? {}).map(([k, v]) => [k, v.join(",")])) });
  assert.ok(put.ok, `upload ${put.status}`);
  assert.ok((await c.getArtifact(pendingId, "report.csv")).download_url);
  assert.equal((await c.expire(pendingId)).status, "expired");

  // A submit that waits for its outcome: with no worker, the wait runs out (202, still pending).
  const waited = await client.in(queueName("wait")).submit("nobody.runs.this", {}, { wait: 300 });
  assert.equal(waited.status, 202);
  assert.equal(waited.task.status, "pending");

  const stats = await c.queueStats();
  assert.equal(stats.queue, name);
  const t = (await c.submit("c", {})).task;
  const dry = await c.bulkCancel({ status: "pending", dryRun: true });
  assert.equal(dry.dry_run, true);
  assert.ok(dry.task_ids.includes(t.id));
  assert.equal((await c.bulkCancel({ status: "pending" })).changed, 1);
  assert.equal((await c.get(t.id)).status, "cancelled");
  assert.equal((await c.bulkRetry({ status: "cancelled" })).changed, 1);
  assert.equal((await c.bulkExpire({ status: "pending" })).changed, 1);
  assert.ok((await c.list({ allQueues: true, status: "expired" }).all()).some((x) => x.id === t.id));

  await c.createSchedule({ id: "nightly", taskType: "n", cron: "@daily" });
  assert.equal((await c.updateSchedule("nightly", { taskType: "n", cron: "0 3 * * *" })).cron, "0 3 * * *");
  assert.equal((await c.pauseSchedule("nightly")).enabled, false);
  assert.equal((await c.resumeSchedule("nightly")).enabled, true);
  assert.deepEqual((await c.listSchedules().all()).map((s) => s.id), ["nightly"]);
  await c.deleteSchedule("nightly");
  await assert.rejects(c.getSchedule("nightly"), NotFoundError);

  await c.purge({ status: "completed" });
  await c.purge({ status: "expired" });
  await eventually("the queue empty enough to delete", async () => {
    try {
      await c.deleteQueue(name);
      return true;
    } catch {
      return undefined;
    }
  });
  await assert.rejects(c.getQueue(name), NotFoundError);
  const served = await c.openAPI();
  assert.equal(served.openapi, "3.1.0");
});
