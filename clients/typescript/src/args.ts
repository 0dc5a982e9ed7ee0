// Arguments as the client takes them (Dates, milliseconds) turned into what
// the API reads, checked before any request: a bad one is an
// InvalidArgumentError naming it.

import { randomBytes } from "node:crypto";
import { InvalidArgumentError } from "./errors.js";

/**
 * A duration: a number of **milliseconds** (as setTimeout takes), or a
 * string in the API's syntax ("90s", "30m", "1h", "7d", "1h30m", "250ms").
 */
export type Duration = number | string;

/** A point in time: a Date, or an RFC 3339 string with a zone ("2026-05-01T09:00:00Z", "...+02:00"). */
export type Instant = Date | string;

const DURATION = /^(\d+d)?((\d+(\.\d+)?(ns|us|µs|ms|s|m|h))*)$/;
// As the server reads times (Go's time.RFC3339): an upper-case T and Z, no space.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** Whether the date part of an RFC 3339 match names a real day (no February 30th). */
function realDay(m: RegExpExecArray): boolean {
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return mo >= 1 && mo <= 12 && d >= 1 && d <= new Date(Date.UTC(y, mo, 0)).getUTCDate();
}

/** The API's spelling of a duration argument (milliseconds become "Nms"). */
export function duration(name: string, d: Duration): string {
  if (typeof d === "number") {
    if (!Number.isFinite(d) || d < 0) throw new InvalidArgumentError(name, `${name} must be a finite number of milliseconds >= 0, not ${d}`);
    return `${Math.round(d)}ms`;
  }
  if (typeof d !== "string" || d === "" || !DURATION.test(d)) {
    throw new InvalidArgumentError(name, `${name} must be milliseconds or a duration such as "90s", "30m", "1h", "7d", not ${JSON.stringify(d)}`);
  }
  return d;
}

/** The API's spelling of a point in time (RFC 3339, UTC). */
export function instant(name: string, t: Instant): string {
  if (t instanceof Date) {
    if (Number.isNaN(t.getTime())) throw new InvalidArgumentError(name, `${name} is an invalid Date`);
    return t.toISOString();
  }
  const m = typeof t === "string" ? RFC3339.exec(t) : null;
  if (typeof t !== "string" || m === null || !realDay(m) || Number.isNaN(Date.parse(t))) {
    throw new InvalidArgumentError(name, `${name} must be a Date or an RFC 3339 time with a zone (e.g. 2026-05-01T09:00:00Z), not ${JSON.stringify(t)}`);
  }
  return t;
}

/** The JSON text of a value, or an InvalidArgumentError naming it when JSON.stringify cannot encode it. */
export function jsonText(name: string, v: unknown): string {
  let s: string | undefined;
  try {
    s = JSON.stringify(v);
  } catch (e) {
    throw new InvalidArgumentError(name, `${name} cannot be encoded as JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (s === undefined) throw new InvalidArgumentError(name, `${name} cannot be encoded as JSON (${typeof v})`);
  return s;
}

/** A positive integer argument. */
export function count(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(name, `${name} must be an integer >= 0, not ${n}`);
  return n;
}

/** A priority argument: an integer (the server checks the range, 1 highest to 5 lowest). */
export function priority(name: string, n: number): number {
  if (!Number.isInteger(n)) throw new InvalidArgumentError(name, `${name} must be an integer from 1 (highest) to 5 (lowest), not ${String(n)}`);
  return n;
}

/** A string sent as an HTTP header value (the server checks its form). */
export function headerValue(name: string, s: string): string {
  if (typeof s !== "string" || /[\r\n\0]/.test(s)) throw new InvalidArgumentError(name, `${name} must be a string of one line, not ${JSON.stringify(s)}`);
  return s;
}

/** A non-empty string argument (an id, a name, a token). */
export function nonEmpty(name: string, s: string): string {
  if (typeof s !== "string" || s === "") throw new InvalidArgumentError(name, `${name} is required`);
  return s;
}

/**
 * A new task id: a lowercase UUIDv7 (RFC 9562), time-ordered, made on the
 * client so that a retried submit names the same task.
 */
export function newTaskId(now: number = Date.now()): string {
  const b = randomBytes(16);
  let ms = BigInt(now);
  for (let i = 5; i >= 0; i--) {
    b[i] = Number(ms & 0xffn);
    ms >>= 8n;
  }
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
