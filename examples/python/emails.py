"""Emails from Python, three ways, with the same handlers.

    python emails.py worker --url http://127.0.0.1:8080 --queue mail      # a pull worker
    S3Q_PUSH_SECRET=dev-secret python emails.py target --addr 127.0.0.1:9000 --queue mail
                                                                          # an HTTPS push target
    # a Lambda push target: deploy this file with the s3q package; handler emails.lambda_handler

With `make dev` running, the push target in three commands (docs/clients.md):

    S3Q_PUSH_SECRET=dev-secret python examples/python/emails.py target --addr 127.0.0.1:9000 --queue mail &
    ./s3q queue create mail --target-url http://127.0.0.1:9000/ --target-secret dev
    ./s3q submit -q mail -t email.send -i '{"to":"a@example.com"}' --wait 10s
"""

from __future__ import annotations

import argparse
import http.server
import os
from typing import Any, Dict

import s3q
from s3q.push import PushTarget, Verifier


def send(task: s3q.TaskContext) -> Dict[str, Any]:
    """email.send: {"to": address} → {"sent_to": address}."""
    to = task.input.get("to") if isinstance(task.input, dict) else None
    if not isinstance(to, str) or "@" not in to:
        raise s3q.Permanent(f"no address to send to: {task.input!r}")  # no retry can mend it
    left = task.remaining()
    if left is not None and left.total_seconds() < 1:
        raise s3q.Reschedule(0)  # too close to the deadline to start: give it back
    # ... send the mail here; a long sender checks task.should_stop() between steps
    return {"sent_to": to}


HANDLERS = {"email.send": send}

# The Lambda push target: the function's handler is emails.lambda_handler.
lambda_handler = s3q.push.lambda_handler(HANDLERS)


def serve(addr: str, url: str, queue: str, secrets: list[str]) -> http.server.ThreadingHTTPServer:
    """An HTTP push target on addr for the deliveries of queue, declared with target URL url."""
    target = PushTarget(Verifier(secrets, url=url, queue=queue), HANDLERS)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))  # the exact bytes
            status, answer = target.answer(body, dict(self.headers.items()))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    host, port = addr.rsplit(":", 1)
    return http.server.ThreadingHTTPServer((host, int(port)), Handler)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["worker", "target"])
    ap.add_argument("--url", default=os.environ.get("S3Q_URL", "http://127.0.0.1:8080"), help="the API (worker)")
    ap.add_argument("--queue", default="mail")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--addr", default="127.0.0.1:9000", help="where the push target listens")
    ap.add_argument("--target-url", default="", help="the target URL as the queue declares it (default http://ADDR/)")
    a = ap.parse_args()
    if a.mode == "worker":
        worker = s3q.Worker(s3q.Client(a.url, queue=a.queue), concurrency=a.concurrency)
        for task_type, handler in HANDLERS.items():
            worker.handle(task_type, handler)
        worker.run()  # until SIGTERM/SIGINT: finishes or hands back what it holds
        return
    # S3Q_PUSH_SECRET is the current secret, S3Q_PUSH_SECRET_NEXT the next one while it is rotated.
    secrets = [s for s in (os.environ.get("S3Q_PUSH_SECRET", ""), os.environ.get("S3Q_PUSH_SECRET_NEXT", "")) if s]
    srv = serve(a.addr, a.target_url or f"http://{a.addr}/", a.queue, secrets)
    print(f"push target for queue {a.queue} on http://{a.addr}/", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
