// A Node Lambda push target: a queue declared with {"target": {"lambda":
// "<this function>"}} has each due task invoked here with {task, lease,
// deadline}. The handler's output completes the task; a thrown error fails
// the attempt (retried while attempts remain); a Permanent is not retried
// (errorType s3q.Permanent). The signal fires at the delivery's deadline.
//
// Deploy as the handler of a nodejs20.x (or later) function, bundled with
// @s3q/client; the function needs no AWS permissions of its own.
import { setTimeout as delay } from "node:timers/promises";
import { lambdaHandler, Permanent, type Handlers } from "@s3q/client";

const handlers: Handlers = {
  "email.send": async (task, { signal, remainingMs }) => {
    const { to } = task.input as { to?: string };
    if (!to) throw new Permanent("no address");
    const left = remainingMs(); // until the task's deadline (expires_at), if it has one
    if (left !== undefined && left < 1_000) throw new Error("too close to the task's deadline; retry");
    // Anything that takes a signal stops at the delivery's deadline:
    await delay(10, undefined, { signal });
    return { sent_to: to };
  },
};

export const handler = lambdaHandler(handlers);
