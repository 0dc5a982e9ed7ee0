// A pull worker: claims "email.send" tasks of queue emails four at a time,
// long-polling; the handler's signal fires on a cancel request or a lost
// lease; SIGTERM stops it gracefully (running handlers finish within 30s,
// the rest are handed back).
//
//   S3Q_URL=http://127.0.0.1:8080 node worker.js
import { setTimeout as delay } from "node:timers/promises";
import { Client, Permanent, Reschedule, Worker } from "@s3q/client";

const client = new Client(process.env.S3Q_URL ?? "http://127.0.0.1:8080");
const worker = new Worker(client, { queue: "emails", concurrency: 4 });

worker.handle("email.send", async (task, { signal, shouldAbort }) => {
  const { to } = task.input as { to?: string };
  if (!to) throw new Permanent("no address"); // dead-lettered at once
  if (to.endsWith("@busy.example.com")) throw new Reschedule({ delay: "5m" }); // later, without using an attempt
  if (shouldAbort(5_000)) throw new Error("under 5s left before the task's deadline");
  const id = await sendMail(to, { signal }); // any I/O, given the signal
  return { sent_to: to, message_id: id };
});

/** Stands for your mail provider's client. */
async function sendMail(to: string, { signal }: { signal: AbortSignal }): Promise<string> {
  await delay(50, undefined, { signal });
  return `<${Date.now()}@${to.split("@")[1]}>`;
}

await worker.run();
