// The API's shapes, by their names in the OpenAPI document
// (shared/api/openapi.json), from the types generated into openapi.ts.

import type { components, paths } from "./openapi.js";

type S = components["schemas"];

/** A task as the API returns it. */
export type Task = S["Task"];
/** A task's status. */
export type Status = S["Status"];
/** Where a TTL counts from. */
export type TTLFrom = S["TTLFrom"];
/** A claim on a running task: its token and when it ends. */
export type Lease = S["Lease"];
/** A task handed to a worker with its lease. */
export type Claimed = S["Claimed"];
/** A declared queue, with its counts when asked for. */
export type Queue = S["Queue"];
/** A queue's counts by status. */
export type Counts = S["Counts"];
/** A queue's push target: a Lambda function, or a URL and the name of its signing secret. */
export type Target = S["Target"];
/** The settings of a queue declaration (PUT /queues/{queue}). */
export type QueueSettings = S["QueueRequest"];
/** A queue's stats (GET /queues/{queue}/stats). */
export type QueueStats = S["StatsReply"]["stats"];
/** A cron schedule. */
export type Schedule = S["Schedule"];
/** A schedule definition (create, update). */
export type ScheduleRequest = S["ScheduleRequest"];
/** One fire of a schedule. */
export type Fire = S["Fire"];
/** One stored version of a task record. */
export type TaskVersion = S["TaskVersion"];
/** What a push target receives (the document's webhook taskDelivery): the task, its lease and the deadline by which to answer. */
export type PushDelivery = S["PushDelivery"];
/** A presigned URL of a task's artifact. */
export type Artifact = S["Artifact"];
/** What a bulk operation (purge, retry, cancel, expire) did. */
export type BulkResult = S["BulkReply"];
/** The filter of a bulk operation. */
export type BulkRequest = S["BulkRequest"];

/** Routes of the document, as "METHOD /path/{param}". */
export type Route = {
  [P in keyof paths]: {
    [M in "get" | "post" | "put" | "delete"]: paths[P][M] extends { responses: unknown } ? `${Uppercase<M>} ${P & string}` : never;
  }["get" | "post" | "put" | "delete"];
}[keyof paths];
