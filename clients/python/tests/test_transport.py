"""What the client sends again and what it does not, against a scripted HTTP server."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from typing import Any, Iterator, List, Tuple

import pytest

import s3q

DROP = 0  # a script status: no answer, the connection reset
CLOSE = 299  # a script status: a 200 answer, then the connection closed
TASK = {"id": "01a223d7-c154-7b04-b30d-77f7ceeea859", "task_type": "a.b", "status": "pending"}


class Scripted:
    """Answers each request with the next (status, body) of a script; records the requests."""

    def __init__(self) -> None:
        self.script: List[Tuple[int, Any]] = []
        self.seen: List[Tuple[str, str, Any]] = []
        self.closed = threading.Event()
        me = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(n)) if n else None
                me.seen.append((self.command, self.path, body))
                status, answer = me.script.pop(0) if me.script else (500, {"error": {"code": "internal", "message": "script over"}})
                if status == DROP:  # processed, then the connection is lost before any answer
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                if status == 503:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(raw)
                if status == CLOSE:  # answered, then the idle keep-alive connection is closed
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    me.closed.set()

            do_GET = do_POST = do_PUT = do_DELETE = handle_one  # noqa: N815

            def log_message(self, *a: Any) -> None:
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.srv.server_address[1]}"


@pytest.fixture
def api() -> Iterator[Scripted]:
    s = Scripted()
    yield s
    s.srv.shutdown()
    s.srv.server_close()


THROTTLED = (503, {"error": {"code": "throttled", "message": "slow down"}})


def test_submit_retries_with_the_same_id(api: Scripted) -> None:
    api.script = [THROTTLED, (500, {"error": {"code": "internal", "message": "x"}}), (201, {"task": TASK})]
    c = s3q.Client(api.url, retry_backoff=0.001)
    assert c.submit("a.b", {"x": 1})["task"]["id"] == TASK["id"]
    ids = {body["id"] for _, _, body in api.seen}
    assert len(api.seen) == 3 and len(ids) == 1


def test_gives_up_after_max_retries(api: Scripted) -> None:
    api.script = [THROTTLED] * 3
    c = s3q.Client(api.url, retry_backoff=0.001, max_retries=2)
    with pytest.raises(s3q.UnavailableError) as e:
        c.status(TASK["id"])
    assert e.value.retryable and e.value.retry_after == 0 and len(api.seen) == 3


def test_cancel_and_claim_are_sent_once(api: Scripted) -> None:
    api.script = [THROTTLED, THROTTLED]
    c = s3q.Client(api.url, retry_backoff=0.001)
    with pytest.raises(s3q.UnavailableError):
        c.cancel(TASK["id"])
    with pytest.raises(s3q.UnavailableError):
        c.claim()
    assert len(api.seen) == 2


def test_lease_operations_are_retried(api: Scripted) -> None:
    api.script = [THROTTLED, (200, {"task": dict(TASK, status="completed")})]
    c = s3q.Client(api.url, retry_backoff=0.001)
    lease: s3q.models.Lease = {"task_id": TASK["id"], "token": "t", "expires_at": "2030-01-01T00:00:00Z"}
    assert c.complete(lease, {"ok": True})["status"] == "completed"
    assert [b for _, _, b in api.seen] == [{"lease_token": "t", "output": {"ok": True}}] * 2


def test_deadline_exceeded_and_client_errors_are_not_retried(api: Scripted) -> None:
    api.script = [(504, {"error": {"code": "deadline_exceeded", "message": "expired while waiting"}})]
    c = s3q.Client(api.url, retry_backoff=0.001)
    with pytest.raises(s3q.DeadlineExceededError):
        c.submit("a.b", {}, wait="5s")
    assert api.seen[0][1].endswith("/tasks/wait") and len(api.seen) == 1


def test_error_answers_that_are_not_json(api: Scripted) -> None:
    api.script = [(502, "Bad Gateway")]
    c = s3q.Client(api.url, max_retries=0)
    with pytest.raises(s3q.UnavailableError) as e:
        c.status(TASK["id"])
    assert e.value.status == 502


def test_paths_escape_and_pages_follow(api: Scripted) -> None:
    api.script = [
        (200, {"tasks": [TASK], "next_cursor": "c/1"}),
        (200, {"tasks": [dict(TASK, id="2")]}),
    ]
    c = s3q.Client(api.url + "/prod", queue="a b")
    assert [t["id"] for t in c.list(status="pending", limit=1)] == [TASK["id"], "2"]
    assert api.seen[0][1] == "/prod/queues/a%20b/tasks?status=pending&limit=1"
    assert api.seen[1][1] == "/prod/queues/a%20b/tasks?status=pending&limit=1&cursor=c%2F1"


def test_a_lost_answer_on_a_kept_alive_connection_is_not_sent_again_when_not_safe(api: Scripted) -> None:
    """A claim (or cancel, retry, expire) whose answer is lost after the server processed it
    is not sent again: a second claim would lease a second task and leave the first leased
    to nobody until its lease runs out."""
    api.script = [(200, {"task": TASK}), (DROP, None), (200, {"task": TASK}), (DROP, None)]
    c = s3q.Client(api.url, retry_backoff=0.001)
    c.status(TASK["id"])  # the connection is now kept alive
    with pytest.raises(OSError):
        c.claim()
    assert [m + " " + p for m, p, _ in api.seen] == ["GET /queues/default/tasks/" + TASK["id"], "POST /queues/default/claim"]
    c.status(TASK["id"])
    with pytest.raises(OSError):
        c.retry(TASK["id"])
    assert len(api.seen) == 4


def test_an_idle_connection_the_server_closed_is_not_used(api: Scripted) -> None:
    """The server closing an idle keep-alive connection costs no error, even for a call
    sent once: the connection is seen closed before the request goes out."""
    api.script = [(CLOSE, {"task": TASK}), (200, {"task": dict(TASK, status="cancelled")})]
    c = s3q.Client(api.url, retry_backoff=0.001, max_retries=0)
    c.status(TASK["id"])
    assert api.closed.wait(10)
    assert c.cancel(TASK["id"])["status"] == "cancelled"
    assert len(api.seen) == 2


def test_a_lost_race_is_retried_like_a_5xx(api: Scripted) -> None:
    """409 conflict with no field ("met a concurrent change it could not settle; retrying is
    safe") is sent again for the calls safe to repeat: a complete that gave up on it would
    leave the lease to lapse and the task to run again."""
    race = (409, {"error": {"code": "conflict", "message": "another writer changed the same object first; retrying is safe"}})
    api.script = [race, (200, {"task": dict(TASK, status="completed")}), race]
    c = s3q.Client(api.url, retry_backoff=0.001)
    lease: s3q.models.Lease = {"task_id": TASK["id"], "token": "t", "expires_at": "2030-01-01T00:00:00Z"}
    assert c.complete(lease, {"ok": True})["status"] == "completed"
    assert len(api.seen) == 2
    with pytest.raises(s3q.ConflictError) as e:
        c.cancel(TASK["id"])  # sent once: the caller decides
    assert e.value.retryable and len(api.seen) == 3
