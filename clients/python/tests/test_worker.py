"""The worker's outcomes against a fresh `s3q dev`: output, Permanent, Reschedule, a failure
retried, the deadline, and a stop whose grace runs out handing the task back."""

from __future__ import annotations

import asyncio
import datetime as dt
import http.client
import logging
import os
import pathlib
import signal
import subprocess
import sys
import threading
from typing import Any, Dict

import pytest
from conftest import wait_for

import s3q


def start(w: s3q.Worker) -> threading.Thread:
    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    t.start()
    return t


def test_outcomes(client: s3q.Client) -> None:
    seen: Dict[str, Any] = {}
    w = s3q.Worker(client, concurrency=2, wait=1)

    @w.task("img.resize")
    def resize(task: s3q.TaskContext) -> Any:
        seen[task.input] = (task.deadline, task.remaining(), task.attempt)
        if task.input == "perm":
            raise s3q.Permanent("corrupt image")
        if task.input == "later" and task.attempt == 1 and not seen.get("rescheduled"):
            seen["rescheduled"] = True
            raise s3q.Reschedule(dt.timedelta(seconds=0))
        if task.input == "flaky" and task.attempt == 1:
            raise ValueError("try again")
        if task.input == "not-json":
            return {"when": dt.date(2030, 1, 1)}
        return {"done": task.input}

    t = start(w)
    try:
        ok = client.submit("img.resize", "ok", ttl="1h")["task"]["id"]
        perm = client.submit("img.resize", "perm")["task"]["id"]
        later = client.submit("img.resize", "later")["task"]["id"]
        flaky = client.submit("img.resize", "flaky", max_attempts=3)["task"]["id"]
        not_json = client.submit("img.resize", "not-json")["task"]["id"]
        wait_for("not-json", lambda: client.status(not_json)["status"] == "failed")
        wait_for("ok", lambda: client.status(ok)["status"] == "completed")
        wait_for("perm", lambda: client.status(perm)["status"] == "failed")
        wait_for("later", lambda: client.status(later)["status"] == "completed")
    finally:
        w.stop()
        t.join(30)
    assert client.status(ok)["output"] == {"done": "ok"}
    deadline, remaining, _ = seen["ok"]
    assert deadline is not None and remaining is not None and dt.timedelta(minutes=50) < remaining <= dt.timedelta(hours=1)
    assert seen["perm"][0] is None
    p = client.status(perm)
    assert p["last_error"] == "corrupt image" and p["attempt"] == 1
    assert client.status(later)["attempt"] == 1  # a reschedule uses no attempt
    assert "not JSON-serialisable" in client.status(not_json)["last_error"]
    f = client.status(flaky)
    assert f["status"] in ("pending", "completed") and f.get("last_error") == "try again"


def test_stop_past_grace_hands_the_task_back(client: s3q.Client) -> None:
    started, release = threading.Event(), threading.Event()
    w = s3q.Worker(client, wait=1, shutdown_grace=0.3)

    @w.task("slow.job")
    def slow(task: s3q.TaskContext) -> None:
        started.set()
        task.stopping.wait(30)  # a handler that checks its signal
        release.set()

    t = start(w)
    task_id = client.submit("slow.job", {})["task"]["id"]
    assert started.wait(20)
    w.stop()
    t.join(30)
    assert not t.is_alive() and release.is_set()
    got = client.status(task_id)
    assert got["status"] == "pending" and got.get("ended_by") == "reschedule"


def test_no_handlers_and_undeclared_queue(server: str) -> None:
    w = s3q.Worker(s3q.Client(server))
    with pytest.raises(ValueError):
        w.run(handle_signals=False)


HAND_BACK_SCRIPT = """
import os, sys, s3q
url, queue, marks = sys.argv[1], sys.argv[2], sys.argv[3]
w = s3q.Worker(s3q.Client(url, queue=queue), wait=1, shutdown_grace=0.5)

@w.task("video.encode")
def encode(task):
    open(os.path.join(marks, "started"), "w").close()
    task.stopping.wait(60)  # a long job that checks its signal
    return {"too": "late"}

w.run()
print("stopped cleanly", flush=True)
"""


def test_sigint_past_the_grace_hands_the_task_back(server: str, client: s3q.Client, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(HAND_BACK_SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parents[1]))
    p = subprocess.Popen(
        [sys.executable, str(script), server, client.queue, str(tmp_path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        task_id = client.submit("video.encode", "clip-2")["task"]["id"]
        wait_for("the handler to start", lambda: (tmp_path / "started").exists())
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0 and b"stopped cleanly" in out, out.decode()
    task = client.status(task_id)
    # Handed back: pending again at once, its attempt not spent on a failure, no output.
    assert task["status"] == "pending" and task.get("ended_by") == "reschedule"
    assert "output" not in task and "last_error" not in task
    (c,) = client.claim()
    assert c["task"]["id"] == task_id


def test_async_handlers(client: s3q.Client) -> None:
    w = s3q.Worker(client, wait=1)

    @w.task("async.job")
    async def job(task: s3q.TaskContext) -> Any:
        await asyncio.sleep(0.01)
        return {"doubled": task.input * 2}

    t = start(w)
    try:
        task_id = client.submit("async.job", 21)["task"]["id"]
        wait_for("the async handler", lambda: client.status(task_id)["status"] == "completed")
    finally:
        w.stop()
        t.join(30)
    assert client.status(task_id)["output"] == {"doubled": 42}


class _FlakyBeats:
    """A client whose heartbeat first meets answers no HTTP error class names (a cut body,
    a proxy's HTML page), then works."""

    def __init__(self) -> None:
        self.beats = 0

    def heartbeat(self, lease: Any, lease_for: Any = None) -> Any:
        self.beats += 1
        if self.beats == 1:
            raise http.client.IncompleteRead(b"{")
        if self.beats == 2:
            raise ValueError("Expecting value: line 1 column 1 (char 0)")  # json.loads of a non-JSON 200
        exp = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=0.3)
        return {"lease": dict(lease, expires_at=exp.isoformat()), "task": {"id": "t"}}


def test_heartbeat_outlives_an_odd_answer() -> None:
    """The heartbeat thread keeps beating after an error that is neither an APIError nor an
    OSError: had it died, the lease would lapse while the handler runs and another worker
    would run the task at the same time."""
    fake = _FlakyBeats()
    w = s3q.Worker(s3q.Client("http://127.0.0.1:9"), cancel_poll=0)
    w.client = fake  # type: ignore[assignment]
    exp = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=0.3)
    ctx = s3q.TaskContext({"id": "t", "task_type": "x"}, {"task_id": "t", "token": "k", "expires_at": exp.isoformat()})  # type: ignore[typeddict-item]
    stop = threading.Event()
    beat = threading.Thread(target=w._heartbeat, args=(ctx, stop), daemon=True)
    beat.start()
    wait_for("a third heartbeat", lambda: fake.beats >= 3 or not beat.is_alive(), timeout=10)
    stop.set()
    beat.join(5)
    assert fake.beats >= 3 and not ctx.lease_lost.is_set()


def test_an_output_the_server_refuses_fails_the_task(client: s3q.Client) -> None:
    """An output over the inline limit (413) fails the task at once, its reason kept; it was
    dropped with a warning, the lease lapsed, and the finished task ran again."""
    runs = []
    w = s3q.Worker(client, wait=1)

    @w.task("big.out")
    def big(task: s3q.TaskContext) -> Any:
        runs.append(task.attempt)
        return {"blob": "x" * 300_000}

    tid = client.submit("big.out", timeout="1m")["task"]["id"]  # a dropped output would wait for it
    t = start(w)
    try:
        wait_for("the task to end", lambda: client.status(tid)["status"] not in ("pending", "running"))
    finally:
        w.stop()
        t.join()
    got = client.status(tid)
    assert got["status"] == "failed" and runs == [1], (got, runs)
    assert "too_large" in (got.get("last_error") or ""), got


def test_a_reschedule_the_server_refuses_fails_the_attempt(client: s3q.Client) -> None:
    """Reschedule("soon") is no duration: the attempt fails with the reason (retried while
    attempts remain) instead of the lease lapsing with the finished handler's work lost."""
    w = s3q.Worker(client, wait=1)

    @w.task("later")
    def later(task: s3q.TaskContext) -> Any:
        raise s3q.Reschedule("soon")

    tid = client.submit("later", max_attempts=1, timeout="1m")["task"]["id"]
    t = start(w)
    try:
        wait_for("the task to end", lambda: client.status(tid)["status"] not in ("pending", "running"))
    finally:
        w.stop()
        t.join()
    got = client.status(tid)
    assert got["status"] == "failed" and "Reschedule was refused" in (got.get("last_error") or ""), got


class _LateCancel:
    """A client whose first cancel-poll read is held until the handler has returned, and
    lands a real cancel of the task meanwhile: the read then reports cancel_requested."""

    def __init__(self, real: s3q.Client) -> None:
        self.real = real
        self.polling = threading.Event()
        self.returned = threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def status(self, task_id: str, **kw: Any) -> Any:
        if not self.polling.is_set():
            self.polling.set()
            self.returned.wait(30)
            self.real.cancel(task_id)
        return self.real.status(task_id, **kw)


def test_a_cancel_seen_after_the_handler_returned_keeps_its_output(client: s3q.Client) -> None:
    """The outcome is what the handler saw when it returned: a cancel that a read in flight
    reports afterwards does not drop its output (the server completes a task asked to cancel);
    it was acknowledged as cancelled and the output lost."""
    late = _LateCancel(client)
    w = s3q.Worker(client, wait=1, cancel_poll=0.05)
    w.client = late  # type: ignore[assignment]

    @w.task("late.cancel")
    def job(task: s3q.TaskContext) -> Any:
        late.polling.wait(30)
        threading.Timer(0.3, late.returned.set).start()  # once this handler has returned
        return {"done": True}

    t = start(w)
    try:
        task_id = client.submit("late.cancel", {})["task"]["id"]
        wait_for("the task to end", lambda: client.status(task_id)["status"] not in ("pending", "running"))
    finally:
        w.stop()
        t.join(30)
    got = client.status(task_id)
    assert got["status"] == "completed" and got["output"] == {"done": True}, got


def test_a_failing_handler_is_logged_with_its_traceback(client: s3q.Client, caplog: pytest.LogCaptureFixture) -> None:
    """docs/clients.md: the worker logs to logging's s3q.worker; a handler's exception with its
    traceback (the task keeps only the message), a Permanent one without."""
    w = s3q.Worker(client, concurrency=1)

    @w.task("boom")
    def boom(task: s3q.TaskContext) -> None:
        raise RuntimeError("kaput")

    @w.task("bad")
    def bad(task: s3q.TaskContext) -> None:
        raise s3q.Permanent("no recipient")

    caplog.set_level(logging.INFO, logger="s3q.worker")
    t = start(w)
    try:
        a = client.submit("boom", {}, max_attempts=1)["task"]["id"]
        b = client.submit("bad", {})["task"]["id"]
        wait_for("both failed", lambda: all(client.status(i)["status"] == "failed" for i in (a, b)))
    finally:
        w.stop()
        t.join(30)
    boom_log = [r for r in caplog.records if a in r.getMessage()]
    assert len(boom_log) == 1 and "attempt 1 failed: kaput" in boom_log[0].getMessage(), caplog.text
    assert boom_log[0].exc_info is not None and boom_log[0].exc_info[0] is RuntimeError
    bad_log = [r for r in caplog.records if b in r.getMessage()]
    assert len(bad_log) == 1 and "failed for good: no recipient" in bad_log[0].getMessage(), caplog.text
    assert bad_log[0].exc_info is None
