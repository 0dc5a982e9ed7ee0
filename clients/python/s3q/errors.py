"""The errors of s3q: one base class, a class per family a program branches on.

Every error the API answers becomes an :class:`APIError` subclass carrying the
HTTP ``status`` and the answer's ``code``, ``message`` and ``field``, as
botocore's ``ClientError`` carries ``response["Error"]["Code"]``::

    try:
        client.status(task_id)
    except s3q.NotFoundError:
        ...
    except s3q.APIError as e:
        print(e.status, e.code, e.field)

A bad argument fails before any request with :class:`ArgumentError` (also a
``ValueError``) naming the argument.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from typing import Dict, Optional, Type


class S3QError(Exception):
    """The base of every error s3q raises."""


class ArgumentError(S3QError, ValueError):
    """A call's argument is wrong; no request was sent. ``argument`` names it."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument
        self.message = message


class APIError(S3QError):
    """An error answer of the API: ``{"error": {"code", "message", "field"}}``."""

    status: int
    """The HTTP status."""
    code: str
    """The error code, e.g. ``invalid_input``, ``lease_expired``."""
    message: str
    """What went wrong, for a person."""
    field: str
    """The request field at fault, in its JSON spelling; "" when none."""
    retry_after: Optional[float]
    """Seconds the server asked to wait (Retry-After), when it did."""

    def __init__(
        self, status: int, code: str, message: str, field: str = "", retry_after: Optional[float] = None
    ) -> None:
        text = f"s3q: {status} {code}: {message}"
        if field:
            text += f" (field {field})"
        super().__init__(text)
        self.status, self.code, self.message, self.field = status, code, message, field
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Whether sending the same request later may succeed (throttling, a server error)."""
        return False


class BadRequestError(APIError):
    """400 (and 413, 405): the request is wrong; sending it again never helps."""


class NotFoundError(APIError):
    """404: no such task, schedule, artifact or route."""


class QueueNotFoundError(NotFoundError):
    """404 ``queue_not_found``: the queue is not declared where the deployment requires it."""


class ConflictError(APIError):
    """409: the task's state or an earlier request stands in the way.

    ``code`` tells which: ``conflict`` (an id another request made, field
    ``id``; or a lost race, safe to retry), ``invalid_state``,
    ``already_exists``, ``queue_not_empty``, ``too_many_queues``.
    """

    @property
    def retryable(self) -> bool:
        return self.code == "conflict" and self.field == ""


class LeaseError(ConflictError):
    """409 on a lease operation whose lease is gone: ``lease_expired``,
    ``lease_mismatch`` (a token that is not the task's), ``not_running``, or
    ``conflict`` on ``lease_token`` (the token already ended the lease with
    another outcome). Never retryable: the lease will not come back."""

    @property
    def retryable(self) -> bool:
        return False


class UnavailableError(APIError):
    """429 or 5xx (not 504): the server or its store is busy or failing; retry later."""

    @property
    def retryable(self) -> bool:
        return True


class DeadlineExceededError(APIError):
    """504 ``deadline_exceeded``: the task's deadline passed during a wait, or the request ran out of time."""


class SignatureError(S3QError):
    """A push delivery does not verify; answer it 401 and run nothing. ``reason`` is the
    check that failed: no_secret, target, missing, bad_time, queue or signature."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"s3q push: {reason}: {message}")
        self.reason = reason
        self.message = message


_LEASE_CODES = ("lease_expired", "lease_mismatch", "not_running")
_BY_STATUS: Dict[int, Type[APIError]] = {
    400: BadRequestError,
    404: NotFoundError,
    405: BadRequestError,
    409: ConflictError,
    413: BadRequestError,
    429: UnavailableError,
    504: DeadlineExceededError,
}


def error_class(status: int, code: str, field: str) -> Type[APIError]:
    """The class of an error answer: by code where it says more, else by status."""
    if code in _LEASE_CODES or (code == "conflict" and field == "lease_token"):
        return LeaseError
    if code == "queue_not_found":
        return QueueNotFoundError
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return UnavailableError
    return BadRequestError


def from_answer(status: int, raw: bytes, retry_after: Optional[str] = None) -> APIError:
    """The error of an answer with status >= 400 and body raw."""
    code, message, field = "", "", ""
    try:
        body = json.loads(raw)
        err = body.get("error") if isinstance(body, dict) else None
        if isinstance(err, dict):
            code = str(err.get("code", ""))
            message = str(err.get("message", ""))
            field = str(err.get("field", "") or "")
    except ValueError:
        pass
    if not code:
        code = f"http_{status}"
        message = raw[:200].decode("utf-8", "replace")
    return error_class(status, code, field)(status, code, message, field, parse_retry_after(retry_after))


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """The seconds a Retry-After header asks to wait: a number of seconds or an HTTP date
    (RFC 9110); None when absent or unreadable. Never negative."""
    if not value:
        return None
    value = value.strip()
    try:
        secs = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, secs) if math.isfinite(secs) else None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def from_item(err: Dict[str, str]) -> APIError:
    """The error of one batch item (which carries no HTTP status of its own)."""
    code = err.get("code", "")
    status = {
        "not_found": 404,
        "conflict": 409,
        "invalid_state": 409,
        "too_large": 413,
        "throttled": 503,
        "internal": 500,
    }.get(code, 400)
    field = err.get("field", "")
    return error_class(status, code, field)(status, code, err.get("message", ""), field)
