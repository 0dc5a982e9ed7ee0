// s3q from TypeScript: the client, the worker and push targets.

export { Client, Paged, sleep } from "./client.js";
export type {
  BatchResult,
  BatchTask,
  BulkOptions,
  CallOptions,
  ClaimOptions,
  ClientOptions,
  ListOptions,
  ListTasksOptions,
  Page,
  QueueOptions,
  ScheduleOptions,
  SubmitOptions,
  SubmitResult,
} from "./client.js";
export { newTaskId } from "./args.js";
export type { Duration, Instant } from "./args.js";
export {
  BadRequestError,
  ConflictError,
  DeadlineExceededError,
  HTTPError,
  InvalidArgumentError,
  LeaseError,
  NotFoundError,
  S3qError,
  UnavailableError,
} from "./errors.js";
export type { ErrorKind } from "./errors.js";
export { Permanent, Reschedule, TaskAborted } from "./handler.js";
export type { AbortKind, Handler, TaskContext } from "./handler.js";
export { Worker } from "./worker.js";
export type { Logger, WorkerOptions } from "./worker.js";
export {
  DEFAULT_TOLERANCE_MS,
  FunctionError,
  lambdaHandler,
  PERMANENT_ERROR_TYPE,
  PushVerifier,
  pushTarget,
  SignatureError,
  signDelivery,
} from "./push.js";
export type { Delivery, Handlers, HeadersLike, LambdaContext, Push, PushTargetOptions, PushVerifierOptions, SignatureFailure } from "./push.js";
export type { AwsCredentials, AwsCredentialsSource } from "./sigv4.js";
export type {
  Artifact,
  BulkRequest,
  BulkResult,
  Claimed,
  Counts,
  Fire,
  Lease,
  Queue,
  QueueSettings,
  QueueStats,
  Route,
  Schedule,
  ScheduleRequest,
  Status,
  PushDelivery,
  Target,
  Task,
  TaskVersion,
  TTLFrom,
} from "./types.js";
export type { components, paths } from "./openapi.js";
