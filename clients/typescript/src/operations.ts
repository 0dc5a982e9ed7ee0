// Which Client method makes each operation of the document, by operationId.
// The test over it fails when the document has an operation no method
// makes, or names one it no longer has; tsc fails when a route here is not
// one of the document's.

import type { Client } from "./client.js";
import type { Route } from "./types.js";

/** Each operationId of shared/api/openapi.json: its route and the Client method that calls it. */
export const OPERATIONS = {
  getOpenAPIDocument: { route: "GET /openapi.json", method: "openAPI" },
  listQueues: { route: "GET /queues", method: "listQueues" },
  deleteQueue: { route: "DELETE /queues/{queue}", method: "deleteQueue" },
  getQueue: { route: "GET /queues/{queue}", method: "getQueue" },
  declareQueue: { route: "PUT /queues/{queue}", method: "declareQueue" },
  cancelTasks: { route: "POST /queues/{queue}/bulk/cancel", method: "bulkCancel" },
  expireTasks: { route: "POST /queues/{queue}/bulk/expire", method: "bulkExpire" },
  retryTasks: { route: "POST /queues/{queue}/bulk/retry", method: "bulkRetry" },
  claimTask: { route: "POST /queues/{queue}/claim", method: "claim" },
  claimTaskWithWait: { route: "POST /queues/{queue}/claim/wait", method: "claim" },
  pauseQueue: { route: "POST /queues/{queue}/pause", method: "pauseQueue" },
  purgeTasks: { route: "POST /queues/{queue}/purge", method: "purge" },
  resumeQueue: { route: "POST /queues/{queue}/resume", method: "resumeQueue" },
  listSchedules: { route: "GET /queues/{queue}/schedules", method: "listSchedules" },
  createSchedule: { route: "POST /queues/{queue}/schedules", method: "createSchedule" },
  deleteSchedule: { route: "DELETE /queues/{queue}/schedules/{id}", method: "deleteSchedule" },
  getSchedule: { route: "GET /queues/{queue}/schedules/{id}", method: "getSchedule" },
  replaceSchedule: { route: "PUT /queues/{queue}/schedules/{id}", method: "updateSchedule" },
  getScheduleHistory: { route: "GET /queues/{queue}/schedules/{id}/history", method: "scheduleHistory" },
  pauseSchedule: { route: "POST /queues/{queue}/schedules/{id}/pause", method: "pauseSchedule" },
  resumeSchedule: { route: "POST /queues/{queue}/schedules/{id}/resume", method: "resumeSchedule" },
  triggerSchedule: { route: "POST /queues/{queue}/schedules/{id}/trigger", method: "triggerSchedule" },
  getQueueStats: { route: "GET /queues/{queue}/stats", method: "queueStats" },
  listTasks: { route: "GET /queues/{queue}/tasks", method: "list" },
  submitTask: { route: "POST /queues/{queue}/tasks", method: "submit" },
  submitTasks: { route: "POST /queues/{queue}/tasks/batch", method: "submitBatch" },
  submitTaskWithWait: { route: "POST /queues/{queue}/tasks/wait", method: "submit" },
  getTask: { route: "GET /queues/{queue}/tasks/{id}", method: "get" },
  createArtifactUpload: { route: "POST /queues/{queue}/tasks/{id}/artifacts", method: "createArtifact" },
  getArtifactDownload: { route: "GET /queues/{queue}/tasks/{id}/artifacts/{name}", method: "getArtifact" },
  cancelTask: { route: "POST /queues/{queue}/tasks/{id}/cancel", method: "cancel" },
  acknowledgeCancel: { route: "POST /queues/{queue}/tasks/{id}/cancel-ack", method: "ackCancel" },
  completeTask: { route: "POST /queues/{queue}/tasks/{id}/complete", method: "complete" },
  expireTask: { route: "POST /queues/{queue}/tasks/{id}/expire", method: "expire" },
  failTask: { route: "POST /queues/{queue}/tasks/{id}/fail", method: "fail" },
  heartbeatTask: { route: "POST /queues/{queue}/tasks/{id}/heartbeat", method: "heartbeat" },
  getTaskHistory: { route: "GET /queues/{queue}/tasks/{id}/history", method: "history" },
  rescheduleTask: { route: "POST /queues/{queue}/tasks/{id}/reschedule", method: "reschedule" },
  retryTask: { route: "POST /queues/{queue}/tasks/{id}/retry", method: "retry" },
  listAllTasks: { route: "GET /tasks", method: "list" },
} as const satisfies Record<string, { route: Route; method: keyof Client }>;
