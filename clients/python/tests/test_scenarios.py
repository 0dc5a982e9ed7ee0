"""One test per scenario of contract/scenarios.json, against a fresh `s3q dev`."""

from __future__ import annotations

import http.server
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import urllib.request
from typing import Any, Dict, List, Tuple

import pytest
from conftest import PUSH_SECRET, PUSH_SECRET_NAME, free_port, wait_for
from scenario import scenario

import s3q
from s3q.push import PushTarget, Verifier


class LosingProxy:
    """A proxy in front of the server that forwards the first submit, then answers 503 as
    if the answer were lost on the way back."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.forwarded = 0
        proxy = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                req = urllib.request.Request(
                    proxy.upstream + self.path, data=body, method="POST", headers={"Content-Type": "application/json"}
                )
                with urllib.request.urlopen(req) as r:
                    answer = r.read()
                proxy.forwarded += 1
                if proxy.forwarded == 1:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(r.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *a: Any) -> None:
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


@scenario("submit_retried_request_makes_one_task")
def test_submit_retried_request_makes_one_task(server: str, client: s3q.Client) -> None:
    proxy = LosingProxy(server)
    try:
        lossy = s3q.Client(proxy.url, queue=client.queue, retry_backoff=0.01)
        got = lossy.submit("email.send", {"to": "a@example.com"})
    finally:
        proxy.close()
    assert proxy.forwarded == 2  # the first answer was lost, the retry carried the same id
    assert got["replayed"] is True
    tasks = list(client.list())
    assert [t["id"] for t in tasks] == [got["task"]["id"]]
    # The same id sent again by hand answers the same task.
    again = client.submit("email.send", {"to": "a@example.com"}, id=got["task"]["id"])
    assert again["replayed"] is True and again["task"]["id"] == got["task"]["id"]
    assert len(list(client.list())) == 1


@scenario("submit_dedup_key")
def test_submit_dedup_key(client: s3q.Client) -> None:
    first = client.submit("email.send", {"n": 1}, dedup_key="welcome:42")
    second = client.submit("email.send", {"n": 2}, dedup_key="welcome:42")
    assert first["task"]["id"] != "" and second["task"]["id"] == first["task"]["id"]
    assert second.get("deduplicated") is True
    assert len(list(client.list())) == 1


@scenario("lease_operation_replayed")
def test_lease_operation_replayed(client: s3q.Client) -> None:
    client.submit("email.send", {})
    (c,) = client.claim()
    done = client.complete(c["lease"], {"sent": True})
    again = client.complete(c["lease"], {"sent": True})
    assert done["status"] == again["status"] == "completed"
    assert again["output"] == {"sent": True}
    with pytest.raises(s3q.ConflictError) as e:
        client.complete(c["lease"], {"sent": False})
    assert e.value.status == 409 and not e.value.retryable


@scenario("cancel_reaches_handler")
def test_cancel_reaches_handler(client: s3q.Client) -> None:
    started, saw_cancel = threading.Event(), threading.Event()
    w = s3q.Worker(client, wait=1)  # the task's own lease (5m): the cancel poll sees it within seconds

    @w.task("report.build")
    def build(task: s3q.TaskContext) -> None:
        started.set()
        if task.cancelled.wait(30):
            saw_cancel.set()

    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    t.start()
    try:
        task_id = client.submit("report.build", {})["task"]["id"]
        assert started.wait(20)
        assert client.cancel(task_id)["cancel_requested"] is True
        assert saw_cancel.wait(20)
        wait_for("the task to end cancelled", lambda: client.status(task_id)["status"] == "cancelled")
    finally:
        w.stop()
        t.join(30)


@scenario("ttl_expiry")
def test_ttl_expiry(client: s3q.Client) -> None:
    task_id = client.submit("email.send", {}, ttl="1s")["task"]["id"]
    wait_for("the task to read expired", lambda: client.status(task_id)["status"] == "expired")
    assert client.claim(task_types=["email.send"]) == []
    assert client.status(task_id)["expiry_reason"] == "ttl"


@scenario("dead_letter_and_retry")
def test_dead_letter_and_retry(client: s3q.Client) -> None:
    task_id = client.submit("email.send", {}, max_attempts=1)["task"]["id"]
    (c,) = client.claim()
    failed = client.fail(c["lease"], "smtp down")
    assert failed["status"] == "failed" and failed["last_error"] == "smtp down"
    retried: List[s3q.models.Task] = []

    def retry() -> bool:
        # Until the server retries a dead letter at once (its event then published by the
        # retry), a retry may have to wait for the next sweep (every second here).
        try:
            retried.append(client.retry(task_id))
            return True
        except s3q.ConflictError as e:
            assert e.code == "invalid_state"
            return False

    wait_for("the dead letter to be retryable", retry)
    assert retried[0]["status"] == "pending"
    w = s3q.Worker(client, wait=1)
    w.handle("email.send", lambda task: {"sent": True})
    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    t.start()
    try:
        wait_for("the retried task to complete", lambda: client.status(task_id)["status"] == "completed")
    finally:
        w.stop()
        t.join(30)
    assert client.status(task_id)["output"] == {"sent": True}


@scenario("schedule_in_time_zone")
def test_schedule_in_time_zone(client: s3q.Client) -> None:
    s = client.create_schedule("daily-report", "report.daily", "0 9 * * *", {"kind": "daily"}, timezone="Europe/Paris")
    got = client.get_schedule("daily-report")
    assert s["cron"] == got["cron"] == "0 9 * * *"
    assert got.get("timezone") == "Europe/Paris"
    # 09:00 in Paris is 08:00 UTC in winter, 07:00 in summer.
    assert got["next_run_at"] is not None and got["next_run_at"][11:16] in ("08:00", "07:00")
    fire = client.trigger_schedule("daily-report")
    assert fire.get("task_id")
    fires = list(client.schedule_history("daily-report"))
    assert fire["task_id"] in [f.get("task_id") for f in fires]
    assert client.status(fire["task_id"])["task_type"] == "report.daily"


@scenario("queue_pause_resume")
def test_queue_pause_resume(client: s3q.Client) -> None:
    task_id = client.submit("email.send", {})["task"]["id"]
    assert client.pause()["paused"] is True
    assert client.claim() == []
    assert not client.resume().get("paused")
    (c,) = client.claim()
    assert c["task"]["id"] == task_id


@scenario("queue_purge")
def test_queue_purge(client: s3q.Client) -> None:
    ids = [client.submit("email.send", {"n": i})["task"]["id"] for i in range(3)]
    keep = client.submit("email.send", {"n": "keep"})["task"]["id"]
    for i in ids:
        client.cancel(i)
    reply = client.purge("cancelled")
    assert reply["changed"] == 3 and not reply.get("next_cursor")
    for i in ids:
        with pytest.raises(s3q.NotFoundError):
            client.status(i)
    assert client.status(keep)["status"] == "pending"


@scenario("list_pages_to_end")
def test_list_pages_to_end(client: s3q.Client) -> None:
    ids = {r["task"]["id"] for r in client.submit_batch([{"task_type": "email.send", "input": i} for i in range(7)])}
    page = client.list_page(limit=2)
    assert len(page["tasks"]) == 2 and page.get("next_cursor")
    seen = [t["id"] for t in client.list(limit=2)]
    assert len(seen) == len(set(seen)) == 7
    assert set(seen) == ids


@scenario("error_bad_request")
def test_error_bad_request(client: s3q.Client) -> None:
    # One the server refuses (the client passes duration strings through as they are).
    with pytest.raises(s3q.BadRequestError) as e:
        client.submit("email.send", {}, ttl="soon")
    assert (e.value.status, e.value.code, e.value.field) == (400, "invalid_input", "ttl")
    assert e.value.message and not e.value.retryable
    # A task type the server would refuse fails before any request, naming the argument.
    with pytest.raises(s3q.ArgumentError) as a:
        client.submit("no spaces allowed", {})
    assert a.value.argument == "task_type"


@scenario("error_not_found")
def test_error_not_found(client: s3q.Client) -> None:
    with pytest.raises(s3q.NotFoundError) as e:
        client.status(s3q.new_id())
    assert e.value.status == 404 and e.value.code == "not_found"


@scenario("error_conflict")
def test_error_conflict(client: s3q.Client) -> None:
    task_id = client.submit("email.send", {"to": "a"})["task"]["id"]
    with pytest.raises(s3q.ConflictError) as e:
        client.submit("email.send", {"to": "b"}, id=task_id)
    assert (e.value.status, e.value.code, e.value.field) == (409, "conflict", "id")
    assert not isinstance(e.value, s3q.LeaseError)


@scenario("error_lease")
def test_error_lease(client: s3q.Client) -> None:
    client.submit("email.send", {})
    (c,) = client.claim()
    wrong = dict(c["lease"], token="0" * 32)
    with pytest.raises(s3q.LeaseError) as e:
        client.complete(wrong, {})  # type: ignore[arg-type]
    assert e.value.status == 409 and e.value.code == "lease_mismatch" and not e.value.retryable
    client.complete(c["lease"], {})
    with pytest.raises(s3q.LeaseError) as stale:  # the lease already ended by the complete
        client.fail(c["lease"], "too late")
    assert (stale.value.status, stale.value.code, stale.value.field) == (409, "conflict", "lease_token")
    assert not stale.value.retryable


WORKER_SCRIPT = """
import os, sys, time, s3q
url, queue, marks = sys.argv[1], sys.argv[2], sys.argv[3]
w = s3q.Worker(s3q.Client(url, queue=queue), concurrency=2, wait=1, shutdown_grace=20)

@w.task("video.encode")
def encode(task):
    with open(os.path.join(marks, task.id + ".start"), "a") as f:
        f.write("x")
    time.sleep(1.5)
    with open(os.path.join(marks, task.id + ".done"), "a") as f:
        f.write("x")
    return {"encoded": task.input}

w.run()
print("stopped cleanly", flush=True)
"""


@scenario("worker_graceful_stop")
def test_worker_graceful_stop(server: str, client: s3q.Client, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[1]))
    p = subprocess.Popen(
        [sys.executable, str(script), server, client.queue, str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        task_id = client.submit("video.encode", "clip-1")["task"]["id"]
        wait_for("the handler to start", lambda: (tmp_path / (task_id + ".start")).exists())
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, out.decode()
    assert b"stopped cleanly" in out
    task = client.status(task_id)
    assert task["status"] == "completed" and task["output"] == {"encoded": "clip-1"}
    assert (tmp_path / (task_id + ".start")).read_text() == "x"  # ran once
    assert task["attempt"] == 1


class Target:
    """A push target: a local HTTP server answering with s3q.push.PushTarget."""

    def __init__(self, queue: str) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/hook"
        self.ran: List[str] = []
        self.captured: List[Tuple[bytes, Dict[str, str]]] = []
        self.answers: List[int] = []
        target = PushTarget(
            Verifier(["old-secret-being-rotated-out", PUSH_SECRET], url=self.url, queue=queue),
            {"email.send": self.send},
        )
        me = self

        class H(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                headers = {k: v for k, v in self.headers.items()}
                me.captured.append((body, headers))
                status, answer = target.answer(body, headers)
                me.answers.append(status)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *a: Any) -> None:
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def send(self, task: s3q.TaskContext) -> Any:
        self.ran.append(task.id)
        return {"sent_to": task.input["to"]}

    def close(self) -> None:
        self.srv.shutdown()
        self.srv.server_close()


@scenario("push_delivery_verified")
def test_push_delivery_verified(server: str, client: s3q.Client) -> None:
    target = Target(client.queue)
    try:
        client.declare_queue(target={"url": target.url, "secret": PUSH_SECRET_NAME})
        got = client.submit("email.send", {"to": "a@example.com"}, wait="10s")
        if got["task"]["status"] != "completed":
            wait_for("the delivery", lambda: client.status(got["task"]["id"])["status"] == "completed")
        task = client.status(got["task"]["id"])
        assert task["status"] == "completed" and task["output"] == {"sent_to": "a@example.com"}
        assert target.ran == [task["id"]] and target.answers == [200]
        body, headers = target.captured[0]
        assert json.loads(body)["task"]["id"] == task["id"]
        # A tampered delivery (the body changed, the signature kept) is refused before any handler.
        tampered = body.replace(b"a@example.com", b"x@example.com")
        req = urllib.request.Request(target.url, data=tampered, method="POST", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        assert e.value.code == 401
        assert target.ran == [task["id"]]
        # The same delivery again answers as the first did, without running the handler again.
        req = urllib.request.Request(target.url, data=body, method="POST", headers=headers)
        with urllib.request.urlopen(req) as r:
            assert json.loads(r.read()) == {"sent_to": "a@example.com"}
        assert target.ran == [task["id"]]
    finally:
        target.close()
