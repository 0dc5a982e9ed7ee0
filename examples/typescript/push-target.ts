// An HTTPS push target: verifies each delivery's signature over its raw body
// (the secret, its own URL as the queue declares it, and its queue) before
// any handler runs, answers a repeated delivery (same task id and attempt)
// as the first, and turns the handler's result into the answer that decides
// the task (200 completes, 422 fails without retry, 500 retries).
//
//   S3Q_PUSH_SECRET=dev-secret node push-target.js          # serves http://127.0.0.1:9000/
//   ./s3q queue create hooks --target-url http://127.0.0.1:9000/ --target-secret dev
//
// In production it serves https:// and reads the secret from the SSM
// parameter the queue's target names.
import { createServer } from "node:http";
import { pushTarget, type Handlers } from "@s3q/client";

const handlers: Handlers = {
  "email.send": (task) => ({ handled_by: "node-push-target", input: task.input }),
};

const url = process.env.TARGET_URL ?? "http://127.0.0.1:9000/";
const server = createServer(
  pushTarget(handlers, {
    secret: process.env.S3Q_PUSH_SECRET ?? "dev-secret",
    ...(process.env.S3Q_PUSH_PREVIOUS_SECRET ? { previousSecret: process.env.S3Q_PUSH_PREVIOUS_SECRET } : {}),
    url,
    queue: process.env.QUEUE ?? "hooks",
  }),
);
server.listen(Number(new URL(url).port), new URL(url).hostname, () => console.log(`push target on ${url}`));
process.on("SIGTERM", () => server.close());
