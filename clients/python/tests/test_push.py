"""The push verifier and the Lambda target helper (no server needed)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import pathlib
import threading
import time
from typing import Any, Dict, List

import pytest

import s3q
from s3q.models import PushDelivery
from s3q.push import DEFAULT_TOLERANCE, PERMANENT_ERROR_TYPE, PushTarget, Verifier, lambda_handler, sign

# The example of docs/push.md (a Go test checks it against an independent HMAC).
DOC_URL = "https://hooks.example.com/s3q/orders"
DOC_TASK = "01943a5e-0000-7000-8000-000000000001"
DOC_T = 1769590800
DOC_SIG = "54b4e83e0d8936f2f22b2101999c9a030fed8540d7b34cebce76a6dd863428d8"


def doc_headers(sig: str = f"t={DOC_T},v1={DOC_SIG}") -> Dict[str, str]:
    return {"S3q-Signature": sig, "S3q-Queue": "orders", "S3q-Task-Id": DOC_TASK, "S3q-Attempt": "2"}


def test_the_documented_example_verifies() -> None:
    assert sign("whsec-example", DOC_T, "POST", DOC_URL, "orders", DOC_TASK, 2, b'{"task":{}}') == f"t={DOC_T},v1={DOC_SIG}"
    v = Verifier("whsec-example", url=DOC_URL, queue="orders")
    d = v.verify(b'{"task":{}}', doc_headers(), now=DOC_T + 10)
    assert d == (DOC_TASK, 2)
    task_id, attempt = d
    assert (task_id, attempt) == (d.task_id, d.attempt)


def test_headers_in_any_case() -> None:
    lower = {k.lower(): v for k, v in doc_headers().items()}  # as a Lambda function URL passes them
    assert Verifier("whsec-example", url=DOC_URL, queue="orders").verify(b'{"task":{}}', lower, now=DOC_T)


def test_rotation_either_secret_verifies() -> None:
    assert Verifier(["whsec-next", "whsec-example"], url=DOC_URL, queue="orders").verify(
        b'{"task":{}}', doc_headers(), now=DOC_T
    )
    two = f"t={DOC_T},v1={'0' * 64},v1={DOC_SIG},v2=ignored"
    assert Verifier("whsec-example", url=DOC_URL, queue="orders").verify(b'{"task":{}}', doc_headers(two), now=DOC_T)


@pytest.mark.parametrize(
    "why,body,headers,now,verifier",
    [
        ("tampered body", b'{"task":{ }}', doc_headers(), DOC_T, None),
        ("stale", b'{"task":{}}', doc_headers(), DOC_T + DEFAULT_TOLERANCE + 1, None),
        ("from the future", b'{"task":{}}', doc_headers(), DOC_T - DEFAULT_TOLERANCE - 1, None),
        ("other queue", b'{"task":{}}', dict(doc_headers(), **{"S3q-Queue": "billing"}), DOC_T, None),
        ("other attempt", b'{"task":{}}', dict(doc_headers(), **{"S3q-Attempt": "3"}), DOC_T, None),
        ("other task", b'{"task":{}}', dict(doc_headers(), **{"S3q-Task-Id": DOC_TASK[:-1] + "2"}), DOC_T, None),
        ("no signature", b'{"task":{}}', {k: v for k, v in doc_headers().items() if k != "S3q-Signature"}, DOC_T, None),
        ("no v1", b'{"task":{}}', doc_headers(f"t={DOC_T},v2={DOC_SIG}"), DOC_T, None),
        ("wrong secret", b'{"task":{}}', doc_headers(), DOC_T, Verifier("other", url=DOC_URL, queue="orders")),
        ("other URL", b'{"task":{}}', doc_headers(), DOC_T, Verifier("whsec-example", url=DOC_URL + "/", queue="orders")),
        ("other queue's target", b'{"task":{}}', doc_headers(), DOC_T, Verifier("whsec-example", url=DOC_URL, queue="billing")),
    ],
)
def test_refused(why: str, body: bytes, headers: Dict[str, str], now: float, verifier: Any) -> None:
    v = verifier or Verifier("whsec-example", url=DOC_URL, queue="orders")
    with pytest.raises(s3q.SignatureError):
        v.verify(body, headers, now=now)


def test_named_tolerance() -> None:
    v = Verifier("whsec-example", url=DOC_URL, queue="orders", tolerance=30)
    assert v.verify(b'{"task":{}}', doc_headers(), now=DOC_T + 30)
    with pytest.raises(s3q.SignatureError):
        v.verify(b'{"task":{}}', doc_headers(), now=DOC_T + 31)


def test_verifier_refuses_empty_secret_and_parsed_bodies() -> None:
    for v, reason in [
        (Verifier("", url=DOC_URL, queue="orders"), "no_secret"),
        (Verifier(["", "whsec-example"], url=DOC_URL, queue="orders"), "no_secret"),
        (Verifier("whsec-example", url="", queue="orders"), "target"),
    ]:
        with pytest.raises(s3q.SignatureError) as e:
            v.verify(b'{"task":{}}', doc_headers(), now=DOC_T)
        assert e.value.reason == reason
    with pytest.raises(TypeError):
        Verifier("whsec-example", url=DOC_URL, queue="orders").verify({"task": {}}, doc_headers())  # type: ignore[arg-type]


VECTORS = json.loads((pathlib.Path(__file__).resolve().parents[3] / "contract" / "push-signature-vectors.json").read_text())


@pytest.mark.parametrize("v", VECTORS["sign"], ids=lambda v: v["name"])
def test_sign_vector(v: Dict[str, Any]) -> None:
    body = base64.b64decode(v["body_base64"])
    got = sign(v["secret"], v["timestamp"], v["method"], v["url"], v["queue"], v["task_id"], v["attempt"], body)
    assert got == v["signature"]


@pytest.mark.parametrize("v", VECTORS["verify"], ids=lambda v: v["name"])
def test_verify_vector(v: Dict[str, Any]) -> None:
    r = v["receiver"]
    verifier = Verifier(r["secrets"], url=r["url"], queue=r["queue"], tolerance=r["tolerance_seconds"])
    body = base64.b64decode(v["body_base64"])
    if v["ok"]:
        d = verifier.verify(body, v["headers"], method=v["method"], now=v["now"])
        assert d == (v["task_id"], v["attempt"])
    else:
        with pytest.raises(s3q.SignatureError) as e:
            verifier.verify(body, v["headers"], method=v["method"], now=v["now"])
        assert e.value.reason == v["error"]


def test_every_vector_ran() -> None:
    assert len(VECTORS["sign"]) >= 9 and len(VECTORS["verify"]) >= 57


def test_push_target_answers() -> None:
    ran = []

    def ok(t: s3q.TaskContext) -> Any:
        ran.append(t.id)
        if t.input == "perm":
            raise s3q.Permanent("bad address")
        if t.input == "boom":
            raise RuntimeError("smtp down")
        if t.input == "set":
            return {1, 2}
        return {"ok": t.input}

    target = PushTarget(Verifier("s", url="http://t/", queue="q"), {"email.send": ok})
    def deliver(inp: str, attempt: int = 1) -> Any:
        body = json.dumps({"task": {"id": "id-" + inp, "task_type": "email.send", "input": inp}}).encode()
        now = int(time.time())
        h = {
            "S3q-Signature": sign("s", now, "POST", "http://t/", "q", "id-" + inp, attempt, body),
            "S3q-Queue": "q",
            "S3q-Task-Id": "id-" + inp,
            "S3q-Attempt": str(attempt),
        }
        return target.answer(body, h)

    assert deliver("x") == (200, b'{"ok": "x"}')
    assert deliver("x") == (200, b'{"ok": "x"}') and ran == ["id-x"]  # a repeat answers as the first
    assert deliver("perm")[0] == 422
    status, answer = deliver("set")
    assert status == 422 and b"JSON" in answer  # not retried: every attempt would fail so
    assert deliver("boom")[0] == 500
    assert deliver("boom", 2)[0] == 500 and ran.count("id-boom") == 2  # a new attempt runs again
    assert target.answer(b"{}", {})[0] == 401
    # Stale, for another queue, or signed with another secret: refused before any handler.
    body = json.dumps({"task": {"id": "id-y", "task_type": "email.send", "input": "y"}}).encode()
    old = int(time.time()) - 3600
    for h in [
        {"S3q-Signature": sign("s", old, "POST", "http://t/", "q", "id-y", 1, body), "S3q-Queue": "q"},
        {"S3q-Signature": sign("s", int(time.time()), "POST", "http://t/", "q2", "id-y", 1, body), "S3q-Queue": "q2"},
        {"S3q-Signature": sign("other", int(time.time()), "POST", "http://t/", "q", "id-y", 1, body), "S3q-Queue": "q"},
    ]:
        h.update({"S3q-Task-Id": "id-y", "S3q-Attempt": "1"})
        assert target.answer(body, h)[0] == 401
    assert "id-y" not in ran


def test_push_target_runs_a_delivery_arriving_twice_at_once_one_time() -> None:
    """The same delivery (a replay, or a retry while the first still runs) arriving while
    the first is running waits for its answer instead of running the handler again."""
    inside, release, ran = threading.Event(), threading.Event(), []

    def slow(t: s3q.TaskContext) -> Any:
        ran.append(t.id)
        inside.set()
        assert release.wait(10)
        return {"ok": 1}

    target = PushTarget(Verifier("s", url="http://t/", queue="q"), {"email.send": slow})
    body = json.dumps({"task": {"id": "id-z", "task_type": "email.send", "input": "z"}}).encode()
    h = {
        "S3q-Signature": sign("s", int(time.time()), "POST", "http://t/", "q", "id-z", 1, body),
        "S3q-Queue": "q",
        "S3q-Task-Id": "id-z",
        "S3q-Attempt": "1",
    }
    answers: List[Any] = []
    first = threading.Thread(target=lambda: answers.append(target.answer(body, h)))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=lambda: answers.append(target.answer(body, h)))
    second.start()
    second.join(0.2)  # a bound, not an assertion: the second may not have arrived yet
    release.set()
    first.join(10)
    second.join(10)
    assert ran == ["id-z"]
    assert answers == [(200, b'{"ok": 1}')] * 2


def payload(task_type: str, inp: Any, deadline_in: float = 10) -> PushDelivery:
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "task": {"id": "t1", "task_type": task_type, "input": inp, "expires_at": "2030-01-01T00:00:00.123456789Z"},  # type: ignore[typeddict-item]
        "lease": {"task_id": "t1", "token": "x", "expires_at": (now + dt.timedelta(seconds=60)).isoformat()},
        "deadline": (now + dt.timedelta(seconds=deadline_in)).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
    }


def test_lambda_handler() -> None:
    seen: Dict[str, Any] = {}

    def send(t: s3q.TaskContext) -> Any:
        seen["deadline"], seen["delivery"] = t.deadline, t.delivery_deadline
        if t.input == "perm":
            raise s3q.Permanent("no such address")
        if t.input == "boom":
            raise RuntimeError("smtp down")
        if t.input == "set":
            return {1, 2}
        return {"sent": t.input}

    h = lambda_handler({"email.send": send})
    assert h(payload("email.send", "a"), None) == {"sent": "a"}
    assert seen["deadline"] == dt.datetime(2030, 1, 1, 0, 0, 0, 123456, tzinfo=dt.timezone.utc)
    assert seen["delivery"] is not None
    with pytest.raises(Exception) as perm:
        h(payload("email.send", "perm"), None)
    # The Python runtime reports type(e).__name__ as errorType: the dispatcher's "no retry" word.
    assert type(perm.value).__name__ == PERMANENT_ERROR_TYPE == "s3q.Permanent"
    with pytest.raises(RuntimeError):
        h(payload("email.send", "boom"), None)
    with pytest.raises(Exception) as none:
        h(payload("sms.send", "a"), None)
    assert type(none.value).__name__ == PERMANENT_ERROR_TYPE
    with pytest.raises(RuntimeError, match="deadline"):
        h(payload("email.send", "late", deadline_in=-1), None)


def test_lambda_handler_async() -> None:
    async def send(t: s3q.TaskContext) -> Any:
        return {"sent": t.input}

    assert lambda_handler({"email.send": send})(payload("email.send", "a"), None) == {"sent": "a"}
