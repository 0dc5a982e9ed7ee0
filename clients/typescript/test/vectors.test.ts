// Every vector of contract/push-signature-vectors.json: the signer's and the verifier's.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { PushVerifier, SignatureError, signDelivery } from "@s3q/client";
import { repoRoot } from "./helpers.js";

interface SignVector {
  name: string;
  secret: string;
  timestamp: number;
  method: string;
  url: string;
  queue: string;
  task_id: string;
  attempt: number;
  body_base64: string;
  signature: string;
}
interface VerifyVector {
  name: string;
  method: string;
  headers: Record<string, string>;
  body_base64: string;
  receiver: { url: string; queue: string; secrets: string[]; tolerance_seconds: number };
  now: number;
  ok: boolean;
  task_id?: string;
  attempt?: number;
  error?: string;
}
const vectors = JSON.parse(readFileSync(`${repoRoot}contract/push-signature-vectors.json`, "utf8")) as { sign: SignVector[]; verify: VerifyVector[] };

test("the vector file has sign and verify vectors", () => {
  assert.ok(vectors.sign.length > 0);
  assert.ok(vectors.verify.length > 0);
});

for (const v of vectors.sign) {
  test(`sign vector ${v.name}`, () => {
    const body = Buffer.from(v.body_base64, "base64");
    const got = signDelivery(v.secret, { timestamp: v.timestamp, method: v.method, url: v.url, queue: v.queue, taskId: v.task_id, attempt: v.attempt }, body);
    assert.equal(got, v.signature);
  });
}

for (const v of vectors.verify) {
  test(`verify vector ${v.name}`, () => {
    const [secret = "", previous] = v.receiver.secrets;
    const verifier = new PushVerifier({
      secret,
      ...(previous === undefined ? {} : { previousSecret: previous }),
      url: v.receiver.url,
      queue: v.receiver.queue,
      toleranceMs: v.receiver.tolerance_seconds * 1000,
    });
    const body = Buffer.from(v.body_base64, "base64");
    const run = () => verifier.verify(body, v.headers, { method: v.method, now: new Date(v.now * 1000) });
    if (v.ok) {
      const d = run();
      assert.equal(d.taskId, v.task_id);
      assert.equal(d.attempt, v.attempt);
    } else {
      assert.throws(run, (err: unknown) => {
        assert.ok(err instanceof SignatureError, String(err));
        assert.equal(err.reason, v.error);
        return true;
      });
    }
  });
}

test("a verifier takes the body as bytes, a string, or through a fetch Headers", () => {
  const v = vectors.verify.find((x) => x.ok && x.name === "ok");
  assert.ok(v);
  const verifier = new PushVerifier({ secret: v.receiver.secrets[0]!, url: v.receiver.url, queue: v.receiver.queue });
  const body = Buffer.from(v.body_base64, "base64");
  const now = new Date(v.now * 1000);
  assert.equal(verifier.verify(new Uint8Array(body), new Headers(v.headers), { now }).taskId, v.task_id);
  assert.equal(verifier.verify(body.toString("utf8"), v.headers, { now }).taskId, v.task_id);
});
