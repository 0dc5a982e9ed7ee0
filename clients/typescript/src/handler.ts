// What handlers see and throw, shared by the pull worker and the push
// targets (HTTPS and Lambda).

import type { Lease, Task } from "./types.js";

/** Why a handler's signal fired. */
export type AbortKind =
  | "cancel_requested" // someone asked to cancel the running task
  | "lease_lost" // the lease ended (expired, taken over): the result would be dropped
  | "shutdown" // the worker is stopping and the grace period is over: the task is handed back
  | "deadline" // a push delivery's deadline passed: the dispatcher has stopped waiting
  | "request_ended"; // an HTTPS push delivery's request ended before its answer (a cancel was requested: the task ends cancelled)

/** The reason of a handler's aborted signal (signal.reason). */
export class TaskAborted extends Error {
  constructor(readonly kind: AbortKind) {
    super(`s3q: task aborted: ${kind.replace("_", " ")}`);
    this.name = "TaskAborted";
  }
}

/** What a handler gets besides the task. */
export interface TaskContext {
  /** Fires on a cancel request, a lost lease, the end of the shutdown grace, or (push) the delivery deadline; its reason is a TaskAborted. */
  signal: AbortSignal;
  /** The lease the task runs under. */
  lease: Lease;
  /** The task's deadline (expires_at), or undefined when it has none. A running task is never stopped by it; a handler may give up early. */
  deadline: Date | undefined;
  /** Milliseconds left until the deadline (negative once passed), or undefined without one. */
  remainingMs(): number | undefined;
  /** True when the signal fired or at most marginMs (default 0) is left until the deadline. */
  shouldAbort(marginMs?: number): boolean;
  /** The W3C traceparent the task was submitted in (task.traceparent), undefined when none. */
  traceparent: string | undefined;
  /** The W3C tracestate the task was submitted in, undefined when none. */
  tracestate: string | undefined;
  /**
   * The task's trace context as headers ({traceparent, tracestate} when it has them, {}
   * when not): the carrier an OpenTelemetry propagator extracts from, as in
   * `propagation.extract(context.active(), ctx.traceHeaders)`.
   */
  traceHeaders: Record<string, string>;
}

/**
 * Does the work of one task and returns its output (any JSON value, or
 * undefined for none). A thrown error fails the attempt (retried while
 * attempts remain); a Permanent is not retried; a Reschedule puts the task
 * back for later (pull workers only).
 */
export type Handler = (task: Task, ctx: TaskContext) => unknown;

/** Thrown by a handler: no attempt can succeed; the task fails at once (dead letter). */
export class Permanent extends Error {
  constructor(messageOrCause: string | Error) {
    super(typeof messageOrCause === "string" ? messageOrCause : messageOrCause.message, typeof messageOrCause === "string" ? undefined : { cause: messageOrCause });
    this.name = "s3q.Permanent";
  }
}

/** Thrown by a pull worker's handler: put the task back, available after delay, without using up an attempt. */
export class Reschedule extends Error {
  /** Milliseconds or a duration string until the task is available again. */
  readonly delay: number | string;
  /** Moves the task's deadline later by this much; undefined leaves it. */
  readonly extendExpiration: number | string | undefined;
  constructor(options: { delay?: number | string; extendExpiration?: number | string } = {}) {
    super(`reschedule in ${options.delay ?? 0}`);
    this.name = "Reschedule";
    this.delay = options.delay ?? 0;
    this.extendExpiration = options.extendExpiration;
  }
}

/** The context of a handler run, over signal and the task's deadline. */
export function taskContext(task: Task, lease: Lease, signal: AbortSignal): TaskContext {
  const deadline = task.expires_at ? new Date(task.expires_at) : undefined;
  const remainingMs = () => (deadline ? deadline.getTime() - Date.now() : undefined);
  const traceparent = task.traceparent || undefined;
  const tracestate = traceparent ? task.tracestate || undefined : undefined;
  const traceHeaders: Record<string, string> = {};
  if (traceparent) traceHeaders.traceparent = traceparent;
  if (tracestate) traceHeaders.tracestate = tracestate;
  return {
    signal,
    lease,
    deadline,
    remainingMs,
    traceparent,
    tracestate,
    traceHeaders,
    shouldAbort(marginMs = 0) {
      if (signal.aborted) return true;
      const left = remainingMs();
      return left !== undefined && left <= marginMs;
    },
  };
}

/** The message of anything thrown. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
