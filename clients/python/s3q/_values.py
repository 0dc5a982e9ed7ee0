"""Arguments turned into the API's JSON, refused before any request when wrong."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, Union

from .errors import ArgumentError
from .models import PATTERNS

Duration = Union[dt.timedelta, str, int, float]
"""A duration: a timedelta, a string such as "90s", "30m", "1h30m" or "7d", or seconds."""

Time = Union[dt.datetime, str]
"""A point in time: a timezone-aware datetime, or an RFC 3339 string."""

# The task type rule: the pattern the document publishes, else the one the
# server applies (1-128 of A-Z a-z 0-9 _ . : - and no "..").
_TASK_TYPE = re.compile(PATTERNS.get("SubmitRequest.task_type", r"^[A-Za-z0-9_.:-]{1,128}$"))


def duration(arg: str, v: Duration) -> Union[str, int, float]:
    """v as the API's duration: a string as given, a number of seconds otherwise."""
    if isinstance(v, bool):
        raise ArgumentError(arg, "want a timedelta, a duration string such as '1h', or seconds, not a bool")
    if isinstance(v, dt.timedelta):
        secs = v.total_seconds()
        return int(secs) if secs == int(secs) else secs
    if isinstance(v, (int, float)):
        return v
    if isinstance(v, str):
        if not v.strip():
            raise ArgumentError(arg, "is empty: want a duration such as '90s', '1h' or '7d'")
        return v
    raise ArgumentError(arg, f"want a timedelta, a duration string such as '1h', or seconds, not {type(v).__name__}")


def timestamp(arg: str, v: Time) -> str:
    """v as an RFC 3339 UTC time. A naive datetime is refused: its zone is unknown."""
    if isinstance(v, str):
        if not v.strip():
            raise ArgumentError(arg, "is empty: want an RFC 3339 time or a timezone-aware datetime")
        return v
    if isinstance(v, dt.datetime):
        if v.tzinfo is None or v.tzinfo.utcoffset(v) is None:
            raise ArgumentError(
                arg,
                "is a naive datetime: give it a time zone (datetime.now(timezone.utc), or .replace(tzinfo=...))",
            )
        u = v.astimezone(dt.timezone.utc)
        return u.strftime("%Y-%m-%dT%H:%M:%S") + (f".{u.microsecond:06d}Z" if u.microsecond else "Z")
    raise ArgumentError(arg, f"want a timezone-aware datetime or an RFC 3339 string, not {type(v).__name__}")


def task_type(arg: str, v: Any) -> str:
    """v when it is a task type the server takes."""
    if not isinstance(v, str) or not _TASK_TYPE.fullmatch(v) or ".." in v:
        raise ArgumentError(arg, f"{v!r} is not a task type: use 1-128 of A-Z a-z 0-9 _ . : - and no '..'")
    return v


def json_value(arg: str, v: Any) -> Any:
    """v when it encodes as JSON (no NaN, no objects JSON has no word for)."""
    try:
        json.dumps(v, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ArgumentError(arg, f"is not JSON-serialisable: {e}") from None
    return v


def positive_int(arg: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ArgumentError(arg, f"want a positive int, not {v!r}")
    return v


def priority(arg: str, v: Any) -> int:
    """v when it is an int (the server checks the range, 1 highest to 5 lowest)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ArgumentError(arg, f"want an int from 1 (highest) to 5 (lowest), not {v!r}")
    return v


def header(arg: str, v: Any) -> str:
    """v when it can be sent as an HTTP header value (the server checks its form)."""
    if not isinstance(v, str) or any(c in v for c in "\r\n\0"):
        raise ArgumentError(arg, f"want a string of one line, not {v!r}")
    return v
