// Errors of the client: every API error answer ({"error":{"code","message","field"}})
// becomes an S3qError, of the subclass of its family, so a program can branch
// with instanceof or on `kind`.

/** The family of an S3qError, one per subclass. */
export type ErrorKind =
  | "invalid_argument" // refused by the client before any request
  | "bad_request" // 400, 413
  | "not_found" // 404
  | "conflict" // 409 other than a lease's
  | "lease" // 409 not_running, lease_mismatch, lease_expired, or a used lease token
  | "deadline_exceeded" // 504 deadline_exceeded: a waited-for task's deadline passed
  | "unavailable" // 429, 503, another 5xx, or no answer (network error)
  | "http"; // any other status

/** The lease error codes of the API (409). */
export const LEASE_CODES: readonly string[] = ["not_running", "lease_mismatch", "lease_expired"];

/**
 * An error of s3q: an API error answer, a request that got no answer, or an
 * argument the client refused before sending anything.
 */
export class S3qError extends Error {
  /** The family of the error (one per subclass). */
  readonly kind: ErrorKind;
  /** The HTTP status; 0 when no answer came (network error) or no request was sent. */
  readonly status: number;
  /** The API's error code, e.g. "invalid_input", "lease_expired", "not_found". */
  readonly code: string;
  /** The request field (or client argument) at fault, when known. */
  readonly field: string | undefined;
  /** The server's Retry-After in milliseconds, when it sent one. */
  readonly retryAfterMs: number | undefined;

  constructor(
    kind: ErrorKind,
    init: { status: number; code: string; message: string; field?: string | undefined; retryAfterMs?: number | undefined; cause?: unknown },
  ) {
    const where = init.field ? ` (field ${init.field})` : "";
    super(`s3q: ${init.status ? init.status + " " : ""}${init.code}: ${init.message}${where}`, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.kind = kind;
    this.status = init.status;
    this.code = init.code;
    this.field = init.field;
    this.retryAfterMs = init.retryAfterMs;
  }

  /** Whether sending the same request again later may succeed (throttling, a server error, no answer). */
  get retryable(): boolean {
    return this.kind === "unavailable";
  }
}

/** An argument the client refused before sending any request; `field` names it. */
export class InvalidArgumentError extends S3qError {
  constructor(field: string, message: string) {
    super("invalid_argument", { status: 0, code: "invalid_argument", message, field });
  }
}

/** The server refused the request as invalid (400) or too large (413). */
export class BadRequestError extends S3qError {}
/** The task, queue, schedule or artifact does not exist (in this queue): 404. */
export class NotFoundError extends S3qError {}
/** A state conflict (409): the id is taken by another request, the task is not in a state for this. */
export class ConflictError extends S3qError {}
/** A lease operation whose lease has ended (not_running, lease_mismatch, lease_expired, or a token already used for another outcome): a conflict that no retry mends. */
export class LeaseError extends ConflictError {}
/** A waited-for task's deadline passed before it finished (504 deadline_exceeded). */
export class DeadlineExceededError extends S3qError {}
/** Throttled, a server error, or no answer at all: retryable. */
export class UnavailableError extends S3qError {}
/** Any other HTTP error status. */
export class HTTPError extends S3qError {}

/** Builds the error of an API answer with status >= 400. */
export function errorFromAnswer(status: number, text: string, retryAfter: string | null): S3qError {
  let code = "";
  let message = text.slice(0, 200);
  let field: string | undefined;
  try {
    const body: unknown = JSON.parse(text);
    if (isRecord(body) && isRecord(body.error) && typeof body.error.code === "string") {
      code = body.error.code;
      message = typeof body.error.message === "string" ? body.error.message : "";
      field = typeof body.error.field === "string" && body.error.field !== "" ? body.error.field : undefined;
    }
  } catch {
    // not JSON: the text is the message
  }
  if (code === "") code = `http_${status}`;
  const init = { status, code, message, field, retryAfterMs: parseRetryAfter(retryAfter) };
  return errorFromCode(init);
}

/** Builds the error of a code and status (an answer's, or a batch item's). */
export function errorFromCode(init: { status: number; code: string; message: string; field?: string | undefined; retryAfterMs?: number | undefined }): S3qError {
  const { status, code } = init;
  if (status === 409 && (LEASE_CODES.includes(code) || (code === "conflict" && init.field === "lease_token"))) {
    return new LeaseError("lease", init);
  }
  if (status === 504 && code === "deadline_exceeded") return new DeadlineExceededError("deadline_exceeded", init);
  if (status === 400 || status === 413) return new BadRequestError("bad_request", init);
  if (status === 404) return new NotFoundError("not_found", init);
  if (status === 409) return new ConflictError("conflict", init);
  if (status === 429 || status >= 500) return new UnavailableError("unavailable", init);
  return new HTTPError("http", init);
}

/** The status a batch item's error code goes with (a batch answers 200 as a whole). */
export function itemStatus(code: string): number {
  switch (code) {
    case "not_found":
      return 404;
    case "conflict":
    case "already_exists":
    case "invalid_state":
      return 409;
    case "too_large":
      return 413;
    case "throttled":
      return 503;
    case "internal":
      return 500;
  }
  return 400;
}

export function parseRetryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

/** Reports whether v is a plain object. */
export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
