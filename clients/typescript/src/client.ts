// The client: every operation of the API (shared/api/openapi.json), one
// method each, with SigV4 when the URL is an AWS one.

import type { components } from "./openapi.js";
import { count, duration, headerValue, instant, jsonText, newTaskId, nonEmpty, priority, type Duration, type Instant } from "./args.js";
import { errorFromAnswer, errorFromCode, InvalidArgumentError, itemStatus, parseRetryAfter, S3qError, UnavailableError } from "./errors.js";
import { makeSigner, regionFromHost, type AwsCredentialsSource, type Signer } from "./sigv4.js";
import type {
  Artifact,
  BulkResult,
  Claimed,
  Fire,
  Lease,
  Queue,
  QueueSettings,
  QueueStats,
  Route,
  Schedule,
  ScheduleRequest,
  Status,
  Task,
  TaskVersion,
  TTLFrom,
} from "./types.js";

type S = components["schemas"];

/** Options of a Client. */
export interface ClientOptions {
  /** The queue the client's task, lease and schedule calls address. Defaults to "default". */
  queue?: string;
  /** Sign every request with SigV4 (API Gateway IAM auth). Defaults to true when the URL's host ends in ".amazonaws.com". */
  sigv4?: boolean;
  /** Region for SigV4. Defaults to the region of an execute-api host, then AWS_REGION, then AWS_DEFAULT_REGION. */
  region?: string;
  /** Credentials for SigV4: fixed ones or a provider. Defaults to the AWS SDK's default credential chain. */
  credentials?: AwsCredentialsSource;
  /**
   * How many times a request that is safe to repeat (submits, which always carry
   * an id; lease operations; reads; queue operations) is sent again after a 429,
   * a 5xx or no answer, with capped, jittered exponential backoff honouring
   * Retry-After. 0: never. Defaults to 4.
   */
  maxRetries?: number;
  /** The backoff before the first retry, in milliseconds; it doubles each time, up to 20 times it. Defaults to 200. */
  retryBackoffMs?: number;
  /** How long one request may take, in milliseconds (longer than the longest long-poll). Defaults to 60000. */
  timeoutMs?: number;
  /** Sent as User-Agent. Defaults to "s3q-client-ts". */
  userAgent?: string;
}

/** Options every call takes. */
export interface CallOptions {
  /** Aborts the call (and its retries). */
  signal?: AbortSignal | undefined;
}

/** The options of a submit. Durations are milliseconds (numbers) or "90s"/"1h"/"7d" strings; times are Dates or RFC 3339 strings. */
export interface SubmitOptions extends CallOptions {
  /** The task's id, a lowercase UUIDv7. Defaults to a new one made by the client, kept across retries. */
  id?: string;
  /** The queue. Defaults to the client's. */
  queue?: string;
  /** Time to live: the task expires if not started within it. Not with expiresAt. Defaults to the queue's, else none. */
  ttl?: Duration;
  /** The deadline for starting the task. Not with ttl. Defaults to none. */
  expiresAt?: Instant;
  /** Where the TTL counts from. Defaults to "submission". */
  ttlFrom?: TTLFrom;
  /** The earliest time the task may start. Not with delay. Defaults to now. */
  scheduleAt?: Instant;
  /** How long from now until the task may start. Not with scheduleAt. Defaults to 0. */
  delay?: Duration;
  /** An idempotency key: a live task holding it is answered instead of a new one. Defaults to none. */
  dedupKey?: string;
  /** The parent task (its deadline is inherited). Defaults to none. */
  parentId?: string;
  /** What a running child does when its parent expires: "run" on, or get a "cancel" request. Defaults to "run". */
  onParentExpired?: S["SubmitRequest"]["on_parent_expired"];
  /** Attempts before the task is dead-lettered. Defaults to the queue's (3). */
  maxAttempts?: number;
  /** The lease length of a claim. Defaults to the queue's (5m). */
  timeout?: Duration;
  /** 1 (highest) to 5 (lowest): among due tasks a claim takes the highest first. Defaults to the queue's, else 3. */
  priority?: S["SubmitRequest"]["priority"];
  /**
   * A W3C traceparent (00-{trace id}-{parent id}-{flags}) the task continues: kept on the
   * task, shown on get, handed to its handler. A submit sends it as the traceparent header
   * (an API server that records OpenTelemetry spans makes its submit span its child); a
   * batch item as its field. Defaults to none.
   */
  traceparent?: string;
  /** A W3C tracestate, with traceparent. Defaults to none. */
  tracestate?: string;
  /** Wait up to this long (at most 25s) for the task's outcome. Defaults to 0 (no wait). */
  wait?: Duration;
}

/** The answer to a submit. */
export interface SubmitResult {
  task: Task;
  /** A live task already held the dedup key: this is that task. */
  deduplicated: boolean;
  /** The task with this id already existed: an earlier attempt of this submit made it. */
  replayed: boolean;
  /** 201 created; 200 deduplicated, replayed or (with a wait) finished; 202 still running when the wait ran out. */
  status: number;
}

/** One task of a batch submit. */
export interface BatchTask extends Omit<SubmitOptions, "wait" | "signal" | "queue"> {
  taskType: string;
  input?: unknown;
}

/** One result of a batch submit: the task, or the error of that item. */
export interface BatchResult {
  task: Task | undefined;
  deduplicated: boolean;
  replayed: boolean;
  error: S3qError | undefined;
}

/** One page of a listing. */
export interface Page<T> {
  items: T[];
  /** Pass it to page() for the next page; undefined on the last. */
  nextCursor: string | undefined;
}

/** A listing: iterate it with for await (it follows the cursors to the end), or read one page. */
export class Paged<T> implements AsyncIterable<T> {
  /** @internal */
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>, private readonly cursor: string | undefined) {}

  /** One page, from cursor (a previous page's nextCursor), or from where the listing starts. */
  page(cursor: string | undefined = this.cursor): Promise<Page<T>> {
    return this.fetchPage(cursor);
  }

  /** Every item to the end, in one array. */
  async all(): Promise<T[]> {
    const out: T[] = [];
    for await (const item of this) out.push(item);
    return out;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    let cursor = this.cursor;
    for (;;) {
      const p = await this.fetchPage(cursor);
      yield* p.items;
      if (!p.nextCursor) return;
      cursor = p.nextCursor;
    }
  }
}

/** The options of a listing. */
export interface ListOptions extends CallOptions {
  /** Items per page. Defaults to the server's (100). */
  limit?: number;
  /** Start from this cursor. Defaults to the start. */
  cursor?: string;
}

/** The options of a task listing. */
export interface ListTasksOptions extends ListOptions {
  status?: Status;
  taskType?: string;
  /** The queue. Defaults to the client's. */
  queue?: string;
  /** List every queue (GET /tasks, the operator's route) instead of one. Defaults to false. */
  allQueues?: boolean;
}

/** The options of a claim. */
export interface ClaimOptions extends CallOptions {
  /** Task types to claim. Defaults to any. */
  taskTypes?: string[];
  /** The lease length. Defaults to each task's timeout. */
  leaseFor?: Duration;
  /** Recorded on the task. Defaults to none. */
  workerId?: string;
  /** Most tasks to claim. Defaults to 1. */
  maxTasks?: number;
  /** Long-poll up to this long (at most 20s) when nothing is available (POST .../claim/wait). Defaults to 0. */
  wait?: Duration;
}

/** The options of a bulk operation (purge, bulk retry, cancel, expire). */
export interface BulkOptions extends CallOptions {
  /** The queue. Defaults to the client's. */
  queue?: string;
  status?: Status;
  taskType?: string;
  /** Only tasks last changed at least this long ago. */
  olderThan?: Duration;
  /** Most tasks changed by this call (at most 100). Defaults to 100. */
  limit?: number;
  /** The nextCursor of the previous call. */
  cursor?: string;
  /** Report what would change; write nothing. Defaults to false. */
  dryRun?: boolean;
}

/** Options of a queue declaration. */
export interface QueueOptions extends CallOptions {
  /** The priority of its tasks that give none: 1 (highest) to 5 (lowest). Defaults to 3. */
  priority?: S["QueueRequest"]["priority"];
  /** The rate limit: claims and push deliveries together start at most this many tasks a second (fractions allowed). Defaults to none. */
  maxPerSecond?: number;
  /** How many tasks may start at once after a quiet spell, with maxPerSecond. Defaults to one second's worth. */
  burst?: number;
  ttl?: Duration;
  ttlFrom?: TTLFrom;
  maxAttempts?: number;
  timeout?: Duration;
  shards?: number;
  maxConcurrency?: number;
  target?: S["Target"];
}

/** A schedule definition: times as in submit. */
export interface ScheduleOptions extends CallOptions {
  /** The schedule's id. Defaults to one the server makes. */
  id?: string;
  taskType: string;
  /** Standard 5-field cron or a descriptor (@hourly). */
  cron: string;
  /** IANA time zone of the cron. Defaults to UTC. */
  timezone?: string;
  input?: unknown;
  ttl?: Duration;
  ttlFrom?: TTLFrom;
  maxAttempts?: number;
  /** Whether the schedule fires. Defaults to true. */
  enabled?: boolean;
  /** What happens to fire times missed while nothing ticked: "skip" or "catch_up" (within catchUpWindow). Defaults to "skip". */
  missedRuns?: S["MissedRuns"];
  /** How far back catch_up fires missed times. */
  catchUpWindow?: Duration;
  /** "skip" does not fire while the previous fire's task is pending or running. Defaults to "allow". */
  overlap?: S["Overlap"];
  /** The priority of the tasks its fires make: 1 (highest) to 5 (lowest). Defaults to the queue's. */
  priority?: S["ScheduleRequest"]["priority"];
}

type Query = Record<string, string | number | boolean | undefined>;

interface SendOptions {
  params?: Record<string, string>;
  query?: Query;
  /** Headers sent besides the client's own. */
  headers?: Record<string, string> | undefined;
  body?: unknown;
  retry?: boolean;
  signal?: AbortSignal | undefined;
}

interface Answer<T> {
  status: number;
  body: T;
  /** The answer's Retry-After header, null when none. */
  retryAfter: string | null;
  /** The answer's S3q-Retry-After-Ms header (the same in milliseconds), null when none. */
  retryAfterMs: string | null;
}

/** @internal The state clients made by in() share. */
class Transport {
  readonly base: URL;
  readonly retries: number;
  readonly backoff: number;
  readonly timeout: number;
  readonly ua: string;
  private signer: Promise<Signer> | undefined;

  constructor(baseURL: string, o: ClientOptions) {
    let u: URL;
    try {
      u = new URL(baseURL.replace(/\/+$/, ""));
    } catch {
      throw new InvalidArgumentError("baseURL", `base URL ${JSON.stringify(baseURL)}: want http(s)://host[:port][/stage]`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      throw new InvalidArgumentError("baseURL", `base URL ${JSON.stringify(baseURL)}: want http(s)://host[:port][/stage]`);
    }
    this.base = u;
    this.retries = o.maxRetries ?? 4;
    this.backoff = o.retryBackoffMs && o.retryBackoffMs > 0 ? o.retryBackoffMs : 200;
    this.timeout = o.timeoutMs && o.timeoutMs > 0 ? o.timeoutMs : 60_000;
    this.ua = o.userAgent ?? "s3q-client-ts";
    const sign = o.sigv4 ?? u.hostname.endsWith(".amazonaws.com");
    if (sign) {
      const region = o.region || regionFromHost(u.hostname) || process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || "";
      if (!region) throw new InvalidArgumentError("region", "SigV4 needs a region: set the region option or AWS_REGION");
      const creds = o.credentials;
      // The AWS SDK loads only here (makeSigner imports it), when the client signs.
      this.signer = makeSigner(region, creds);
      this.signer.catch(() => undefined); // reported by the first request
    }
  }

  /** Sends one request and decodes its JSON answer; a status >= 400 throws an S3qError. */
  async send<T>(route: Route, o: SendOptions): Promise<Answer<T>> {
    const sp = route.indexOf(" ");
    const method = route.slice(0, sp);
    let path = route.slice(sp + 1);
    for (const [k, v] of Object.entries(o.params ?? {})) path = path.replace(`{${k}}`, encodeURIComponent(v));
    const url = new URL(this.base.href.replace(/\/$/, "") + path);
    for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined && v !== "") url.searchParams.set(k, String(v));
    const body = o.body === undefined ? undefined : JSON.stringify(o.body);
    const attempts = o.retry ? Math.max(0, this.retries) + 1 : 1;
    for (let n = 0; ; n++) {
      try {
        return await this.once<T>(method, url, body, o.headers, o.signal);
      } catch (err) {
        if (n + 1 >= attempts || !(err instanceof S3qError) || !err.retryable || o.signal?.aborted) throw err;
        await this.wait(n, err, o.signal);
      }
    }
  }

  private async once<T>(method: string, url: URL, body: string | undefined, extra: Record<string, string> | undefined, signal: AbortSignal | undefined): Promise<Answer<T>> {
    let headers: Record<string, string> = { ...extra, "user-agent": this.ua, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.signer) headers = await (await this.signer)({ method, url, headers, body });
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(new Error(`timed out after ${this.timeout}ms`)), this.timeout);
    const onAbort = () => ctl.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort);
    if (signal?.aborted) ctl.abort(signal.reason);
    let res: Response;
    let text: string;
    try {
      res = await fetch(url, { method, headers, body, signal: ctl.signal });
      text = await res.text();
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new UnavailableError("unavailable", {
        status: 0,
        code: "network_error",
        message: `${method} ${url.pathname}: ${err instanceof Error ? err.message : String(err)}`,
        cause: err,
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
    if (res.status >= 400) throw errorFromAnswer(res.status, text, res.headers.get("retry-after"));
    let parsed: unknown = undefined;
    if (text !== "" && res.status !== 204) {
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new UnavailableError("unavailable", { status: res.status, code: "bad_answer", message: `${method} ${url.pathname}: the answer is not JSON` });
      }
    }
    return { status: res.status, body: parsed as T, retryAfter: res.headers.get("retry-after"), retryAfterMs: res.headers.get("s3q-retry-after-ms") };
  }

  /** Sleeps before retry n+1: uniformly in [d/2, d) with d = backoff·2^n capped at 20·backoff, or Retry-After within the cap. */
  private wait(n: number, err: S3qError, signal: AbortSignal | undefined): Promise<void> {
    const cap = 20 * this.backoff;
    let d = Math.min(cap, this.backoff * 2 ** Math.min(n, 16));
    d = d / 2 + Math.random() * (d / 2);
    if (err.retryAfterMs !== undefined && err.retryAfterMs > d) d = Math.min(err.retryAfterMs, cap);
    return sleep(d, signal);
  }
}

/** Resolves after ms, or at once when signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener("abort", done);
  });
}

/**
 * A client of one s3q API. Every method is one operation of the API. It
 * holds no queue rules: the server decides; the client only shapes
 * arguments, makes task ids, retries what is safe to repeat and signs.
 */
export class Client {
  private readonly t: Transport;
  /** The queue this client's calls address. */
  readonly queue: string;

  /**
   * A client for the API at baseURL (http://127.0.0.1:8080 for `s3q dev`,
   * https://{api}.execute-api.{region}.amazonaws.com for a deployment, which is signed).
   */
  constructor(baseURL: string, options?: ClientOptions);
  /** @internal */
  constructor(baseURL: Transport, options: ClientOptions);
  constructor(baseURL: string | Transport, options: ClientOptions = {}) {
    this.t = baseURL instanceof Transport ? baseURL : new Transport(baseURL, options);
    this.queue = options.queue || "default";
  }

  /** A client like this one whose calls address queue name (sharing its connection settings). */
  in(name: string): Client {
    return new Client(this.t, { queue: nonEmpty("queue", name) });
  }

  // --- tasks ---

  /**
   * Submits one task of taskType with input (any JSON value) exactly once:
   * the id (made here unless given) stays the same across the retries after
   * a 429, a 5xx or no answer, so a retry whose first attempt landed answers
   * that task (replayed) instead of making a second. With wait it goes to
   * POST /queues/{queue}/tasks/wait and a task whose deadline passes during
   * the wait throws DeadlineExceededError.
   */
  async submit(taskType: string, input?: unknown, options: SubmitOptions = {}): Promise<SubmitResult> {
    const body = submitBody(taskType, input, options, "");
    // The trace context goes as the headers, which the API's span of the submit continues.
    const headers = traceHeaders(options);
    delete body.traceparent;
    delete body.tracestate;
    const wait = options.wait === undefined ? undefined : duration("wait", options.wait);
    if (wait !== undefined) body.wait = wait;
    const waits = wait !== undefined && !isZero(wait);
    const a = await this.t.send<S["TaskReply"]>(waits ? "POST /queues/{queue}/tasks/wait" : "POST /queues/{queue}/tasks", {
      params: { queue: options.queue || this.queue },
      headers,
      body,
      retry: true,
      signal: options.signal,
    });
    return { task: a.body.task, deduplicated: a.body.deduplicated ?? false, replayed: a.body.replayed ?? false, status: a.status };
  }

  /**
   * Submits up to 500 tasks to one queue in one request: one result per
   * task, in order. As submit, every task gets its id here and the batch
   * (or the items that failed with a retryable error) is retried with them.
   * options.traceparent and tracestate are the trace context of every item
   * without its own (sent as the request's headers).
   */
  async submitBatch(tasks: BatchTask[], options: CallOptions & { queue?: string; traceparent?: string; tracestate?: string } = {}): Promise<BatchResult[]> {
    const bodies = tasks.map((t, i) => submitBody(t.taskType, t.input, t, `tasks[${i}].`));
    const headers = traceHeaders(options);
    const out: BatchResult[] = new Array<BatchResult>(bodies.length);
    let todo = bodies.map((_, i) => i);
    for (let n = 0; ; n++) {
      const a = await this.t.send<S["BatchReply"]>("POST /queues/{queue}/tasks/batch", {
        params: { queue: options.queue || this.queue },
        headers,
        body: { tasks: todo.map((i) => bodies[i]) },
        retry: true,
        signal: options.signal,
      });
      if (a.body.results.length !== todo.length) {
        throw new UnavailableError("unavailable", { status: a.status, code: "bad_answer", message: `a batch of ${todo.length} answered ${a.body.results.length} results` });
      }
      const again: number[] = [];
      todo.forEach((i, j) => {
        const r = a.body.results[j]!;
        const error = r.error ? errorFromCode({ status: itemStatus(r.error.code), code: r.error.code, message: r.error.message, field: r.error.field }) : undefined;
        out[i] = { task: r.task, deduplicated: r.deduplicated ?? false, replayed: r.replayed ?? false, error };
        if (error?.retryable) again.push(i);
      });
      if (again.length === 0 || n >= this.t.retries || options.signal?.aborted) return out;
      await sleep(this.t.backoff * 2 ** n, options.signal);
      todo = again;
    }
  }

  /** Reads one task of the client's queue (another queue's is a NotFoundError). */
  async get(id: string, options: CallOptions = {}): Promise<Task> {
    const a = await this.t.send<S["TaskReply"]>("GET /queues/{queue}/tasks/{id}", { params: this.taskParams(id), retry: true, signal: options.signal });
    return a.body.task;
  }

  /** The tasks of the client's queue (or options.queue, or every queue), newest listing order first, following cursors. */
  list(options: ListTasksOptions = {}): Paged<Task> {
    const query = (cursor: string | undefined): Query => ({
      status: options.status,
      task_type: options.taskType,
      limit: options.limit === undefined ? undefined : count("limit", options.limit),
      cursor,
    });
    if (options.allQueues) {
      return new Paged(async (cursor) => {
        const a = await this.t.send<S["TaskList"]>("GET /tasks", { query: { ...query(cursor), queue: options.queue }, retry: true, signal: options.signal });
        return { items: a.body.tasks, nextCursor: a.body.next_cursor || undefined };
      }, options.cursor);
    }
    return new Paged(async (cursor) => {
      const a = await this.t.send<S["TaskList"]>("GET /queues/{queue}/tasks", {
        params: { queue: options.queue || this.queue },
        query: query(cursor),
        retry: true,
        signal: options.signal,
      });
      return { items: a.body.tasks, nextCursor: a.body.next_cursor || undefined };
    }, options.cursor);
  }

  /** The stored versions of a task's record, newest first. */
  history(id: string, options: ListOptions = {}): Paged<TaskVersion> {
    return new Paged(async (cursor) => {
      const a = await this.t.send<S["History"]>("GET /queues/{queue}/tasks/{id}/history", {
        params: this.taskParams(id),
        query: { limit: options.limit, cursor },
        retry: true,
        signal: options.signal,
      });
      return { items: a.body.versions, nextCursor: a.body.next_cursor || undefined };
    }, options.cursor);
  }

  /** Cancels a pending task, or asks a running one to stop (its worker's signal fires). */
  async cancel(id: string, options: CallOptions = {}): Promise<Task> {
    return (await this.t.send<S["TaskReply"]>("POST /queues/{queue}/tasks/{id}/cancel", { params: this.taskParams(id), body: {}, signal: options.signal })).body.task;
  }

  /** Puts a failed (dead-lettered) or cancelled task back to pending. */
  async retry(id: string, options: CallOptions = {}): Promise<Task> {
    return (await this.t.send<S["TaskReply"]>("POST /queues/{queue}/tasks/{id}/retry", { params: this.taskParams(id), body: {}, signal: options.signal })).body.task;
  }

  /** Marks a pending task expired by hand. */
  async expire(id: string, options: CallOptions = {}): Promise<Task> {
    return (await this.t.send<S["TaskReply"]>("POST /queues/{queue}/tasks/{id}/expire", { params: this.taskParams(id), body: {}, signal: options.signal })).body.task;
  }

  // --- claims and leases ---

  /** Leases up to maxTasks tasks; an empty array when none was available (within wait). Never retried (a lost answer's lease lapses). */
  async claim(options: ClaimOptions = {}): Promise<Claimed[]> {
    return (await this.claimHeld(options)).tasks;
  }

  /**
   * claim, and how long the answer asks to wait before the next claim, in
   * milliseconds (a queue's rate limit holding claims back answers 204 with
   * Retry-After in whole seconds and S3q-Retry-After-Ms, read first);
   * undefined when it says nothing. The worker's claim.
   */
  async claimHeld(options: ClaimOptions = {}): Promise<{ tasks: Claimed[]; retryAfterMs: number | undefined }> {
    const body: S["ClaimRequest"] = {};
    if (options.taskTypes?.length) body.task_types = options.taskTypes;
    if (options.leaseFor !== undefined) body.lease_for = duration("leaseFor", options.leaseFor);
    if (options.workerId) body.worker_id = options.workerId;
    if (options.maxTasks !== undefined) body.max_tasks = count("maxTasks", options.maxTasks);
    const wait = options.wait === undefined ? undefined : duration("wait", options.wait);
    if (wait !== undefined) body.wait = wait;
    const a = await this.t.send<S["ClaimReply"] | undefined>(wait !== undefined && !isZero(wait) ? "POST /queues/{queue}/claim/wait" : "POST /queues/{queue}/claim", {
      params: { queue: this.queue },
      body,
      signal: options.signal,
    });
    // S3q-Retry-After-Ms is the precise one (Retry-After is whole seconds, rounded up).
    const ms = a.retryAfterMs !== null && /^\d+(\.\d+)?$/.test(a.retryAfterMs.trim()) ? Number(a.retryAfterMs.trim()) : parseRetryAfter(a.retryAfter);
    return { tasks: a.status === 204 || !a.body ? [] : a.body.tasks, retryAfterMs: ms };
  }

  /** Extends a lease (by leaseFor, else the task's timeout); the task's cancel_requested asks the worker to stop. */
  async heartbeat(lease: Lease, options: CallOptions & { leaseFor?: Duration } = {}): Promise<Claimed> {
    const body: S["HeartbeatRequest"] = { lease_token: nonEmpty("lease.token", lease.token) };
    if (options.leaseFor !== undefined) body.lease_for = duration("leaseFor", options.leaseFor);
    return (await this.t.send<S["Claimed"]>("POST /queues/{queue}/tasks/{id}/heartbeat", { params: this.taskParams(lease.task_id), body, retry: true, signal: options.signal })).body;
  }

  /** Finishes a task with its output (any JSON value). */
  async complete(lease: Lease, output?: unknown, options: CallOptions = {}): Promise<Task> {
    const body: S["CompleteRequest"] = { lease_token: nonEmpty("lease.token", lease.token) };
    if (output !== undefined) {
      jsonText("output", output);
      body.output = output;
    }
    return this.leaseOp("POST /queues/{queue}/tasks/{id}/complete", lease, body, options);
  }

  /** Records a failed attempt: retried with backoff while attempts remain, unless permanent; else dead-lettered (failed). */
  async fail(lease: Lease, error: string, options: CallOptions & { permanent?: boolean } = {}): Promise<Task> {
    const body: S["FailRequest"] = { lease_token: nonEmpty("lease.token", lease.token), error, retryable: !options.permanent };
    return this.leaseOp("POST /queues/{queue}/tasks/{id}/fail", lease, body, options);
  }

  /** Puts a running task back, available after delay, giving back its attempt; extendExpiration moves its deadline later. */
  async reschedule(lease: Lease, options: CallOptions & { delay?: Duration; extendExpiration?: Duration } = {}): Promise<Task> {
    const body: S["RescheduleRequest"] = { lease_token: nonEmpty("lease.token", lease.token), delay: duration("delay", options.delay ?? 0) };
    if (options.extendExpiration !== undefined) body.extend_expiration = duration("extendExpiration", options.extendExpiration);
    return this.leaseOp("POST /queues/{queue}/tasks/{id}/reschedule", lease, body, options);
  }

  /** Acknowledges a cancel request: the running task ends cancelled. */
  async ackCancel(lease: Lease, options: CallOptions = {}): Promise<Task> {
    return this.leaseOp("POST /queues/{queue}/tasks/{id}/cancel-ack", lease, { lease_token: nonEmpty("lease.token", lease.token) }, options);
  }

  private async leaseOp(route: Route, lease: Lease, body: unknown, options: CallOptions): Promise<Task> {
    return (await this.t.send<S["TaskReply"]>(route, { params: this.taskParams(lease.task_id), body, retry: true, signal: options.signal })).body.task;
  }

  // --- artifacts ---

  /** A presigned URL to upload artifact name (size bytes) of a task. */
  async createArtifact(id: string, name: string, size: number, options: CallOptions = {}): Promise<Artifact> {
    const body: S["ArtifactRequest"] = { name: nonEmpty("name", name), size: count("size", size) };
    return (await this.t.send<S["ArtifactReply"]>("POST /queues/{queue}/tasks/{id}/artifacts", { params: this.taskParams(id), body, signal: options.signal })).body.artifact;
  }

  /** A presigned URL to download artifact name of a task. */
  async getArtifact(id: string, name: string, options: CallOptions = {}): Promise<Artifact> {
    const a = await this.t.send<S["ArtifactReply"]>("GET /queues/{queue}/tasks/{id}/artifacts/{name}", {
      params: { ...this.taskParams(id), name: nonEmpty("name", name) },
      retry: true,
      signal: options.signal,
    });
    return a.body.artifact;
  }

  // --- queues ---

  /** Declares queue name, or replaces its settings; created is true when it was new. */
  async declareQueue(name: string, options: QueueOptions = {}): Promise<{ queue: Queue; created: boolean }> {
    const body: QueueSettings = {};
    if (options.ttl !== undefined) body.ttl = duration("ttl", options.ttl);
    if (options.ttlFrom !== undefined) body.ttl_from = options.ttlFrom;
    if (options.maxAttempts !== undefined) body.max_attempts = count("maxAttempts", options.maxAttempts);
    if (options.timeout !== undefined) body.timeout = duration("timeout", options.timeout);
    if (options.shards !== undefined) body.shards = count("shards", options.shards);
    if (options.maxConcurrency !== undefined) body.max_concurrency = count("maxConcurrency", options.maxConcurrency);
    if (options.target !== undefined) body.target = options.target;
    if (options.priority !== undefined) body.priority = priority("priority", options.priority);
    if (options.maxPerSecond !== undefined) {
      if (!Number.isFinite(options.maxPerSecond)) throw new InvalidArgumentError("maxPerSecond", `maxPerSecond must be a finite number, not ${options.maxPerSecond}`);
      body.max_per_second = options.maxPerSecond;
    }
    if (options.burst !== undefined) body.burst = count("burst", options.burst);
    const a = await this.t.send<S["QueueReply"]>("PUT /queues/{queue}", { params: { queue: nonEmpty("name", name) }, body, signal: options.signal });
    return { queue: a.body.queue, created: a.status === 201 };
  }

  /** A declared queue with its counts (an undeclared one is a NotFoundError, code queue_not_found). */
  async getQueue(name: string, options: CallOptions = {}): Promise<Queue> {
    return (await this.t.send<S["QueueReply"]>("GET /queues/{queue}", { params: { queue: nonEmpty("name", name) }, retry: true, signal: options.signal })).body.queue;
  }

  /** The declared queues, by name (with counts unless counts is false). */
  listQueues(options: ListOptions & { counts?: boolean } = {}): Paged<Queue> {
    return new Paged(async (cursor) => {
      const a = await this.t.send<S["QueueList"]>("GET /queues", {
        query: { limit: options.limit, cursor, counts: options.counts === false ? "false" : undefined },
        retry: true,
        signal: options.signal,
      });
      return { items: a.body.queues, nextCursor: a.body.next_cursor || undefined };
    }, options.cursor);
  }

  /** Deletes a queue's declaration (one holding live tasks is a ConflictError, queue_not_empty). */
  async deleteQueue(name: string, options: CallOptions = {}): Promise<void> {
    await this.t.send<undefined>("DELETE /queues/{queue}", { params: { queue: nonEmpty("name", name) }, signal: options.signal });
  }

  /** Pauses a queue: claims and push deliveries take nothing from it until resumeQueue; submits go on. */
  async pauseQueue(name: string = this.queue, options: CallOptions = {}): Promise<Queue> {
    return (await this.t.send<S["QueueReply"]>("POST /queues/{queue}/pause", { params: { queue: name }, body: {}, retry: true, signal: options.signal })).body.queue;
  }

  /** Resumes a paused queue. */
  async resumeQueue(name: string = this.queue, options: CallOptions = {}): Promise<Queue> {
    return (await this.t.send<S["QueueReply"]>("POST /queues/{queue}/resume", { params: { queue: name }, body: {}, retry: true, signal: options.signal })).body.queue;
  }

  /** A queue's counts by status, its oldest due pending task and the last hour's failures, cancels and expiries. */
  async queueStats(name: string = this.queue, options: CallOptions = {}): Promise<QueueStats> {
    return (await this.t.send<S["StatsReply"]>("GET /queues/{queue}/stats", { params: { queue: name }, retry: true, signal: options.signal })).body.stats;
  }

  /** Deletes up to limit (100) pending or finished tasks chosen by options; a result with next_cursor has more. */
  purge(options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk("POST /queues/{queue}/purge", options);
  }

  /** Puts failed or cancelled tasks chosen by options back to pending. */
  bulkRetry(options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk("POST /queues/{queue}/bulk/retry", options);
  }

  /** Cancels pending (or asks running) tasks chosen by options. */
  bulkCancel(options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk("POST /queues/{queue}/bulk/cancel", options);
  }

  /** Expires pending tasks chosen by options. */
  bulkExpire(options: BulkOptions = {}): Promise<BulkResult> {
    return this.bulk("POST /queues/{queue}/bulk/expire", options);
  }

  private async bulk(route: Route, o: BulkOptions): Promise<BulkResult> {
    const body: S["BulkRequest"] = {};
    if (o.status !== undefined) body.status = o.status;
    if (o.taskType !== undefined) body.task_type = o.taskType;
    if (o.olderThan !== undefined) body.older_than = duration("olderThan", o.olderThan);
    if (o.limit !== undefined) body.limit = count("limit", o.limit);
    if (o.cursor !== undefined) body.cursor = o.cursor;
    if (o.dryRun !== undefined) body.dry_run = o.dryRun;
    return (await this.t.send<S["BulkReply"]>(route, { params: { queue: o.queue || this.queue }, body, retry: true, signal: o.signal })).body;
  }

  // --- schedules ---

  /** Creates a cron schedule in the client's queue. */
  async createSchedule(options: ScheduleOptions): Promise<Schedule> {
    const a = await this.t.send<S["ScheduleReply"]>("POST /queues/{queue}/schedules", { params: { queue: this.queue }, body: scheduleBody(options), signal: options.signal });
    return a.body.schedule;
  }

  /** Replaces a schedule's definition. */
  async updateSchedule(id: string, options: ScheduleOptions): Promise<Schedule> {
    const a = await this.t.send<S["ScheduleReply"]>("PUT /queues/{queue}/schedules/{id}", { params: this.taskParams(id), body: scheduleBody(options), signal: options.signal });
    return a.body.schedule;
  }

  /** A schedule with its next fire times. */
  async getSchedule(id: string, options: CallOptions = {}): Promise<Schedule> {
    return (await this.t.send<S["ScheduleReply"]>("GET /queues/{queue}/schedules/{id}", { params: this.taskParams(id), retry: true, signal: options.signal })).body.schedule;
  }

  /** The schedules of the client's queue. */
  listSchedules(options: ListOptions = {}): Paged<Schedule> {
    return new Paged(async (cursor) => {
      const a = await this.t.send<S["ScheduleList"]>("GET /queues/{queue}/schedules", {
        params: { queue: this.queue },
        query: { limit: options.limit, cursor },
        retry: true,
        signal: options.signal,
      });
      return { items: a.body.schedules, nextCursor: a.body.next_cursor || undefined };
    }, options.cursor);
  }

  /** Deletes a schedule; the tasks it fired stay. */
  async deleteSchedule(id: string, options: CallOptions = {}): Promise<void> {
    await this.t.send<undefined>("DELETE /queues/{queue}/schedules/{id}", { params: this.taskParams(id), signal: options.signal });
  }

  /** Stops a schedule from firing. */
  async pauseSchedule(id: string, options: CallOptions = {}): Promise<Schedule> {
    return (await this.t.send<S["ScheduleReply"]>("POST /queues/{queue}/schedules/{id}/pause", { params: this.taskParams(id), body: {}, signal: options.signal })).body.schedule;
  }

  /** Lets a paused schedule fire again, from now on. */
  async resumeSchedule(id: string, options: CallOptions = {}): Promise<Schedule> {
    return (await this.t.send<S["ScheduleReply"]>("POST /queues/{queue}/schedules/{id}/resume", { params: this.taskParams(id), body: {}, signal: options.signal })).body.schedule;
  }

  /** Fires a schedule once, now. */
  async triggerSchedule(id: string, options: CallOptions = {}): Promise<Fire> {
    return (await this.t.send<S["FireReply"]>("POST /queues/{queue}/schedules/{id}/trigger", { params: this.taskParams(id), body: {}, signal: options.signal })).body.fire;
  }

  /** A schedule's fires, oldest first (from since, when given). */
  scheduleHistory(id: string, options: ListOptions & { since?: Instant } = {}): Paged<Fire> {
    return new Paged(async (cursor) => {
      const since = options.since === undefined ? undefined : instant("since", options.since);
      const a = await this.t.send<S["ScheduleHistory"]>("GET /queues/{queue}/schedules/{id}/history", {
        params: this.taskParams(id),
        query: { since, limit: options.limit, cursor },
        retry: true,
        signal: options.signal,
      });
      return { items: a.body.fires, nextCursor: a.body.next_cursor || undefined };
    }, options.cursor);
  }

  // --- the document ---

  /** The API's OpenAPI document, as it serves it. */
  async openAPI(options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (await this.t.send<Record<string, unknown>>("GET /openapi.json", { retry: true, signal: options.signal })).body;
  }

  private taskParams(id: string): Record<string, string> {
    return { queue: this.queue, id: nonEmpty("id", id) };
  }
}

/** Reports whether a duration in the API's spelling is zero. */
function isZero(d: string): boolean {
  return !/[1-9]/.test(d);
}

/** The API body of a submit, its arguments checked (prefix names a batch item's). */
function submitBody(taskType: string, input: unknown, o: Omit<SubmitOptions, "wait" | "signal">, prefix: string): S["SubmitRequest"] {
  const name = (n: string) => prefix + n;
  if (typeof taskType !== "string" || taskType === "") throw new InvalidArgumentError(name("taskType"), `${name("taskType")} is required`);
  if (o.ttl !== undefined && o.expiresAt !== undefined) throw new InvalidArgumentError(name("expiresAt"), `give ${name("ttl")} or ${name("expiresAt")}, not both`);
  if (o.delay !== undefined && o.scheduleAt !== undefined) throw new InvalidArgumentError(name("scheduleAt"), `give ${name("delay")} or ${name("scheduleAt")}, not both`);
  const body: S["SubmitRequest"] = { id: o.id || newTaskId(), task_type: taskType };
  if (input !== undefined) {
    jsonText(name("input"), input); // refused here when JSON.stringify cannot encode it
    body.input = input;
  }
  if (o.ttl !== undefined) body.ttl = duration(name("ttl"), o.ttl);
  if (o.expiresAt !== undefined) body.expires_at = instant(name("expiresAt"), o.expiresAt);
  if (o.ttlFrom !== undefined) body.ttl_from = o.ttlFrom;
  if (o.scheduleAt !== undefined) body.schedule_at = instant(name("scheduleAt"), o.scheduleAt);
  if (o.delay !== undefined) body.delay = duration(name("delay"), o.delay);
  if (o.dedupKey !== undefined) body.dedup_key = o.dedupKey;
  if (o.parentId !== undefined) body.parent_id = o.parentId;
  if (o.onParentExpired !== undefined) body.on_parent_expired = o.onParentExpired;
  if (o.maxAttempts !== undefined) body.max_attempts = count(name("maxAttempts"), o.maxAttempts);
  if (o.timeout !== undefined) body.timeout = duration(name("timeout"), o.timeout);
  if (o.priority !== undefined) body.priority = priority(name("priority"), o.priority);
  if (o.traceparent !== undefined) body.traceparent = headerValue(name("traceparent"), o.traceparent);
  if (o.tracestate !== undefined) body.tracestate = headerValue(name("tracestate"), o.tracestate);
  return body;
}

/** The traceparent and tracestate headers of a submit, checked (undefined when neither is given). */
function traceHeaders(o: { traceparent?: string; tracestate?: string }): Record<string, string> | undefined {
  const h: Record<string, string> = {};
  if (o.traceparent !== undefined) h.traceparent = headerValue("traceparent", o.traceparent);
  if (o.tracestate !== undefined) h.tracestate = headerValue("tracestate", o.tracestate);
  return Object.keys(h).length > 0 ? h : undefined;
}

function scheduleBody(o: ScheduleOptions): S["ScheduleRequest"] {
  const body: S["ScheduleRequest"] = { task_type: nonEmpty("taskType", o.taskType), cron: nonEmpty("cron", o.cron) };
  if (o.id !== undefined) body.id = o.id;
  if (o.timezone !== undefined) body.timezone = o.timezone;
  if (o.input !== undefined) body.input = JSON.parse(jsonText("input", o.input));
  if (o.ttl !== undefined) body.ttl = duration("ttl", o.ttl);
  if (o.ttlFrom !== undefined) body.ttl_from = o.ttlFrom;
  if (o.maxAttempts !== undefined) body.max_attempts = count("maxAttempts", o.maxAttempts);
  if (o.enabled !== undefined) body.enabled = o.enabled;
  if (o.missedRuns !== undefined) body.missed_runs = o.missedRuns;
  if (o.catchUpWindow !== undefined) body.catch_up_window = duration("catchUpWindow", o.catchUpWindow);
  if (o.overlap !== undefined) body.overlap = o.overlap;
  if (o.priority !== undefined) body.priority = priority("priority", o.priority);
  return body;
}
