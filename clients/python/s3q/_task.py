"""What a handler receives: the task, its lease, its deadline and its cancel signal."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, Dict, Optional

from . import _times
from .models import Lease, Task


class TaskContext:
    """The task a handler works on.

    ``cancelled`` is set when a cancel of the task is requested (the worker
    reads the task every ``cancel_poll`` seconds, 2 by default, and at each
    heartbeat), ``stopping``
    when the worker stops and its grace is over, ``lease_lost`` when the lease
    is gone (its result will be dropped). A long handler checks
    :meth:`should_stop` between steps and returns early.
    """

    def __init__(self, task: Task, lease: Optional[Lease], delivery_deadline: Optional[dt.datetime] = None) -> None:
        self.task: Task = task
        """The task as the claim returned it (the API's JSON)."""
        self.lease: Optional[Lease] = lease
        """Its lease (None under a Lambda push target, where the dispatcher holds it)."""
        self.cancelled = threading.Event()
        """Set when a cancel was requested: stop, the task ends cancelled."""
        self.stopping = threading.Event()
        """Set when the worker is shutting down past its grace: stop, the task is handed back."""
        self.lease_lost = threading.Event()
        """Set when the lease was lost: whatever the handler returns is dropped."""
        self.delivery_deadline = delivery_deadline
        """Under push: when the dispatcher stops waiting for the answer."""

    @property
    def id(self) -> str:
        return self.task["id"]

    @property
    def task_type(self) -> str:
        return self.task["task_type"]

    @property
    def input(self) -> Any:
        """The task's input (any JSON), None when it has none."""
        return self.task.get("input")

    @property
    def attempt(self) -> int:
        return self.task.get("attempt", 0)

    @property
    def priority(self) -> int:
        """The task's priority, 1 (highest) to 5 (lowest)."""
        return self.task.get("priority") or 3

    @property
    def traceparent(self) -> Optional[str]:
        """The W3C traceparent the task was submitted in (None when none): a handler
        continues the submitter's trace from it, e.g. with OpenTelemetry's
        ``TraceContextTextMapPropagator().extract(ctx.trace_headers)``."""
        return self.task.get("traceparent") or None

    @property
    def tracestate(self) -> Optional[str]:
        """The W3C tracestate the task was submitted in (None when none)."""
        return self.task.get("tracestate") or None

    @property
    def trace_headers(self) -> Dict[str, str]:
        """The task's trace context as headers: ``traceparent`` and ``tracestate`` when it
        has them (an OpenTelemetry propagator's carrier), {} when it has none."""
        h: Dict[str, str] = {}
        if self.traceparent:
            h["traceparent"] = self.traceparent
            if self.tracestate:
                h["tracestate"] = self.tracestate
        return h

    @property
    def deadline(self) -> Optional[dt.datetime]:
        """The task's deadline (``expires_at``, UTC), None when it has none. A running task is
        never stopped by it; a handler may read it and give up early."""
        return _times.parse(self.task.get("expires_at"))

    def remaining(self, now: Optional[dt.datetime] = None) -> Optional[dt.timedelta]:
        """Time left until the deadline (negative once passed), None without one."""
        d = self.deadline
        if d is None:
            return None
        return d - (now or dt.datetime.now(dt.timezone.utc))

    def should_stop(self, margin: dt.timedelta = dt.timedelta(0)) -> bool:
        """True when a cancel was requested, the worker is stopping, the lease is lost, or at
        most ``margin`` is left until the deadline."""
        if self.cancelled.is_set() or self.stopping.is_set() or self.lease_lost.is_set():
            return True
        left = self.remaining()
        return left is not None and left <= margin

    def __repr__(self) -> str:
        return f"TaskContext(id={self.id!r}, task_type={self.task_type!r}, attempt={self.attempt})"


class Permanent(Exception):
    """Raised by a handler: the attempt failed and no attempt can succeed; the task fails
    at once (the dead letter) instead of being retried."""


class Reschedule(Exception):
    """Raised by a handler: put the task back to run again after ``delay`` seconds (a
    timedelta, a duration string or seconds) without using up an attempt, its deadline
    moved ``extend`` later. Under push it fails the attempt like a plain error."""

    def __init__(self, delay: Any = 0, extend: Any = None) -> None:
        super().__init__(f"reschedule in {delay}")
        self.delay = delay
        self.extend = extend
