// The answer checker the other tests run behind (answers.ts) refuses what
// the document does not allow.

import assert from "node:assert/strict";
import { test } from "node:test";
import { checkAnswer } from "./answers.js";

test("the answer checker passes a document-shaped answer and names what breaks it", () => {
  const task = {
    id: "01943a5e-0000-7000-8000-000000000001",
    queue: "q",
    task_type: "t",
    status: "pending",
    attempt: 0,
    max_attempts: 3,
    timeout: "5m",
    created_at: "2026-01-01T00:00:00Z",
    updated_at: "2026-01-01T00:00:00Z",
    available_at: "2026-01-01T00:00:00Z",
    expires_at: null,
  };
  assert.equal(checkAnswer("GET", "/queues/q/tasks/x", 200, JSON.stringify({ task })), undefined);
  assert.match(checkAnswer("GET", "/queues/q/tasks/x", 200, JSON.stringify({ task: { ...task, surprise: 1 } })) ?? "", /surprise|additional/);
  assert.match(checkAnswer("GET", "/queues/q/tasks/x", 200, JSON.stringify({ task: { ...task, status: "lost" } })) ?? "", /status|allowed/);
  assert.match(checkAnswer("GET", "/queues/q/tasks/x", 200, JSON.stringify({ task: { queue: "q" } })) ?? "", /required/);
  assert.equal(checkAnswer("GET", "/queues/q/tasks/x", 404, JSON.stringify({ error: { code: "not_found", message: "no task" } })), undefined);
  assert.match(checkAnswer("GET", "/queues/q/tasks/x", 418, "{}") ?? "", /not in the document/);
  assert.match(checkAnswer("POST", "/queues/q/tasks/batch", 200, JSON.stringify({ results: [{ nope: true }] })) ?? "", /tasks\/batch/);
});
