"""Push targets: verify a signed HTTPS delivery, answer it, and run handlers as a Lambda target.

A URL target checks each delivery over the request's exact body bytes and headers::

    verifier = s3q.push.Verifier(["whsec-current", "whsec-previous"], url="https://hooks.example.com/s3q", queue="mail")
    task_id, attempt = verifier.verify(body, headers)   # raises SignatureError

A Lambda target runs the worker's handlers::

    handler = s3q.push.lambda_handler(worker.handlers)   # the function's handler

The signed string, the headers and the Lambda answer contract are in docs/push.md.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import inspect
import json
import re
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union, cast

from . import _times
from ._task import Permanent, TaskContext
from .errors import SignatureError
from .models import PushDelivery, Task

DEFAULT_TOLERANCE = 300.0
"""Seconds a delivery's timestamp may be from now either way (5 minutes)."""

VERSION = "v1"
HEADER_SIGNATURE = "S3q-Signature"
HEADER_QUEUE = "S3q-Queue"
HEADER_TASK_ID = "S3q-Task-Id"
HEADER_ATTEMPT = "S3q-Attempt"

PERMANENT_ERROR_TYPE = "s3q.Permanent"
"""The errorType of a Lambda target's function error that must not be retried."""


class Delivery(NamedTuple):
    """What a verified delivery names: (task id, attempt) is its idempotency key."""

    task_id: str
    attempt: int


def _header(headers: Mapping[str, str], name: str) -> str:
    v = headers.get(name)
    if v is None:
        low = name.lower()
        for k, x in headers.items():
            if k.lower() == low:
                return x
        return ""
    return v


def sign(secret: str, timestamp: int, method: str, url: str, queue: str, task_id: str, attempt: int, body: bytes) -> str:
    """The S3q-Signature header value of a delivery: ``t=<timestamp>,v1=<hex HMAC-SHA256>``."""
    return f"t={timestamp},{VERSION}={_mac(secret, timestamp, method, url, queue, task_id, attempt, body).hex()}"


def _mac(secret: str, timestamp: int, method: str, url: str, queue: str, task_id: str, attempt: int, body: bytes) -> bytes:
    head = "\n".join([VERSION, str(timestamp), method, url, queue, task_id, str(attempt)]) + "\n"
    return hmac.new(secret.encode(), head.encode() + body, hashlib.sha256).digest()


class Verifier:
    """Verifies the deliveries meant for one target: its URL exactly as the queue declares
    it (``target.url``, not as the request arrived behind a proxy) and its queue.

    ``secrets`` is one secret or a list: the current one first, then the previous one
    still accepted while a secret is rotated; a signature under any of them verifies. ``tolerance`` is how far (seconds)
    the delivery's timestamp may be from now either way. Defaults to DEFAULT_TOLERANCE.
    """

    def __init__(
        self,
        secrets: Union[str, Sequence[str]],
        *,
        url: str,
        queue: str,
        tolerance: float = DEFAULT_TOLERANCE,
    ) -> None:
        self.secrets = [secrets] if isinstance(secrets, str) else list(secrets)
        self.url, self.queue, self.tolerance = url, queue, tolerance

    def verify(
        self, body: bytes, headers: Mapping[str, str], *, method: str = "POST", now: Optional[float] = None
    ) -> Delivery:
        """Check a delivery over its exact body bytes and its headers (names in any case).

        The checks run in the order of docs/push.md, and a failure raises
        :class:`SignatureError` whose ``reason`` names the first that failed:
        ``no_secret`` (the first secret is empty), ``target`` (no url or queue),
        ``missing`` (a header, t= or v1= absent or empty, two t=, or an attempt that
        is not a canonical positive decimal), ``bad_time`` (t= not a canonical
        decimal, or more than the tolerance from ``now``, Unix seconds, defaulting
        to the clock), ``queue`` (S3q-Queue is not this target's queue),
        ``signature`` (no v1= equals the lowercase hex HMAC under any secret,
        compared in constant time). Answer it 401 and run nothing.

        Returns (task id, attempt): the delivery's idempotency key.
        """
        if not isinstance(body, (bytes, bytearray)):
            raise TypeError("body: want the request's exact bytes, not a parsed or re-encoded object")
        if not self.secrets or not self.secrets[0]:
            raise SignatureError("no_secret", "no secret to verify with (anyone can sign with the empty key)")
        if not self.url or not self.queue:
            raise SignatureError("target", "the target's URL and queue are required to verify")
        ts: List[str] = []
        sigs: List[str] = []
        for part in _header(headers, HEADER_SIGNATURE).split(","):
            k, sep, val = part.strip().partition("=")
            if not sep:
                continue
            if k == "t":
                ts.append(val)
            elif k == VERSION:
                sigs.append(val)
        queue = _header(headers, HEADER_QUEUE)
        task_id = _header(headers, HEADER_TASK_ID)
        attempt_s = _header(headers, HEADER_ATTEMPT)
        if len(ts) != 1 or not ts[0] or not sigs or not queue or not task_id or not _CANONICAL.match(attempt_s):
            raise SignatureError(
                "missing", "missing S3q-Signature (one t= and a v1=), S3q-Queue, S3q-Task-Id or S3q-Attempt"
            )
        if not _CANONICAL.match(ts[0]):
            raise SignatureError("bad_time", "the timestamp is not a number")
        t = int(ts[0])
        if abs((time.time() if now is None else now) - t) > self.tolerance:
            raise SignatureError("bad_time", "the timestamp is outside the tolerance")
        if queue != self.queue:
            raise SignatureError("queue", "a delivery for another queue")
        attempt = int(attempt_s)
        for secret in self.secrets:
            if not secret:
                continue
            want = _mac(secret, t, method, self.url, queue, task_id, attempt, bytes(body)).hex()
            for got in sigs:
                if hmac.compare_digest(want.encode(), got.encode("utf-8", "replace")):
                    return Delivery(task_id, attempt)
        raise SignatureError("signature", "signature mismatch")


_CANONICAL = re.compile(r"\A[1-9][0-9]*\Z")


def verify(
    body: bytes,
    headers: Mapping[str, str],
    secrets: Union[str, Sequence[str]],
    *,
    url: str,
    queue: str,
    tolerance: float = DEFAULT_TOLERANCE,
    method: str = "POST",
    now: Optional[float] = None,
) -> Delivery:
    """:meth:`Verifier.verify` in one call (as Stripe's ``construct_event``)."""
    return Verifier(secrets, url=url, queue=queue, tolerance=tolerance).verify(body, headers, method=method, now=now)


Handler = Callable[[TaskContext], Any]


def _run(handlers: Mapping[str, Handler], payload: Mapping[str, Any]) -> Any:
    task: Task = payload["task"]
    h = handlers.get(task.get("task_type", ""))
    if h is None:
        raise Permanent(f"no handler for task type {task.get('task_type')!r}")
    deadline = _times.parse(payload.get("deadline"))
    if deadline is not None and dt.datetime.now(dt.timezone.utc) >= deadline:
        # The dispatcher has stopped waiting: the next attempt will be delivered.
        raise RuntimeError("delivery deadline passed")
    out = h(TaskContext(task, payload.get("lease"), deadline))
    if inspect.iscoroutine(out):  # an async def handler
        out = asyncio.run(out)
    return out


class PushTarget:
    """An HTTP push target's logic, for any web framework: :meth:`answer` takes the raw body
    and headers and returns (HTTP status, body bytes). A bad signature is 401 and runs
    nothing; the handler's output is 200 (completing the task); :class:`Permanent` is 422
    (fails without retry); any other exception is 500 (retried). A delivery seen again
    (same task id and attempt), even while the first still runs, answers as the first did."""

    def __init__(self, verifier: Verifier, handlers: Mapping[str, Handler], *, remember: int = 1024) -> None:
        self.verifier = verifier
        self.handlers = handlers
        self._seen: "OrderedDict[Delivery, Tuple[int, bytes]]" = OrderedDict()
        self._remember = remember
        self._lock = threading.Lock()
        self._running: "dict[Delivery, threading.Event]" = {}

    def answer(self, body: bytes, headers: Mapping[str, str], *, method: str = "POST") -> Tuple[int, bytes]:
        try:
            d = self.verifier.verify(body, headers, method=method)
        except SignatureError as e:
            return 401, json.dumps({"error": str(e)}).encode()
        with self._lock:
            if d in self._seen:
                return self._seen[d]
            running = self._running.get(d)
            if running is None:
                self._running[d] = threading.Event()
        if running is not None:
            # The same delivery is being handled now: answer as it does, run nothing.
            running.wait()
            with self._lock:
                if d in self._seen:
                    return self._seen[d]
            return 500, json.dumps({"error": "the same delivery did not finish"}).encode()
        res = (500, json.dumps({"error": "the handler did not finish"}).encode())
        try:
            out = _run(self.handlers, json.loads(body))
            try:
                raw = json.dumps(out, allow_nan=False).encode()
            except (TypeError, ValueError) as e:  # as the worker: no attempt can mend it
                raise Permanent(f"the handler's output is not JSON-serialisable: {e}") from None
            res = (200, raw)
        except Permanent as e:
            res = (422, json.dumps({"error": str(e)}).encode())
        except Exception as e:  # noqa: BLE001 - a handler's failure is the attempt's outcome
            res = (500, json.dumps({"error": str(e) or type(e).__name__}).encode())
        finally:
            with self._lock:
                self._seen[d] = res
                while len(self._seen) > self._remember:
                    self._seen.popitem(last=False)
                self._running.pop(d).set()
        return res


class _LambdaPermanent(Exception):
    """A Permanent error at the Lambda boundary: its errorType is PERMANENT_ERROR_TYPE."""


_LambdaPermanent.__name__ = PERMANENT_ERROR_TYPE
_LambdaPermanent.__qualname__ = PERMANENT_ERROR_TYPE


def lambda_handler(handlers: Mapping[str, Handler]) -> Callable[[PushDelivery, Any], Any]:
    """Turn the worker's handlers (task type → handler) into a Lambda push target's handler.

    The function is invoked with ``{"task", "lease", "deadline"}``; the handler of the
    task's type runs with a :class:`TaskContext` whose ``deadline`` is the task's
    ``expires_at`` and ``delivery_deadline`` the payload's. No heartbeat: the dispatcher
    holds the lease until the deadline. The handler's return value is the function's result,
    which completes the task. An exception is a function error, which fails the attempt:
    retried while attempts remain, unless it is :class:`Permanent` (or there is no handler
    for the type), raised with errorType ``s3q.Permanent`` so the dispatcher does not retry.
    An invocation that starts after the delivery deadline runs no handler (a retryable
    error). :class:`Reschedule` is not available under push; it fails the attempt.
    """

    def handler(event: PushDelivery, context: Any = None) -> Any:
        try:
            return _run(handlers, cast(Mapping[str, Any], event))
        except Permanent as e:
            raise _LambdaPermanent(str(e)) from e

    return handler
