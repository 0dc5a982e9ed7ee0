// Push targets: the signature check of an HTTPS delivery (docs/push.md,
// "Signatures that bind"), an HTTP request listener that runs the worker's
// handlers for deliveries, and a Node Lambda handler made from the same
// handlers (the Lambda answer contract of docs/push.md).

import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorMessage, Permanent, Reschedule, TaskAborted, taskContext, type Handler } from "./handler.js";
import { isRecord } from "./errors.js";
import type { PushDelivery } from "./types.js";

/** How far a delivery's timestamp may be from now either way, by default: 5 minutes. */
export const DEFAULT_TOLERANCE_MS = 5 * 60 * 1000;

/** The errorType of a Lambda function error that must not be retried (a Permanent). */
export const PERMANENT_ERROR_TYPE = "s3q.Permanent";

/** The headers of a push delivery. */
export const HEADER_SIGNATURE = "s3q-signature";
export const HEADER_QUEUE = "s3q-queue";
export const HEADER_TASK_ID = "s3q-task-id";
export const HEADER_ATTEMPT = "s3q-attempt";

/** What a push target receives: the task, its lease and the deadline (RFC 3339) by which it must answer. */
export type Push = PushDelivery;

/** What a signature binds besides the body. */
export interface Delivery {
  /** Unix seconds. */
  timestamp: number;
  method: string;
  /** The target URL exactly as the queue declares it. */
  url: string;
  queue: string;
  taskId: string;
  attempt: number;
}

/** Why a delivery was refused, checked in this order (contract/push-signature-vectors.json). */
export type SignatureFailure =
  | "no_secret" // the verifier's (first) secret is empty: nothing verifies with it
  | "target" // the verifier has no url or no queue
  | "missing" // no S3q-Signature (one t= and a v1=), S3q-Queue, S3q-Task-Id, or a canonical positive S3q-Attempt
  | "bad_time" // t= is not a canonical decimal, or is further than the tolerance from now
  | "queue" // a delivery for another queue
  | "signature"; // no v1 value matches

/** A delivery whose signature does not verify: answer 401. */
export class SignatureError extends Error {
  constructor(readonly reason: SignatureFailure, message: string) {
    super(`s3q push: ${message}`);
    this.name = "SignatureError";
  }
}

/** What a target knows of the deliveries meant for it. */
export interface PushVerifierOptions {
  /** The value of the secret that signs the queue's deliveries (the SSM parameter target.secret names). */
  secret: string;
  /** The previous secret, still accepted while the secret is rotated. Defaults to none. */
  previousSecret?: string;
  /** The target URL exactly as the queue declares it (target.url), not as the request arrived behind a proxy. */
  url: string;
  /** The queue whose deliveries this target takes. */
  queue: string;
  /** How far the delivery's timestamp may be from now either way, in milliseconds (exactly that far is accepted). Defaults to DEFAULT_TOLERANCE_MS (5 minutes). */
  toleranceMs?: number;
}

/** Headers as node:http gives them, a fetch Headers, or a plain object (names compare case-insensitively). */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

const CANONICAL = /^[1-9][0-9]*$/;
const HEX64 = /^[0-9a-f]{64}$/;

/**
 * Checks HTTPS push deliveries: the S3q-Signature must be the HMAC-SHA256,
 * under the secret (or previousSecret), of the timestamp, the method, the
 * URL and queue the target was declared with, the task id and attempt of
 * the headers and the body's exact bytes, compared in constant time, with
 * the timestamp within the tolerance of now. Passes every vector of
 * contract/push-signature-vectors.json.
 */
export class PushVerifier {
  private readonly secrets: string[];
  private readonly url: string;
  private readonly queue: string;
  private readonly tolerance: number;

  constructor(options: PushVerifierOptions) {
    this.secrets = [options.secret, ...(options.previousSecret ? [options.previousSecret] : [])];
    this.url = options.url;
    this.queue = options.queue;
    this.tolerance = options.toleranceMs && options.toleranceMs > 0 ? options.toleranceMs : DEFAULT_TOLERANCE_MS;
  }

  /**
   * Verifies a delivery from its raw body (the exact bytes, before any
   * parsing) and headers; returns what the signature binds, or throws a
   * SignatureError. Treat (taskId, attempt) as the idempotency key: within
   * the window a delivery may arrive again.
   */
  verify(body: Uint8Array | string, headers: HeadersLike, options: { method?: string; now?: Date } = {}): Delivery {
    if (!this.secrets[0]) throw new SignatureError("no_secret", "no secret to verify with");
    if (!this.url || !this.queue) throw new SignatureError("target", "the target's url and queue are required to verify");
    const get = (name: string): string => {
      if (headers instanceof Headers) return headers.get(name) ?? "";
      let v = headers[name];
      if (v === undefined) v = Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
      return (Array.isArray(v) ? v.join(",") : v) ?? "";
    };
    const sig = parseSignature(get(HEADER_SIGNATURE));
    const queue = get(HEADER_QUEUE);
    const taskId = get(HEADER_TASK_ID);
    const attempt = get(HEADER_ATTEMPT);
    if (sig === undefined || queue === "" || taskId === "" || !CANONICAL.test(attempt)) {
      throw new SignatureError("missing", "missing S3q-Signature (t= and v1=), S3q-Queue, S3q-Task-Id or S3q-Attempt");
    }
    if (!CANONICAL.test(sig.ts)) throw new SignatureError("bad_time", "the timestamp is not a decimal number of seconds");
    const timestamp = Number(sig.ts);
    const now = (options.now ?? new Date()).getTime();
    if (Math.abs(now - timestamp * 1000) > this.tolerance) throw new SignatureError("bad_time", "timestamp outside the tolerance");
    if (queue !== this.queue) throw new SignatureError("queue", "delivery for another queue");
    const d: Delivery = { timestamp, method: options.method ?? "POST", url: this.url, queue: this.queue, taskId, attempt: Number(attempt) };
    const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
    for (const secret of this.secrets) {
      if (!secret) continue;
      const want = Buffer.from(mac(secret, sig.ts, d, attempt, raw).toString("hex"), "ascii");
      for (const s of sig.v1) {
        if (HEX64.test(s) && timingSafeEqual(want, Buffer.from(s, "ascii"))) return d;
      }
    }
    throw new SignatureError("signature", "signature mismatch");
  }
}

/** The S3q-Signature header value of a delivery, "t=…,v1=…" (for tests and tools; the dispatcher signs). */
export function signDelivery(secret: string, d: Delivery, body: Uint8Array | string): string {
  const raw = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  return `t=${d.timestamp},v1=${mac(secret, String(d.timestamp), d, String(d.attempt), raw).toString("hex")}`;
}

function mac(secret: string, ts: string, d: Delivery, attempt: string, body: Buffer): Buffer {
  const h = createHmac("sha256", Buffer.from(secret, "utf8"));
  for (const part of ["v1", ts, d.method, d.url, d.queue, d.taskId, attempt]) h.update(Buffer.from(part + "\n", "utf8"));
  h.update(body);
  return h.digest();
}

/** Reads "t=…,v1=…[,v1=…]" (parts trimmed; other keys ignored): undefined unless one t= and at least one v1=. */
function parseSignature(v: string): { ts: string; v1: string[] } | undefined {
  const ts: string[] = [];
  const v1: string[] = [];
  for (const part of v.split(",")) {
    const p = part.trim();
    const i = p.indexOf("=");
    if (i < 0) continue;
    const k = p.slice(0, i);
    if (k === "t") ts.push(p.slice(i + 1));
    else if (k === "v1") v1.push(p.slice(i + 1));
  }
  return ts.length === 1 && v1.length > 0 ? { ts: ts[0]!, v1 } : undefined;
}

/** Handlers by task type, as a Worker registers them. */
export type Handlers = Record<string, Handler>;

/** A Node Lambda context, the part the handler reads. */
export interface LambdaContext {
  getRemainingTimeInMillis?: () => number;
}

/** A Lambda function error a handler's failure becomes: name is the errorType the dispatcher reads. */
export class FunctionError extends Error {
  constructor(name: string, message: string, readonly retryable: boolean) {
    super(message);
    this.name = name;
  }
}

/**
 * Makes a Node Lambda push target from task-type handlers (for
 * `export const handler = lambdaHandler({...})`): it runs the handler of
 * the pushed task's type with a signal that fires at the payload's deadline
 * (or the invocation's, if earlier); its output is the function's result,
 * which completes the task. A thrown error is a function error, which fails
 * it: retried while attempts remain, unless it is a Permanent (errorType
 * "s3q.Permanent") or there is no handler for the type. An invocation that
 * starts after the deadline runs no handler (a retryable error): the
 * dispatcher has stopped waiting for it. Reschedule is not available under
 * push; it fails the attempt like a plain error.
 */
export function lambdaHandler(handlers: Handlers): (event: Push, context?: LambdaContext) => Promise<unknown> {
  return async (event, context) => {
    const r = await runPushed(handlers, event, context?.getRemainingTimeInMillis?.());
    if (r.ok) return r.output === undefined ? null : r.output;
    throw new FunctionError(r.permanent ? PERMANENT_ERROR_TYPE : r.name, r.message, !r.permanent);
  };
}

type Outcome = { ok: true; output: unknown } | { ok: false; permanent: boolean; name: string; message: string };

async function runPushed(handlers: Handlers, p: Push, invocationLeftMs: number | undefined): Promise<Outcome> {
  if (!isRecord(p) || !isRecord(p.task) || !isRecord(p.lease)) return { ok: false, permanent: true, name: PERMANENT_ERROR_TYPE, message: "not a push payload ({task, lease, deadline})" };
  const h = handlers[p.task.task_type];
  if (!h) return { ok: false, permanent: true, name: PERMANENT_ERROR_TYPE, message: `no handler for task type ${JSON.stringify(p.task.task_type)}` };
  let left = p.deadline ? new Date(p.deadline).getTime() - Date.now() : Infinity;
  if (invocationLeftMs !== undefined) left = Math.min(left, invocationLeftMs);
  if (left <= 0) {
    // The dispatcher has stopped waiting: the lease lapses and the next attempt is delivered.
    return { ok: false, permanent: false, name: "TaskAborted", message: "s3q: the delivery's deadline has passed" };
  }
  const ctl = new AbortController();
  const timer = Number.isFinite(left) ? setTimeout(() => ctl.abort(new TaskAborted("deadline")), left) : undefined;
  try {
    const output = await h(p.task, taskContext(p.task, p.lease, ctl.signal));
    return { ok: true, output };
  } catch (err) {
    const permanent = err instanceof Permanent;
    const name = err instanceof Error && !(err instanceof Reschedule) ? err.name : "Error";
    return { ok: false, permanent, name, message: errorMessage(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Options of an HTTP push target. */
export interface PushTargetOptions extends PushVerifierOptions {
  /** The largest body read, in bytes. Defaults to 1 MiB (more is answered 413, which fails the task). */
  maxBodyBytes?: number;
  /** How many answers are kept for repeated deliveries (by task id and attempt). Defaults to 10000. */
  rememberAnswers?: number;
}

/**
 * Makes a node:http request listener that is an HTTPS push target for
 * handlers: it reads the raw body, verifies the signature (401 when it
 * fails; no handler runs), runs the handler of the task's type once per
 * (task id, attempt), answering a repeat as the first, and answers 200 with
 * the output (completes the task), 422 for a Permanent or an unknown type
 * (fails without retry), 500 for another error (retried while attempts
 * remain). The handler's signal fires at the payload's deadline.
 */
export function pushTarget(handlers: Handlers, options: PushTargetOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const verifier = new PushVerifier(options);
  const max = options.maxBodyBytes ?? 1 << 20;
  const keep = options.rememberAnswers ?? 10_000;
  const answers = new Map<string, Promise<{ status: number; body: string }>>();
  return (req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > max) tooLarge = true;
      else chunks.push(c);
    });
    req.on("end", () => {
      void (async () => {
        const send = (status: number, body: string) => {
          res.writeHead(status, { "content-type": "application/json" });
          res.end(body);
        };
        if (req.method !== "POST") return send(405, JSON.stringify({ error: "method not allowed" }));
        if (tooLarge) return send(413, JSON.stringify({ error: "body too large" }));
        const body = Buffer.concat(chunks);
        let d: Delivery;
        try {
          d = verifier.verify(body, req.headers, { method: req.method });
        } catch (err) {
          return send(401, JSON.stringify({ error: errorMessage(err) }));
        }
        const key = `${d.taskId}/${d.attempt}`;
        let answer = answers.get(key);
        if (!answer) {
          answer = answerDelivery(handlers, body);
          answers.set(key, answer);
          if (answers.size > keep) answers.delete(answers.keys().next().value as string);
        }
        const a = await answer;
        send(a.status, a.body);
      })();
    });
  };
}

async function answerDelivery(handlers: Handlers, body: Buffer): Promise<{ status: number; body: string }> {
  let p: Push;
  try {
    p = JSON.parse(body.toString("utf8")) as Push;
  } catch {
    return { status: 400, body: JSON.stringify({ error: "the body is not JSON" }) };
  }
  const r = await runPushed(handlers, p, undefined);
  if (r.ok) {
    try {
      return { status: 200, body: JSON.stringify(r.output === undefined ? null : r.output) };
    } catch (err) {
      return { status: 422, body: JSON.stringify({ error: `the handler's output: ${errorMessage(err)}` }) };
    }
  }
  return { status: r.permanent ? 422 : 500, body: JSON.stringify({ error: r.message, retryable: !r.permanent }) };
}
