// Bad arguments are refused before any request, naming the argument; the
// client's retries; SigV4 only for AWS URLs.

import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { after, before, test } from "node:test";
import { Client, InvalidArgumentError, newTaskId, S3qError, UnavailableError } from "@s3q/client";

let requests: { method: string; url: string; body: string; headers: IncomingMessage["headers"] }[] = [];
let answer: (req: IncomingMessage, res: ServerResponse, body: string) => void = (_req, res) => {
  res.writeHead(201, { "content-type": "application/json" });
  res.end(JSON.stringify({ task: { id: "x" } }));
};
const srv = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    requests.push({ method: req.method ?? "", url: req.url ?? "", body, headers: req.headers });
    answer(req, res, body);
  });
});
let url = "";
before(async () => {
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const a = srv.address();
  if (a === null || typeof a === "string") throw new Error("no address");
  url = `http://127.0.0.1:${a.port}`;
});
after(() => {
  srv.closeAllConnections();
  srv.close();
});

async function refused(p: () => Promise<unknown>, field: string) {
  requests = [];
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof InvalidArgumentError, String(err));
    assert.ok(err instanceof S3qError);
    assert.equal(err.kind, "invalid_argument");
    assert.equal(err.field, field);
    assert.equal(err.status, 0);
    assert.match(err.message, new RegExp(field.replace(/[[\].]/g, "\\$&")));
    return true;
  });
  assert.equal(requests.length, 0, "no request was sent");
}

test("bad submit arguments are refused before any request, naming the argument", async () => {
  const c = new Client(url);
  await refused(() => c.submit("t", {}, { ttl: "1h", expiresAt: new Date(Date.now() + 1000) }), "expiresAt");
  await refused(() => c.submit("t", {}, { delay: 1000, scheduleAt: "2030-01-01T00:00:00Z" }), "scheduleAt");
  await refused(() => c.submit("t", {}, { expiresAt: new Date("nope") }), "expiresAt");
  await refused(() => c.submit("t", {}, { scheduleAt: "tomorrow" }), "scheduleAt");
  await refused(() => c.submit("t", {}, { scheduleAt: "2030-01-01T00:00:00" }), "scheduleAt"); // no zone
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  await refused(() => c.submit("t", cyclic), "input");
  await refused(() => c.submit("t", { n: 10n }), "input");
  await refused(() => c.submit("t", () => 1), "input");
  await refused(() => c.submit("t", {}, { ttl: -5 }), "ttl");
  await refused(() => c.submit("t", {}, { ttl: Number.NaN }), "ttl");
  await refused(() => c.submit("t", {}, { delay: "soon" }), "delay");
  await refused(() => c.submit("t", {}, { maxAttempts: 1.5 }), "maxAttempts");
  await refused(() => c.submit("", {}), "taskType");
  await refused(() => c.submitBatch([{ taskType: "a" }, { taskType: "b", ttl: 1, expiresAt: new Date() }]), "tasks[1].expiresAt");
  await refused(() => c.get(""), "id");
  await refused(() => c.claim({ leaseFor: -1 }), "leaseFor");
  await refused(() => c.complete({ task_id: "x", token: "t", expires_at: "" }, { n: 1n }), "output");
  await refused(() => c.heartbeat({ task_id: "x", token: "", expires_at: "" }), "lease.token");
  await refused(() => c.scheduleHistory("s", { since: "yesterday" }).page(), "since");
  assert.throws(() => new Client("ftp://example.com"), InvalidArgumentError);
});

test("durations: milliseconds as numbers, strings as the API spells them; times as RFC 3339", async () => {
  const c = new Client(url);
  requests = [];
  await c.submit("t", { a: 1 }, { ttl: 90_000, delay: "30m", expiresAt: undefined, scheduleAt: undefined, id: "01943a5e-0000-7000-8000-000000000001" });
  await c.submit("t", null, { expiresAt: new Date(Date.UTC(2030, 0, 2, 3, 4, 5)), scheduleAt: "2030-01-01T00:00:00+02:00" });
  const [a, b] = requests.map((r) => JSON.parse(r.body) as Record<string, unknown>);
  assert.deepEqual(a, { id: "01943a5e-0000-7000-8000-000000000001", task_type: "t", input: { a: 1 }, ttl: "90000ms", delay: "30m" });
  assert.equal(b?.expires_at, "2030-01-02T03:04:05.000Z");
  assert.equal(b?.schedule_at, "2030-01-01T00:00:00+02:00");
  assert.equal(b?.input, null);
  assert.match(String(b?.id), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, "a UUIDv7 made by the client");
  assert.equal(requests[0]?.url, "/queues/default/tasks");
  assert.equal(requests[0]?.headers.authorization, undefined, "plain HTTP is not signed");
});

test("a submit retried after 503s and lost answers sends the same id each time", async () => {
  let n = 0;
  answer = (_req, res) => {
    n++;
    if (n === 1) {
      res.writeHead(503, { "retry-after": "0", "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "throttled", message: "slow down" } }));
    } else if (n === 2) {
      res.socket?.destroy();
    } else {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ task: { id: "x" }, replayed: true }));
    }
  };
  try {
    requests = [];
    const r = await new Client(url, { retryBackoffMs: 5 }).submit("t", {});
    assert.equal(r.replayed, true);
    assert.equal(requests.length, 3);
    const ids = new Set(requests.map((x) => (JSON.parse(x.body) as { id: string }).id));
    assert.equal(ids.size, 1, "one id across the retries");
    // Out of retries: the last error, retryable.
    n = 0;
    answer = (_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "internal", message: "bug" } }));
    };
    await assert.rejects(new Client(url, { retryBackoffMs: 1, maxRetries: 2 }).submit("t", {}), (err: unknown) => err instanceof UnavailableError && err.status === 500 && err.retryable);
    // A claim is never retried (a lost answer's lease lapses).
    requests = [];
    await assert.rejects(new Client(url, { retryBackoffMs: 1 }).claim(), UnavailableError);
    assert.equal(requests.length, 1);
  } finally {
    answer = (_req, res) => {
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ task: { id: "x" } }));
    };
  }
});

test("a client of an AWS URL signs with SigV4 , with the region of its host or the region option", async () => {
  requests = [];
  const c = new Client(url, { sigv4: true, region: "eu-west-1", credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "secret" } });
  await c.submit("t", {});
  const h = requests[0]?.headers;
  assert.match(String(h?.authorization), /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/execute-api\/aws4_request, SignedHeaders=.*host.*, Signature=[0-9a-f]{64}$/);
  assert.ok(h?.["x-amz-date"]);
  assert.ok(h?.["x-amz-content-sha256"] === undefined || typeof h["x-amz-content-sha256"] === "string");
  // Without credentials: the AWS SDK's default chain (here, the environment's).
  const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY, profile: process.env.AWS_PROFILE };
  process.env.AWS_ACCESS_KEY_ID = "AKIDFROMENV";
  process.env.AWS_SECRET_ACCESS_KEY = "secret";
  delete process.env.AWS_PROFILE;
  try {
    requests = [];
    await new Client(url, { sigv4: true, region: "us-east-2" }).get("01943a5e-0000-7000-8000-000000000001");
    assert.match(String(requests[0]?.headers.authorization), /Credential=AKIDFROMENV\/\d{8}\/us-east-2\/execute-api\//);
  } finally {
    for (const [k, v] of [["AWS_ACCESS_KEY_ID", saved.id], ["AWS_SECRET_ACCESS_KEY", saved.secret], ["AWS_PROFILE", saved.profile]] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  const env = { a: process.env.AWS_REGION, b: process.env.AWS_DEFAULT_REGION };
  delete process.env.AWS_REGION;
  delete process.env.AWS_DEFAULT_REGION;
  try {
    assert.throws(() => new Client("https://abc.execute-api.amazonaws.com", {}), (err: unknown) => err instanceof InvalidArgumentError && err.field === "region");
    assert.doesNotThrow(() => new Client("https://abc.execute-api.eu-west-3.amazonaws.com/prod", { credentials: { accessKeyId: "a", secretAccessKey: "b" } }));
  } finally {
    if (env.a !== undefined) process.env.AWS_REGION = env.a;
    if (env.b !== undefined) process.env.AWS_DEFAULT_REGION = env.b;
  }
  assert.equal(newTaskId(0).slice(0, 13), "00000000-0000");
});
