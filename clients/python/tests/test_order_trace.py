"""Priorities, W3C trace context and a rate-limited queue's held-back claims against a fresh
`s3q dev`; the Retry-After of a held-back claim, to the millisecond, also against a tiny local
HTTP server that answers as a rate-limited queue does (204 with Retry-After)."""

from __future__ import annotations

import http.server
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest
from conftest import free_port, wait_for
from scenario import scenario

import s3q
from s3q import _times
from s3q.errors import parse_retry_after

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TP2 = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@scenario("priority_claim_order")
def test_claims_take_the_highest_priority_first(client: s3q.Client) -> None:
    ids: Dict[int, str] = {}
    for p in (5, 3, 1, 4, 2):
        ids[p] = client.submit("job", {"p": p}, priority=p)["task"]["id"]
    plain = client.submit("job", {"p": None})["task"]
    assert plain.get("priority", 3) == 3
    order = []
    for _ in range(6):
        (c,) = client.claim(max_tasks=1)
        order.append(c["task"]["id"])
        assert c["task"]["priority"] in (1, 2, 3, 4, 5)
    # 3 twice: the explicit one first (submitted earlier), then the default.
    assert order == [ids[1], ids[2], ids[3], plain["id"], ids[4], ids[5]]
    assert client.status(ids[1])["priority"] == 1


def test_a_queue_default_and_a_schedule_carry_a_priority(client: s3q.Client) -> None:
    q = client.declare_queue(priority=2)
    assert q["priority"] == 2
    assert client.submit("job")["task"]["priority"] == 2
    assert client.submit("job", priority=5)["task"]["priority"] == 5
    sched = client.create_schedule("nightly", "job", "@hourly", priority=1)
    assert sched["priority"] == 1
    fire = client.trigger_schedule("nightly")
    assert client.status(fire["task_id"])["priority"] == 1


def test_a_bad_priority_is_refused_naming_it(client: s3q.Client) -> None:
    with pytest.raises(s3q.BadRequestError) as e:
        client.submit("job", priority=9)
    assert e.value.field == "priority"
    with pytest.raises(s3q.ArgumentError) as a:
        client.submit("job", priority="high")  # type: ignore[arg-type]
    assert a.value.argument == "priority"
    with pytest.raises(s3q.ArgumentError):
        client.submit("job", priority=True)


@scenario("trace_context_reaches_handler")
def test_the_trace_context_is_kept_shown_and_handed_to_the_handler(client: s3q.Client) -> None:
    traced = client.submit("traced", {"n": 1}, traceparent=TP, tracestate="vendor=abc")["task"]
    assert traced["traceparent"] == TP and traced["tracestate"] == "vendor=abc"
    assert client.status(traced["id"])["traceparent"] == TP
    plain = client.submit("traced", {"n": 2})["task"]
    assert "traceparent" not in client.status(plain["id"])

    batch = client.submit_batch(
        [{"task_type": "traced"}, {"task_type": "traced", "traceparent": TP2}], traceparent=TP, tracestate="v=1"
    )
    assert [r["task"]["traceparent"] for r in batch] == [TP, TP2]

    seen: Dict[str, Tuple[Optional[str], Optional[str], Dict[str, str]]] = {}
    w = s3q.Worker(client, wait=1)

    @w.task("traced")
    def handle(task: s3q.TaskContext) -> None:
        seen[task.id] = (task.traceparent, task.tracestate, task.trace_headers)

    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    t.start()
    try:
        wait_for("the four tasks", lambda: len(seen) == 4)
    finally:
        w.stop()
        t.join(30)
    assert seen[traced["id"]] == (TP, "vendor=abc", {"traceparent": TP, "tracestate": "vendor=abc"})
    assert seen[plain["id"]] == (None, None, {})
    assert seen[batch[1]["task"]["id"]][0] == TP2


def test_a_malformed_traceparent_is_refused_naming_it(client: s3q.Client) -> None:
    with pytest.raises(s3q.BadRequestError) as e:
        client.submit("job", traceparent="00-not-a-trace-01")
    assert e.value.field == "traceparent"
    with pytest.raises(s3q.ArgumentError) as a:
        client.submit("job", traceparent="00-x\r\nevil: 1")
    assert a.value.argument == "traceparent"


def test_a_claim_the_rate_limit_holds_back_answers_no_task_and_how_long_to_wait(client: s3q.Client) -> None:
    q = client.declare_queue(max_per_second=0.5, burst=1)  # one task every 2 seconds
    assert q["max_per_second"] == 0.5 and q["burst"] == 1
    ids = {client.submit("job", {"n": n})["task"]["id"] for n in range(3)}
    first, after = client._claim(max_tasks=1)
    assert len(first) == 1 and after is None
    held, after = client._claim(max_tasks=1)
    assert held == [] and after is not None and 0 < after <= 2.0, after
    assert client.claim(max_tasks=1) == []
    client.complete(first[0]["lease"])

    # The worker waits each Retry-After out and runs the rest: one every 2 seconds.
    done: List[str] = []
    w = s3q.Worker(client, wait=0, idle_backoff=0.01, max_idle_backoff=0.01)
    w.handle("job", lambda task: done.append(task.id))
    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    t.start()
    try:
        wait_for("the two other tasks", lambda: len(done) == 2)
    finally:
        w.stop()
        t.join(30)
    assert set(done) | {first[0]["task"]["id"]} == ids
    starts = sorted(_times_of(client, ids))
    assert all(b - a >= 1.9 for a, b in zip(starts, starts[1:])), starts


def _times_of(client: s3q.Client, ids: "set[str]") -> List[float]:
    """When each task started (started_at, seconds)."""
    out = []
    for i in ids:
        st = _times.parse(client.status(i).get("started_at"))
        assert st is not None
        out.append(st.timestamp())
    return out


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after("0.25") == 0.25
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0


class _HeldBack(http.server.BaseHTTPRequestHandler):
    """Answers claims as a rate-limited queue does: the first with 204 and Retry-After, then
    plain 204s (nothing to do). Records when each claim came."""

    claims: List[Tuple[str, float]] = []
    retry_after = "1"
    retry_after_ms = ""

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).claims.append((self.path, time.monotonic()))
        self.send_response(204)
        if len(type(self).claims) == 1:
            self.send_header("Retry-After", type(self).retry_after)
            if type(self).retry_after_ms:
                self.send_header("S3q-Retry-After-Ms", type(self).retry_after_ms)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def held_back() -> Iterator[str]:
    _HeldBack.claims = []
    _HeldBack.retry_after_ms = ""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), _HeldBack)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


def test_a_claim_answered_204_with_retry_after_returns_it(held_back: str) -> None:
    c = s3q.Client(held_back, queue="limited")
    assert c._claim(max_tasks=1) == ([], 1.0)
    assert c._claim(max_tasks=1) == ([], None)
    assert c.claim() == []


def test_the_milliseconds_header_is_read_first(held_back: str) -> None:
    _HeldBack.retry_after_ms = "250"
    c = s3q.Client(held_back, queue="limited")
    assert c._claim(max_tasks=1) == ([], 0.25)


def test_the_worker_waits_as_long_as_retry_after_asks(held_back: str) -> None:
    # Without the header the next claim would come after idle_backoff (10ms); with it, no
    # sooner than Retry-After (1s). A lower bound: it holds on any machine.
    w = s3q.Worker(s3q.Client(held_back, queue="limited"), wait=0, idle_backoff=0.01, max_idle_backoff=0.01)
    w.handle("job", lambda task: None)
    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    t.start()
    try:
        wait_for("three claims", lambda: len(_HeldBack.claims) >= 3)
    finally:
        w.stop()
        t.join(30)
    (p1, t1), (_, t2) = _HeldBack.claims[0], _HeldBack.claims[1]
    assert p1 == "/queues/limited/claim"
    assert t2 - t1 >= 0.95, f"the second claim came {t2 - t1:.3f}s after a Retry-After of 1s"
