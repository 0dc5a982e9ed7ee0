// The pull worker: claims tasks of the types it has handlers for (long-polling),
// heartbeats before each lease runs out, gives each handler an AbortSignal
// that fires on a cancel request or a lost lease, completes or fails the task
// by the handler's result, and on SIGTERM stops claiming, lets running
// handlers finish within a grace period and hands back what it could not.
// The same shape as the Go worker (shared/worker).

import { hostname } from "node:os";
import { Client, sleep } from "./client.js";
import { LeaseError, NotFoundError, S3qError } from "./errors.js";
import { errorMessage, Permanent, Reschedule, TaskAborted, taskContext, type AbortKind, type Handler } from "./handler.js";
import type { Claimed, Task } from "./types.js";

/** Where the worker logs. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/** Options of a Worker. Times are milliseconds. */
export interface WorkerOptions {
  /** The queue to claim from. Defaults to the client's. */
  queue?: string;
  /** Recorded on claimed tasks. Defaults to host-pid. */
  workerId?: string;
  /** How many tasks run at once. Defaults to 1. */
  concurrency?: number;
  /** The lease asked for at claim and on each heartbeat, in milliseconds. Defaults to each task's timeout. */
  leaseForMs?: number;
  /** How long a claim long-polls when nothing is available (at most 20000). 0 turns long-polling off. Defaults to 20000. */
  waitMs?: number;
  /** How long the worker long-polls without getting a task before it backs off instead (idleBackoffMs doubling to maxIdleBackoffMs). Negative: never. Defaults to 60000. */
  idleAfterMs?: number;
  /** The first wait after an idle claim found nothing. Defaults to 1000. */
  idleBackoffMs?: number;
  /** The longest wait between idle claims. Defaults to 30000. */
  maxIdleBackoffMs?: number;
  /** How long running handlers may finish after stop (or SIGTERM) before their signal fires and their tasks are handed back. Defaults to 30000. */
  shutdownGraceMs?: number;
  /**
   * How often a running task's record is read (one GET) between heartbeats
   * to see a cancel request, so that a cancel reaches its handler within
   * about this long whatever the lease: about 1,800 reads per running
   * task-hour at 2000. Negative turns it off (a cancel is then seen at the
   * next heartbeat, a third of the lease). Defaults to 2000.
   */
  cancelPollMs?: number;
  /** Stop gracefully on SIGTERM and SIGINT while running. Defaults to true. */
  stopOnSignals?: boolean;
  /** Where to log; null for nowhere. Defaults to console (stderr). */
  logger?: Logger | null;
}

const consoleLogger: Logger = {
  info: (m, f) => console.error(`s3q worker: ${m}`, f ?? ""),
  warn: (m, f) => console.error(`s3q worker: ${m}`, f ?? ""),
};
const silent: Logger = { info: () => undefined, warn: () => undefined };

/** Claims and runs tasks: register handlers with handle, then run. */
export class Worker {
  private readonly client: Client;
  private readonly handlers = new Map<string, Handler>();
  private readonly o: Required<Omit<WorkerOptions, "queue" | "logger" | "leaseForMs">> & { leaseForMs: number | undefined };
  private readonly log: Logger;

  private claims: AbortController | undefined; // aborts claims (stop)
  private work: AbortController | undefined; // aborts handlers (end of grace)
  private running: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;
  private stopRequested: (() => void) | undefined;
  private fatal: Error | undefined;

  // the long-poll turn: one slot long-polls at a time
  private turnFree = true;
  private turnWaiters: (() => void)[] = [];
  private lastTask = Date.now();
  private backoff = 0;
  private noWait = false;

  constructor(client: Client, options: WorkerOptions = {}) {
    this.client = options.queue ? client.in(options.queue) : client;
    this.o = {
      workerId: options.workerId || `${hostname()}-${process.pid}`,
      concurrency: Math.max(1, Math.floor(options.concurrency ?? 1)),
      leaseForMs: options.leaseForMs,
      waitMs: Math.max(0, options.waitMs ?? 20_000),
      idleAfterMs: options.idleAfterMs ?? 60_000,
      idleBackoffMs: options.idleBackoffMs && options.idleBackoffMs > 0 ? options.idleBackoffMs : 1_000,
      maxIdleBackoffMs: options.maxIdleBackoffMs && options.maxIdleBackoffMs > 0 ? options.maxIdleBackoffMs : 30_000,
      shutdownGraceMs: options.shutdownGraceMs && options.shutdownGraceMs > 0 ? options.shutdownGraceMs : 30_000,
      cancelPollMs: options.cancelPollMs === undefined || options.cancelPollMs === 0 ? 2_000 : options.cancelPollMs,
      stopOnSignals: options.stopOnSignals ?? true,
    };
    this.log = options.logger === null ? silent : (options.logger ?? consoleLogger);
  }

  /** Registers the handler of a task type. */
  handle(taskType: string, handler: Handler): this {
    this.handlers.set(taskType, handler);
    return this;
  }

  /**
   * Claims and runs tasks until stop() (or SIGTERM/SIGINT), then stops
   * claiming, waits up to shutdownGraceMs for running handlers, aborts the
   * rest and hands their tasks back (available at once). Resolves after a
   * clean stop; rejects at once when the queue is not declared where the
   * deployment requires it (queue_not_found).
   */
  run(): Promise<void> {
    if (this.running) return this.running;
    if (this.handlers.size === 0) return Promise.reject(new Error("s3q worker: no handlers registered"));
    this.running = this.loop();
    return this.running;
  }

  /** Stops gracefully (as SIGTERM does) and resolves when the worker has stopped. */
  async stop(): Promise<void> {
    this.stopRequested?.();
    await this.running?.catch(() => undefined);
  }

  private async loop(): Promise<void> {
    const claims = (this.claims = new AbortController());
    const work = (this.work = new AbortController());
    const stopped = new Promise<void>((resolve) => {
      this.stopRequested = resolve;
    });
    const onSignal = (sig: NodeJS.Signals) => {
      this.log.info("signal received: stopping", { signal: sig });
      this.stopRequested?.();
    };
    if (this.o.stopOnSignals) {
      process.on("SIGTERM", onSignal);
      process.on("SIGINT", onSignal);
    }
    const types = [...this.handlers.keys()].sort();
    const slots = Array.from({ length: this.o.concurrency }, () => this.slot(types, claims.signal, work.signal));
    const all = Promise.all(slots).then(() => undefined);
    try {
      await Promise.race([stopped, claims.signal.aborted ? Promise.resolve() : new Promise<void>((r) => claims.signal.addEventListener("abort", () => r()))]);
      claims.abort();
      this.log.info("worker stopping: no new claims; waiting for running tasks", { grace_ms: this.o.shutdownGraceMs });
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<"grace">((r) => {
        timer = setTimeout(() => r("grace"), this.o.shutdownGraceMs);
      });
      if ((await Promise.race([all.then(() => "done" as const), grace])) === "grace") {
        work.abort(new TaskAborted("shutdown"));
        await all;
      }
      clearTimeout(timer);
    } finally {
      if (this.o.stopOnSignals) {
        process.off("SIGTERM", onSignal);
        process.off("SIGINT", onSignal);
      }
    }
    if (this.fatal) throw this.fatal;
  }

  /** One slot: claims a task, runs it, and claims the next while the last one's outcome is on its way. */
  private async slot(types: string[], claims: AbortSignal, work: AbortSignal): Promise<void> {
    let finishing: Promise<void> = Promise.resolve();
    while (!claims.aborted) {
      const c = await this.claim(types, claims);
      if (!c) continue;
      const finish = await this.runTask(c, work);
      await finishing;
      finishing = finish().catch((err: unknown) => this.log.warn("finishing a task failed", { error: errorMessage(err) }));
    }
    await finishing;
  }

  /** One claimed task, or undefined when the claim found none (or claims stopped). */
  private async claim(types: string[], signal: AbortSignal): Promise<Claimed | undefined> {
    const first = await this.once(types, 0, signal);
    if (first.claimed || first.paused || signal.aborted) return first.claimed;
    await this.takeTurn(signal);
    if (signal.aborted) return undefined;
    try {
      while (!signal.aborted) {
        const wait = this.idle() ? 0 : this.o.waitMs;
        const began = Date.now();
        const got = await this.once(types, wait, signal);
        if (got.claimed) return got.claimed;
        if (got.paused) continue; // it waited as the answer's Retry-After asked
        if (wait <= 0 || Date.now() - began < wait / 2) {
          this.backoff = this.backoff === 0 ? this.o.idleBackoffMs : Math.min(this.backoff * 2, this.o.maxIdleBackoffMs);
          await sleep(this.backoff, signal);
        }
      }
      return undefined;
    } finally {
      this.giveTurn();
    }
  }

  private takeTurn(signal: AbortSignal): Promise<void> {
    if (this.turnFree) {
      this.turnFree = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const onAbort = () => {
        this.turnWaiters = this.turnWaiters.filter((w) => w !== go);
        resolve();
      };
      const go = () => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      this.turnWaiters.push(go);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  private giveTurn(): void {
    const next = this.turnWaiters.shift();
    if (next) next();
    else this.turnFree = true;
  }

  private idle(): boolean {
    if (this.o.waitMs <= 0 || this.noWait) return true;
    return this.o.idleAfterMs >= 0 && Date.now() - this.lastTask > this.o.idleAfterMs;
  }

  /**
   * One claim of one task, waiting up to waitMs; paused when it already
   * waited as an empty answer's Retry-After asked (a queue's rate limit
   * answers 204 with one: the next claim comes that long after, instead of
   * after the usual pause).
   */
  private async once(types: string[], waitMs: number, signal: AbortSignal): Promise<{ claimed?: Claimed; paused: boolean }> {
    try {
      const { tasks: cs, retryAfterMs } = await this.client.claimHeld({
        taskTypes: types,
        leaseFor: this.o.leaseForMs,
        workerId: this.o.workerId,
        maxTasks: 1,
        wait: waitMs > 0 ? waitMs : undefined,
        signal,
      });
      if (cs.length === 0) {
        if (retryAfterMs === undefined) return { paused: false };
        await sleep(retryAfterMs, signal);
        return { paused: true };
      }
      this.lastTask = Date.now();
      this.backoff = 0;
      return { claimed: cs[0]!, paused: false };
    } catch (err) {
      if (signal.aborted) return { paused: true };
      if (err instanceof NotFoundError && err.code === "queue_not_found") {
        this.fatal ??= new Error(`s3q worker: queue ${JSON.stringify(this.client.queue)} is not declared: ${err.message}`, { cause: err });
        this.stopRequested?.();
        this.claims?.abort();
        return { paused: true };
      }
      if (waitMs > 0 && err instanceof S3qError && err.field === "wait") {
        this.noWait = true;
        this.log.warn("the API refuses this long-poll; claiming without waiting from now on", { error: err.message });
        return { paused: false };
      }
      this.log.warn("claim failed", { error: errorMessage(err) });
      await sleep(err instanceof S3qError && err.retryAfterMs ? err.retryAfterMs : this.o.idleBackoffMs, signal);
      return { paused: false };
    }
  }

  /** Runs one claimed task's handler to its end and returns what finishes it (complete, fail, ...), for the slot to send. */
  private async runTask(c: Claimed, work: AbortSignal): Promise<() => Promise<void>> {
    const fields = { task_id: c.task.id, task_type: c.task.task_type, attempt: c.task.attempt };
    let lease = c.lease;
    const handler = this.handlers.get(c.task.task_type);
    if (!handler) {
      return async () => {
        await this.client.fail(lease, `no handler for task type ${c.task.task_type}`);
      };
    }
    const ctl = new AbortController();
    const onWork = () => ctl.abort(work.reason);
    if (work.aborted) ctl.abort(work.reason);
    work.addEventListener("abort", onWork);
    // Heartbeats at a third of the lease until the handler returns.
    let beating = true;
    let beatTimer: NodeJS.Timeout | undefined;
    let beatInFlight: Promise<void> = Promise.resolve();
    const beat = () => {
      if (!beating) return;
      const left = new Date(lease.expires_at).getTime() - Date.now();
      beatTimer = setTimeout(() => {
        beatInFlight = (async () => {
          try {
            const hb = await this.client.heartbeat(lease, { leaseFor: this.o.leaseForMs });
            lease = hb.lease;
            if (hb.task.cancel_requested) {
              ctl.abort(new TaskAborted("cancel_requested"));
              return;
            }
          } catch (err) {
            if (err instanceof LeaseError || err instanceof NotFoundError || (err instanceof S3qError && err.code === "invalid_state")) {
              ctl.abort(new TaskAborted("lease_lost"));
              return;
            }
            this.log.warn("heartbeat failed; retrying", { ...fields, error: errorMessage(err) });
          }
          beat();
        })();
      }, Math.max(100, left / 3));
    };
    beat();
    // Between heartbeats, a read of the task every cancelPollMs sees a cancel request.
    let polling: NodeJS.Timeout | undefined;
    let pollInFlight: Promise<void> = Promise.resolve();
    if (this.o.cancelPollMs > 0) {
      polling = setInterval(() => {
        pollInFlight = (async () => {
          try {
            const t = await this.client.get(c.task.id);
            if (t.status === "running" && t.cancel_requested && !ctl.signal.aborted) ctl.abort(new TaskAborted("cancel_requested"));
          } catch {
            // skipped: the next read, or the heartbeat, tells
          }
        })();
      }, this.o.cancelPollMs);
    }
    const started = Date.now();
    let out: unknown;
    let thrown: unknown;
    let failed = false;
    try {
      out = await handler(c.task, taskContext(c.task, lease, ctl.signal));
    } catch (err) {
      failed = true;
      thrown = err;
    } finally {
      beating = false;
      clearTimeout(beatTimer);
      clearInterval(polling);
      work.removeEventListener("abort", onWork);
    }
    // The outcome is what the handler saw: a cancel (or a lost lease) that a
    // heartbeat or read in flight reports after the handler returned does not
    // drop its output (a complete of a task asked to cancel completes it).
    const aborted = ctl.signal.aborted && ctl.signal.reason instanceof TaskAborted ? (ctl.signal.reason.kind as AbortKind) : undefined;
    await beatInFlight;
    await pollInFlight;
    switch (aborted) {
      case "lease_lost":
        this.log.warn("lease lost; result dropped", fields);
        return async () => undefined;
      case "cancel_requested":
        return async () => {
          await this.client.ackCancel(lease);
          this.log.info("task cancelled on request", fields);
        };
      case "shutdown":
        return async () => {
          await this.client.reschedule(lease);
          this.log.info("task handed back on shutdown", fields);
        };
    }
    const took = Date.now() - started;
    if (!failed) {
      return async () => {
        try {
          await this.client.complete(lease, out);
        } catch (err) {
          if (!(err instanceof S3qError) || err.kind !== "invalid_argument") throw err;
          await this.client.fail(lease, `the handler's output: ${err.message}`, { permanent: true });
          return;
        }
        this.log.info("task completed", { ...fields, duration_ms: took });
      };
    }
    if (thrown instanceof Reschedule) {
      const r = thrown;
      return async () => {
        await this.client.reschedule(lease, { delay: r.delay, ...(r.extendExpiration === undefined ? {} : { extendExpiration: r.extendExpiration }) });
      };
    }
    const permanent = thrown instanceof Permanent;
    return async () => {
      await this.client.fail(lease, errorMessage(thrown), { permanent });
      this.log.info("task failed", { ...fields, error: errorMessage(thrown), retryable: !permanent });
    };
  }
}

/** A Task type re-export for handler authors. */
export type { Task };
