// Push targets, live: an HTTP target (pushTarget) that s3q dev delivers to,
// signed deliveries verified, a tampered one refused before any handler
// runs; and a Node Lambda target (lambdaHandler) behind a local endpoint
// speaking Lambda's Invoke protocol, as the Node runtime answers it.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { Client, lambdaHandler, Permanent, pushTarget, PushVerifier, SignatureError, TaskAborted, type Handlers, type Push } from "@s3q/client";
import { eventually, queueName, scenario, startDev, type Dev } from "./helpers.js";

let dev: Dev;
let client: Client;

/** Handlers both targets run; runs counts their calls by task id. */
const runs = new Map<string, number>();
const handlers: Handlers = {
  "email.send": (task) => {
    runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
    return { sent_to: (task.input as { to: string }).to, by: "node" };
  },
  "email.bounce": (task) => {
    runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
    throw new Permanent("mailbox does not exist");
  },
  "email.flaky": (task) => {
    runs.set(task.id, (runs.get(task.id) ?? 0) + 1);
    throw new Error("smtp timeout");
  },
};

/** A captured delivery: its exact body and headers. */
interface Captured {
  body: Buffer;
  headers: Record<string, string>;
}
const captured: Captured[] = [];

async function listen(srv: Server): Promise<string> {
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const a = srv.address();
  if (a === null || typeof a === "string") throw new Error("no address");
  return `http://127.0.0.1:${a.port}`;
}

let httpURL = "";
let httpQueue = "";

/** A local Lambda endpoint (POST /2015-03-31/functions/{name}/invocations) running fn as the Node runtime does. */
function lambdaEndpoint(fn: (event: Push) => Promise<unknown>): Server {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      void (async () => {
        const event = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Push;
        try {
          const out = await fn(event);
          res.writeHead(200, { "content-type": "application/json" });
          res.end(JSON.stringify(out ?? null));
        } catch (err) {
          const e = err instanceof Error ? err : new Error(String(err));
          res.writeHead(200, { "content-type": "application/json", "x-amz-function-error": "Unhandled" });
          res.end(JSON.stringify({ errorType: e.name, errorMessage: e.message, trace: [] }));
        }
      })();
    });
  });
}

const servers: Server[] = [];
after(() => {
  for (const s of servers) {
    s.closeAllConnections();
    s.close();
  }
});

before(async () => {
  // The Lambda endpoint first: s3q dev takes it at start.
  const lambda = lambdaEndpoint(lambdaHandler(handlers));
  servers.push(lambda);
  const lambdaURL = await listen(lambda);
  dev = await startDev(["--lambda-endpoint", lambdaURL]);
  client = new Client(dev.url);

  httpQueue = queueName("hooks");
  const srv = createServer();
  servers.push(srv);
  httpURL = `${await listen(srv)}/s3q`;
  const target = pushTarget(handlers, { secret: "dev-secret", url: httpURL, queue: httpQueue });
  srv.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      captured.push({ body: Buffer.concat(chunks), headers });
    });
    target(req, res);
  });
});

scenario("push_delivery_verified", async () => {
  const c = client.in(httpQueue);
  // s3q dev signs URL deliveries with --push-secret (dev-secret), named "dev".
  await c.declareQueue(httpQueue, { target: { url: httpURL, secret: "dev" } });
  const { task } = await c.submit("email.send", { to: "a@example.com" });
  const done = await eventually("the pushed task completed", async () => {
    const t = await c.get(task.id);
    return t.status === "completed" ? t : undefined;
  });
  assert.deepEqual(done.output, { sent_to: "a@example.com", by: "node" });
  assert.equal(runs.get(task.id), 1);

  // The delivery as it arrived verifies with the target's verifier.
  const d = captured.find((x) => x.headers["s3q-task-id"] === task.id);
  assert.ok(d, "the delivery was captured");
  const v = new PushVerifier({ secret: "dev-secret", url: httpURL, queue: httpQueue });
  assert.equal(v.verify(d.body, d.headers).taskId, task.id);

  // Tampered: the body changed, the signature kept. Refused (401), no handler runs.
  const tampered = Buffer.from(d.body.toString("utf8").replace("a@example.com", "evil@example.com"));
  const before = runs.get(task.id);
  const r = await fetch(httpURL, { method: "POST", headers: { ...d.headers, "content-length": String(tampered.length) }, body: tampered });
  assert.equal(r.status, 401);
  assert.throws(() => v.verify(tampered, d.headers), (err: unknown) => err instanceof SignatureError && err.reason === "signature");
  // Another queue's target refuses it too, with the same secret.
  assert.throws(
    () => new PushVerifier({ secret: "dev-secret", url: httpURL, queue: "other" }).verify(d.body, d.headers),
    (err: unknown) => err instanceof SignatureError && err.reason === "queue",
  );
  // Stale: outside the tolerance.
  assert.throws(
    () => v.verify(d.body, d.headers, { now: new Date(Date.now() + 10 * 60 * 1000) }),
    (err: unknown) => err instanceof SignatureError && err.reason === "bad_time",
  );
  // The same delivery again gets the first answer; the handler does not run again.
  const again = await fetch(httpURL, { method: "POST", headers: d.headers, body: d.body });
  assert.equal(again.status, 200);
  assert.deepEqual(await again.json(), { sent_to: "a@example.com", by: "node" });
  assert.equal(runs.get(task.id), before);
});

test("an HTTP target's Permanent fails the task without retry", async () => {
  const c = client.in(httpQueue);
  await c.declareQueue(httpQueue, { target: { url: httpURL, secret: "dev" } });
  const { task } = await c.submit("email.bounce", {}, { maxAttempts: 3 });
  const t = await eventually("the task failed", async () => {
    const t = await c.get(task.id);
    return t.status === "failed" ? t : undefined;
  });
  assert.equal(t.attempt, 1, "not retried");
  assert.match(t.last_error ?? "", /mailbox does not exist/);
});

test("a Node Lambda target completes a task with its handler's output", async () => {
  const q = queueName("lambda");
  const c = client.in(q);
  await c.declareQueue(q, { target: { lambda: "email-handler" } });
  const { task } = await c.submit("email.send", { to: "b@example.com" });
  const done = await eventually("the task completed", async () => {
    const t = await c.get(task.id);
    return t.status === "completed" ? t : undefined;
  });
  assert.deepEqual(done.output, { sent_to: "b@example.com", by: "node" });
});

test("a Node Lambda target's Permanent fails at once; a plain error is retried", async () => {
  const q = queueName("lambda-fail");
  const c = client.in(q);
  await c.declareQueue(q, { target: { lambda: "email-handler" } });
  const bounce = (await c.submit("email.bounce", {}, { maxAttempts: 3 })).task;
  const flaky = (await c.submit("email.flaky", {}, { maxAttempts: 2 })).task;
  const b = await eventually("the bounce failed", async () => {
    const t = await c.get(bounce.id);
    return t.status === "failed" ? t : undefined;
  });
  assert.equal(b.attempt, 1);
  const f = await eventually(
    "the flaky task failed its last attempt",
    async () => {
      const t = await c.get(flaky.id);
      return t.status === "failed" ? t : undefined;
    },
    30_000,
  );
  assert.equal(f.attempt, 2, "retried once");
  assert.match(f.last_error ?? "", /smtp timeout/);
});

test("lambdaHandler runs no handler after the deadline, and aborts one at it", async () => {
  let ran = 0;
  let reason: unknown;
  const h = lambdaHandler({
    slow: async (_t, { signal }) => {
      ran++;
      await new Promise<void>((r) => signal.addEventListener("abort", () => r()));
      reason = signal.reason;
      return "late";
    },
  });
  const task = { id: "t1", task_type: "slow", queue: "q", status: "running", attempt: 1, max_attempts: 3, available_at: "", created_at: "", updated_at: "", expires_at: null, timeout: "1m" } as const;
  const lease = { task_id: "t1", token: "x", expires_at: new Date(Date.now() + 60_000).toISOString() };
  await assert.rejects(h({ task, lease, deadline: new Date(Date.now() - 1).toISOString() }), /deadline/);
  assert.equal(ran, 0);
  assert.equal(await h({ task, lease, deadline: new Date(Date.now() + 100).toISOString() }), "late");
  assert.ok(reason instanceof TaskAborted && reason.kind === "deadline");
  await assert.rejects(h({ task: { ...task, task_type: "nope" }, lease, deadline: new Date(Date.now() + 1000).toISOString() }), (err: unknown) => err instanceof Error && err.name === "s3q.Permanent");
});
