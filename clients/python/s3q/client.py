"""The s3q client: every operation of the HTTP API, one method each."""

from __future__ import annotations

import datetime
import urllib.parse
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple, Union, cast

from . import _values as v
from ._ids import new_id
from ._transport import Transport
from .errors import ArgumentError, parse_retry_after
from .models import (
    JSON,
    Artifact,
    BatchReply_results_item,
    BulkReply,
    Claimed,
    Fire,
    History_versions_item,
    Lease,
    MissedRuns,
    OpenAPI,
    Overlap,
    Queue,
    Schedule,
    StatsReply_stats,
    Status,
    Target,
    Task,
    TaskList,
    TaskReply,
    TTLFrom,
)

DEFAULT_QUEUE = "default"


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def _claim_retry_after(answer: Mapping[str, str]) -> Optional[float]:
    """The seconds an answer asks to wait: S3q-Retry-After-Ms (milliseconds, the precise
    one) when it reads, else Retry-After; None when neither does."""
    ms = parse_retry_after(answer.get("S3q-Retry-After-Ms"))
    if ms is not None:
        return ms / 1000
    return parse_retry_after(answer.get("Retry-After"))


def _trace_headers(traceparent: Optional[str], tracestate: Optional[str]) -> Optional[Dict[str, str]]:
    """The traceparent and tracestate headers of a submit (None when neither is given)."""
    h: Dict[str, str] = {}
    if traceparent is not None:
        h["traceparent"] = v.header("traceparent", traceparent)
    if tracestate is not None:
        h["tracestate"] = v.header("tracestate", tracestate)
    return h or None


def _drop_none(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: x for k, x in d.items() if x is not None}


class Client:
    """Calls one s3q API, addressing one queue (:meth:`in_queue` for another).

    ``Client("http://127.0.0.1:8080")`` talks plain HTTP to ``s3q dev``; a URL
    whose host ends in ``.amazonaws.com`` (API Gateway) is signed with SigV4
    and botocore's default credential chain. Safe to share between threads.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8080",
        *,
        queue: str = DEFAULT_QUEUE,
        timeout: float = 60.0,
        sigv4: Optional[bool] = None,
        region: str = "",
        credentials: Any = None,
        user_agent: str = "s3q-python",
        max_retries: int = 4,
        retry_backoff: float = 0.2,
        _transport: Optional[Transport] = None,
    ) -> None:
        """Make a client for the API at ``url``.

        :param queue: the queue the task, lease and schedule calls address. Defaults to "default".
        :param timeout: seconds a request may take (longer than the longest long-poll). Defaults to 60.
        :param sigv4: sign requests for API Gateway's IAM auth. Defaults to True when the host
            ends in ``.amazonaws.com``, else False.
        :param region: the SigV4 region. Defaults to the region in an execute-api host, then
            botocore's configured region.
        :param credentials: botocore credentials for SigV4. Defaults to botocore's default chain.
        :param user_agent: sent with every request. Defaults to "s3q-python".
        :param max_retries: how often a request safe to repeat (submits, which always carry an
            id; lease operations; reads) is sent again after a network error, a 429 or a 5xx
            other than 504. Defaults to 4.
        :param retry_backoff: seconds before the first retry; doubles, capped at 20 times it,
            jittered, or the server's Retry-After within the cap. Defaults to 0.2.
        """
        self._t = _transport or Transport(
            url,
            timeout=timeout,
            sigv4=sigv4,
            region=region,
            credentials=credentials,
            user_agent=user_agent,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
        )
        self._queue = queue

    @property
    def queue(self) -> str:
        """The queue this client addresses."""
        return self._queue

    @property
    def url(self) -> str:
        """The API's base URL."""
        return self._t.base_url

    def in_queue(self, name: str) -> Client:
        """A client like this one addressing queue ``name`` (sharing its connections)."""
        return Client(queue=name, _transport=self._t)

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- paths and pages -------------------------------------------------

    def _qp(self, rest: str = "", queue: Optional[str] = None) -> str:
        return "/queues/" + _q(queue or self._queue) + rest

    def _tp(self, task_id: str, rest: str = "") -> str:
        if not isinstance(task_id, str) or not task_id:
            raise ArgumentError("task_id", "want a task id")
        return self._qp("/tasks/" + _q(task_id) + rest)

    def _sp(self, schedule_id: str, rest: str = "") -> str:
        if not isinstance(schedule_id, str) or not schedule_id:
            raise ArgumentError("schedule_id", "want a schedule id")
        return self._qp("/schedules/" + _q(schedule_id) + rest)

    def _get(self, path: str, query: Optional[Mapping[str, Any]] = None) -> Any:
        return self._t.call("GET", path, query, retry=True)[1]

    def _post(self, path: str, body: Any, *, retry: bool) -> Any:
        return self._t.call("POST", path, None, body, retry=retry)[1]

    def _pages(self, path: str, key: str, query: Dict[str, Any]) -> Iterator[Any]:
        cursor = None
        while True:
            page = self._get(path, {**query, "cursor": cursor})
            yield from page.get(key) or []
            cursor = page.get("next_cursor")
            if not cursor:
                return

    # --- the document ------------------------------------------------------

    def openapi(self) -> OpenAPI:
        """The API's OpenAPI 3.1 document (GET /openapi.json)."""
        return cast(OpenAPI, self._get("/openapi.json"))

    # --- tasks ---------------------------------------------------------------

    def submit(
        self,
        task_type: str,
        input: JSON = None,
        *,
        expires_at: Optional[v.Time] = None,
        ttl: Optional[v.Duration] = None,
        ttl_seconds: Optional[int] = None,
        ttl_from: Optional[TTLFrom] = None,
        schedule_at: Optional[v.Time] = None,
        delay: Optional[v.Duration] = None,
        dedup_key: Optional[str] = None,
        parent_id: Optional[str] = None,
        on_parent_expired: Optional[str] = None,
        max_attempts: Optional[int] = None,
        timeout: Optional[v.Duration] = None,
        priority: Optional[int] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
        id: Optional[str] = None,
        wait: Optional[v.Duration] = None,
    ) -> TaskReply:
        """Submit one task, exactly once: it gets a fresh UUIDv7 ``id`` unless given one,
        and a network error, 429 or 5xx is retried with that id, so a retry whose first
        attempt landed answers that task (``replayed``) instead of making a second.

        The deadline is ``expires_at`` (a timezone-aware datetime; a naive one is refused)
        or ``ttl`` (a timedelta, "1h", or seconds) or ``ttl_seconds``, at most one of them.
        With ``wait`` it waits up to that long (at most 25s) for the outcome
        (POST /queues/{queue}/tasks/wait); a deadline passing during the wait raises
        :class:`DeadlineExceededError`.

        ``priority`` is 1 (highest) to 5 (lowest); None takes the queue's default (else 3):
        among due tasks a claim takes the highest first. ``traceparent`` and ``tracestate``
        are a W3C trace context the task continues: kept on the task, shown on
        :meth:`status`, handed to its handler (:attr:`TaskContext.traceparent`). They are
        sent as the ``traceparent`` and ``tracestate`` headers, so an API server that records
        OpenTelemetry spans makes its submit span their child (docs/tracing.md).

        Returns the answer: ``{"task": ...}``, with ``"replayed": True`` or
        ``"deduplicated": True`` when so (absent otherwise: read them with ``.get``).
        """
        given = [n for n, x in (("expires_at", expires_at), ("ttl", ttl), ("ttl_seconds", ttl_seconds)) if x is not None]
        if len(given) > 1:
            raise ArgumentError(given[1], f"give one of expires_at, ttl and ttl_seconds, not {' and '.join(given)}")
        if schedule_at is not None and delay is not None:
            raise ArgumentError("delay", "give one of schedule_at and delay, not both")
        if ttl_seconds is not None and (isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int)):
            raise ArgumentError("ttl_seconds", f"want an int, not {type(ttl_seconds).__name__}")
        body: Dict[str, Any] = {
            "id": id or new_id(),
            "task_type": v.task_type("task_type", task_type),
        }
        if input is not None:
            body["input"] = v.json_value("input", input)
        if expires_at is not None:
            body["expires_at"] = v.timestamp("expires_at", expires_at)
        if ttl is not None:
            body["ttl"] = v.duration("ttl", ttl)
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        if schedule_at is not None:
            body["schedule_at"] = v.timestamp("schedule_at", schedule_at)
        if delay is not None:
            body["delay"] = v.duration("delay", delay)
        if timeout is not None:
            body["timeout"] = v.duration("timeout", timeout)
        if max_attempts is not None:
            body["max_attempts"] = v.positive_int("max_attempts", max_attempts)
        if priority is not None:
            body["priority"] = v.priority("priority", priority)
        body.update(
            _drop_none(
                {"ttl_from": ttl_from, "dedup_key": dedup_key, "parent_id": parent_id, "on_parent_expired": on_parent_expired}
            )
        )
        headers = _trace_headers(traceparent, tracestate)
        path = "/tasks"
        if wait is not None:
            body["wait"] = v.duration("wait", wait)
            path = "/tasks/wait"  # held waits have a route of their own
        return cast(TaskReply, self._t.call("POST", self._qp(path), None, body, retry=True, headers=headers)[1])

    def submit_batch(
        self,
        tasks: List[Dict[str, Any]],
        *,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> List[BatchReply_results_item]:
        """Submit up to 500 tasks to this client's queue, one result per task, in order (a
        bad task gets an ``error`` item, the others are still submitted). Each task is a
        dict as POST /queues/{queue}/tasks takes it (``priority``, ``traceparent`` and
        ``tracestate`` among its keys); one without ``id`` gets a fresh UUIDv7
        (the caller's dicts are not changed), and the batch is retried with those ids.
        ``traceparent`` and ``tracestate`` here are the trace context of every task that
        names none of its own (sent as the request's headers)."""
        send = []
        for i, t in enumerate(tasks):
            if not isinstance(t, dict):
                raise ArgumentError(f"tasks[{i}]", "want a dict")
            t = dict(t)
            t.setdefault("id", new_id())
            v.json_value(f"tasks[{i}]", t)
            send.append(t)
        headers = _trace_headers(traceparent, tracestate)
        reply = self._t.call("POST", self._qp("/tasks/batch"), None, {"tasks": send}, retry=True, headers=headers)[1]
        return cast(List[BatchReply_results_item], reply["results"])

    def status(self, task_id: str) -> Task:
        """The task ``task_id`` of this client's queue (:class:`NotFoundError` when none)."""
        return cast(Task, self._get(self._tp(task_id))["task"])

    def list(
        self, *, status: Optional[Status] = None, task_type: Optional[str] = None, limit: Optional[int] = None
    ) -> Iterator[Task]:
        """Every task of this client's queue matching the filters, following the cursors
        (``limit`` is the page size)."""
        return self._pages(self._qp("/tasks"), "tasks", {"status": status, "task_type": task_type, "limit": limit})

    def list_page(
        self,
        *,
        status: Optional[Status] = None,
        task_type: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> TaskList:
        """One page of :meth:`list`: ``{"tasks": [...], "next_cursor": ...}``."""
        q = {"status": status, "task_type": task_type, "limit": limit, "cursor": cursor}
        return cast(TaskList, self._get(self._qp("/tasks"), q))

    def list_all_queues(
        self,
        *,
        queue: Optional[str] = None,
        status: Optional[Status] = None,
        task_type: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Iterator[Task]:
        """Every task of every queue (or of ``queue``) matching the filters: the operator's GET /tasks."""
        q = {"queue": queue, "status": status, "task_type": task_type, "limit": limit}
        return self._pages("/tasks", "tasks", q)

    def history(self, task_id: str, *, limit: Optional[int] = None) -> Iterator[History_versions_item]:
        """Every stored version of a task's record, newest first, following the cursors."""
        return self._pages(self._tp(task_id, "/history"), "versions", {"limit": limit})

    def cancel(self, task_id: str) -> Task:
        """Cancel a pending task, or ask a running one to stop (its worker's handler sees it)."""
        return cast(Task, self._post(self._tp(task_id, "/cancel"), {}, retry=False)["task"])

    def retry(self, task_id: str) -> Task:
        """Put a failed (dead-lettered) or cancelled task back to pending."""
        return cast(Task, self._post(self._tp(task_id, "/retry"), {}, retry=False)["task"])

    def expire(self, task_id: str) -> Task:
        """Mark a pending task expired by hand."""
        return cast(Task, self._post(self._tp(task_id, "/expire"), {}, retry=False)["task"])

    # --- artifacts -----------------------------------------------------------

    def create_artifact(self, task_id: str, name: str, size: int) -> Artifact:
        """A presigned upload URL for artifact ``name`` of ``size`` bytes of a task."""
        body = {"name": name, "size": v.positive_int("size", size)}
        return cast(Artifact, self._post(self._tp(task_id, "/artifacts"), body, retry=True)["artifact"])

    def artifact(self, task_id: str, name: str) -> Artifact:
        """A presigned download URL for artifact ``name`` of a task."""
        return cast(Artifact, self._get(self._tp(task_id, "/artifacts/" + _q(name)))["artifact"])

    # --- leases (what a worker does) ---------------------------------------

    def claim(
        self,
        *,
        task_types: Optional[List[str]] = None,
        lease_for: Optional[v.Duration] = None,
        worker_id: Optional[str] = None,
        max_tasks: Optional[int] = None,
        wait: Optional[v.Duration] = None,
    ) -> List[Claimed]:
        """Lease up to ``max_tasks`` (default 1) due tasks; [] when none. With ``wait`` it
        long-polls up to that long (at most 20s) on POST /queues/{queue}/claim/wait."""
        return self._claim(
            task_types=task_types, lease_for=lease_for, worker_id=worker_id, max_tasks=max_tasks, wait=wait
        )[0]

    def _claim(
        self,
        *,
        task_types: Optional[List[str]] = None,
        lease_for: Optional[v.Duration] = None,
        worker_id: Optional[str] = None,
        max_tasks: Optional[int] = None,
        wait: Optional[v.Duration] = None,
    ) -> Tuple[List[Claimed], Optional[float]]:
        """claim, and the seconds the answer asks to wait before the next claim (a queue's
        rate limit answers 204 with Retry-After in whole seconds and S3q-Retry-After-Ms in
        milliseconds, read first), None when it says nothing."""
        body: Dict[str, Any] = {}
        if task_types:
            body["task_types"] = [v.task_type("task_types", t) for t in task_types]
        if lease_for is not None:
            body["lease_for"] = v.duration("lease_for", lease_for)
        if worker_id:
            body["worker_id"] = worker_id
        if max_tasks is not None:
            body["max_tasks"] = v.positive_int("max_tasks", max_tasks)
        path = "/claim"
        if wait is not None and v.duration("wait", wait) not in (0, "0s"):
            body["wait"] = v.duration("wait", wait)
            path = "/claim/wait"  # long-polls have a route of their own
        answer: Dict[str, str] = {}
        reply = self._t.once("POST", self._qp(path), None, body, poll="wait" in body, resend=False, answer=answer)[1]
        return cast(List[Claimed], (reply or {}).get("tasks") or []), _claim_retry_after(answer)

    @staticmethod
    def _lease(lease: Lease) -> Dict[str, Any]:
        if not isinstance(lease, dict) or not lease.get("token") or not lease.get("task_id"):
            raise ArgumentError("lease", "want the lease a claim returned ({'task_id', 'token', ...})")
        return {"lease_token": lease["token"]}

    def heartbeat(self, lease: Lease, *, lease_for: Optional[v.Duration] = None) -> Claimed:
        """Extend a lease; the answer's task says ``cancel_requested`` when a cancel asks
        the worker to stop, and its lease is the one to use from now on."""
        body = self._lease(lease)
        if lease_for is not None:
            body["lease_for"] = v.duration("lease_for", lease_for)
        return cast(Claimed, self._post(self._tp(lease["task_id"], "/heartbeat"), body, retry=True))

    def complete(self, lease: Lease, output: JSON = None) -> Task:
        """Finish a task with its output (any JSON). Replaying it with the same lease and
        body answers as the first did; another body is a :class:`LeaseError`."""
        body = self._lease(lease)
        if output is not None:
            body["output"] = v.json_value("output", output)
        return cast(Task, self._post(self._tp(lease["task_id"], "/complete"), body, retry=True)["task"])

    def fail(self, lease: Lease, error: str = "", *, retryable: bool = True) -> Task:
        """Report a failed attempt: retried with backoff while attempts remain, unless
        ``retryable`` is False (the task fails at once: the dead letter)."""
        body = self._lease(lease)
        body["error"] = error
        if not retryable:
            body["retryable"] = False
        return cast(Task, self._post(self._tp(lease["task_id"], "/fail"), body, retry=True)["task"])

    def reschedule(
        self,
        lease: Lease,
        *,
        delay: Optional[v.Duration] = None,
        extend_expiration: Optional[v.Duration] = None,
    ) -> Task:
        """Give a task back to run again after ``delay`` (at once when None) without using
        an attempt, its deadline moved ``extend_expiration`` later."""
        body = self._lease(lease)
        if delay is not None:
            body["delay"] = v.duration("delay", delay)
        if extend_expiration is not None:
            body["extend_expiration"] = v.duration("extend_expiration", extend_expiration)
        return cast(Task, self._post(self._tp(lease["task_id"], "/reschedule"), body, retry=True)["task"])

    def ack_cancel(self, lease: Lease) -> Task:
        """Acknowledge a cancel request: the running task ends cancelled."""
        body = self._lease(lease)
        return cast(Task, self._post(self._tp(lease["task_id"], "/cancel-ack"), body, retry=True)["task"])

    # --- queues ----------------------------------------------------------------

    def queues(self, *, counts: bool = False, limit: Optional[int] = None) -> Iterator[Queue]:
        """Every declared queue (with its task counts when ``counts``), following the cursors."""
        return self._pages("/queues", "queues", {"counts": counts or None, "limit": limit})

    def get_queue(self, name: Optional[str] = None) -> Queue:
        """A queue's declaration and counts (this client's queue by default)."""
        return cast(Queue, self._get(self._qp(queue=name))["queue"])

    def declare_queue(
        self,
        name: Optional[str] = None,
        *,
        max_attempts: Optional[int] = None,
        max_concurrency: Optional[int] = None,
        shards: Optional[int] = None,
        target: Optional[Target] = None,
        timeout: Optional[v.Duration] = None,
        ttl: Optional[v.Duration] = None,
        ttl_from: Optional[TTLFrom] = None,
        priority: Optional[int] = None,
        max_per_second: Optional[float] = None,
        burst: Optional[int] = None,
    ) -> Queue:
        """Declare (create or replace) a queue's settings (PUT /queues/{queue}); ``priority``
        (1 highest to 5 lowest) is the default of its tasks that give none; ``max_per_second``
        (fractions allowed) and ``burst`` its rate limit: claims and push deliveries together
        start at most that many tasks a second (a claim held back answers no task, and the
        worker waits as long as the answer asks)."""
        if max_per_second is not None and (isinstance(max_per_second, bool) or not isinstance(max_per_second, (int, float))):
            raise ArgumentError("max_per_second", f"want a number of tasks a second, not {max_per_second!r}")
        body = _drop_none(
            {
                "max_per_second": max_per_second,
                "burst": None if burst is None else v.positive_int("burst", burst),
                "max_attempts": max_attempts,
                "priority": None if priority is None else v.priority("priority", priority),
                "max_concurrency": max_concurrency,
                "shards": shards,
                "target": target,
                "ttl_from": ttl_from,
                "timeout": None if timeout is None else v.duration("timeout", timeout),
                "ttl": None if ttl is None else v.duration("ttl", ttl),
            }
        )
        return cast(Queue, self._t.call("PUT", self._qp(queue=name), None, body, retry=True)[1]["queue"])

    def delete_queue(self, name: Optional[str] = None) -> None:
        """Delete a queue's declaration (refused while it holds live tasks)."""
        self._t.call("DELETE", self._qp(queue=name), retry=False)

    def pause(self, name: Optional[str] = None) -> Queue:
        """Pause a queue: claims and deliveries take nothing from it; submits go on."""
        return cast(Queue, self._post(self._qp("/pause", name), {}, retry=True)["queue"])

    def resume(self, name: Optional[str] = None) -> Queue:
        """Resume a paused queue."""
        return cast(Queue, self._post(self._qp("/resume", name), {}, retry=True)["queue"])

    def stats(self, name: Optional[str] = None) -> StatsReply_stats:
        """A queue's counts, oldest pending task and recent outcomes."""
        return cast(StatsReply_stats, self._get(self._qp("/stats", name))["stats"])

    def _bulk(
        self,
        op: str,
        status: Optional[Status],
        task_type: Optional[str],
        older_than: Optional[v.Duration],
        limit: Optional[int],
        cursor: Optional[str],
        dry_run: bool,
    ) -> BulkReply:
        body = _drop_none(
            {
                "status": status,
                "task_type": task_type,
                "older_than": None if older_than is None else v.duration("older_than", older_than),
                "limit": limit,
                "cursor": cursor,
                "dry_run": dry_run or None,
            }
        )
        return cast(BulkReply, self._post(self._qp("/" + op), body, retry=False))

    def purge(
        self,
        status: Status,
        *,
        task_type: Optional[str] = None,
        older_than: Optional[v.Duration] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        dry_run: bool = False,
    ) -> BulkReply:
        """Delete up to ``limit`` (100) tasks of ``status``; go on with the reply's
        ``next_cursor`` while it has one."""
        return self._bulk("purge", status, task_type, older_than, limit, cursor, dry_run)

    def bulk_cancel(
        self,
        *,
        status: Optional[Status] = None,
        task_type: Optional[str] = None,
        older_than: Optional[v.Duration] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        dry_run: bool = False,
    ) -> BulkReply:
        """Cancel up to ``limit`` (100) matching tasks; go on with ``next_cursor``."""
        return self._bulk("bulk/cancel", status, task_type, older_than, limit, cursor, dry_run)

    def bulk_expire(
        self,
        *,
        status: Optional[Status] = None,
        task_type: Optional[str] = None,
        older_than: Optional[v.Duration] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        dry_run: bool = False,
    ) -> BulkReply:
        """Expire up to ``limit`` (100) matching pending tasks; go on with ``next_cursor``."""
        return self._bulk("bulk/expire", status, task_type, older_than, limit, cursor, dry_run)

    def bulk_retry(
        self,
        *,
        status: Optional[Status] = None,
        task_type: Optional[str] = None,
        older_than: Optional[v.Duration] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
        dry_run: bool = False,
    ) -> BulkReply:
        """Retry up to ``limit`` (100) matching failed or cancelled tasks; go on with ``next_cursor``."""
        return self._bulk("bulk/retry", status, task_type, older_than, limit, cursor, dry_run)

    # --- schedules -------------------------------------------------------------

    def _schedule_body(
        self,
        task_type: str,
        cron: str,
        id: Optional[str],
        input: JSON,
        timezone: Optional[Union[str, datetime.tzinfo]],
        ttl: Optional[v.Duration],
        ttl_from: Optional[TTLFrom],
        max_attempts: Optional[int],
        enabled: Optional[bool] = None,
        missed_runs: Optional[MissedRuns] = None,
        overlap: Optional[Overlap] = None,
        catch_up_window: Optional[v.Duration] = None,
        priority: Optional[int] = None,
    ) -> Dict[str, Any]:
        if not isinstance(cron, str) or not cron.strip():
            raise ArgumentError("cron", "want a cron expression such as '0 9 * * MON-FRI'")
        if timezone is not None and not isinstance(timezone, str):
            # A zoneinfo.ZoneInfo names its zone; a fixed offset has no IANA name.
            key = getattr(timezone, "key", None)
            if not isinstance(key, str):
                raise ArgumentError("timezone", f"want an IANA time zone name such as 'Europe/Berlin', not {timezone!r}")
            timezone = key
        body: Dict[str, Any] = {"task_type": v.task_type("task_type", task_type), "cron": cron}
        if input is not None:
            body["input"] = v.json_value("input", input)
        if ttl is not None:
            body["ttl"] = v.duration("ttl", ttl)
        if catch_up_window is not None:
            body["catch_up_window"] = v.duration("catch_up_window", catch_up_window)
        if priority is not None:
            body["priority"] = v.priority("priority", priority)
        body.update(
            _drop_none(
                {
                    "id": id,
                    "timezone": timezone,
                    "ttl_from": ttl_from,
                    "max_attempts": max_attempts,
                    "enabled": enabled,
                    "missed_runs": missed_runs,
                    "overlap": overlap,
                }
            )
        )
        return body

    def create_schedule(
        self,
        schedule_id: str,
        task_type: str,
        cron: str,
        input: JSON = None,
        *,
        timezone: Optional[Union[str, datetime.tzinfo]] = None,
        ttl: Optional[v.Duration] = None,
        ttl_from: Optional[TTLFrom] = None,
        max_attempts: Optional[int] = None,
        enabled: Optional[bool] = None,
        missed_runs: Optional[MissedRuns] = None,
        overlap: Optional[Overlap] = None,
        catch_up_window: Optional[v.Duration] = None,
        priority: Optional[int] = None,
    ) -> Schedule:
        """Create cron schedule ``schedule_id`` in this client's queue (``timezone`` an IANA
        name or a ``zoneinfo.ZoneInfo``; UTC by default). Each fire makes a task whose id derives from (schedule, time),
        with ``priority`` (1 highest to 5 lowest; None: the queue's default), in a trace of its own.
        ``enabled=False`` creates it paused; ``missed_runs`` ("skip", "catch_up", ...),
        ``overlap`` and ``catch_up_window`` as docs/schedules.md describes them."""
        if not isinstance(schedule_id, str) or not schedule_id:
            raise ArgumentError("schedule_id", "want a schedule id")
        body = self._schedule_body(
            task_type, cron, schedule_id, input, timezone, ttl, ttl_from, max_attempts,
            enabled, missed_runs, overlap, catch_up_window, priority,
        )
        return cast(Schedule, self._post(self._qp("/schedules"), body, retry=False)["schedule"])

    def update_schedule(
        self,
        schedule_id: str,
        task_type: str,
        cron: str,
        input: JSON = None,
        *,
        timezone: Optional[Union[str, datetime.tzinfo]] = None,
        ttl: Optional[v.Duration] = None,
        ttl_from: Optional[TTLFrom] = None,
        max_attempts: Optional[int] = None,
        enabled: Optional[bool] = None,
        missed_runs: Optional[MissedRuns] = None,
        overlap: Optional[Overlap] = None,
        catch_up_window: Optional[v.Duration] = None,
        priority: Optional[int] = None,
    ) -> Schedule:
        """Replace a schedule (PUT; creates it when missing)."""
        body = self._schedule_body(
            task_type, cron, None, input, timezone, ttl, ttl_from, max_attempts,
            enabled, missed_runs, overlap, catch_up_window, priority,
        )
        return cast(Schedule, self._t.call("PUT", self._sp(schedule_id), None, body, retry=True)[1]["schedule"])

    def get_schedule(self, schedule_id: str) -> Schedule:
        """One schedule, with its next run times."""
        return cast(Schedule, self._get(self._sp(schedule_id))["schedule"])

    def schedules(self, *, limit: Optional[int] = None) -> Iterator[Schedule]:
        """Every schedule of this client's queue, following the cursors."""
        return self._pages(self._qp("/schedules"), "schedules", {"limit": limit})

    def delete_schedule(self, schedule_id: str) -> None:
        """Delete a schedule."""
        self._t.call("DELETE", self._sp(schedule_id), retry=False)

    def pause_schedule(self, schedule_id: str) -> Schedule:
        """Pause a schedule: it fires nothing until resumed."""
        return cast(Schedule, self._post(self._sp(schedule_id, "/pause"), {}, retry=True)["schedule"])

    def resume_schedule(self, schedule_id: str) -> Schedule:
        """Resume a paused schedule."""
        return cast(Schedule, self._post(self._sp(schedule_id, "/resume"), {}, retry=True)["schedule"])

    def trigger_schedule(self, schedule_id: str) -> Fire:
        """Fire a schedule now; the fire names the task it made (``task_id``)."""
        return cast(Fire, self._post(self._sp(schedule_id, "/trigger"), {}, retry=False)["fire"])

    def schedule_history(
        self, schedule_id: str, *, since: Optional[v.Time] = None, limit: Optional[int] = None
    ) -> Iterator[Fire]:
        """A schedule's fires, newest first, following the cursors."""
        q = {"since": None if since is None else v.timestamp("since", since), "limit": limit}
        return self._pages(self._sp(schedule_id, "/history"), "fires", q)


# Every operation of the document and the method that sends it: the tests
# check that this covers models.OPERATIONS exactly.
OPERATION_METHODS: Dict[str, str] = {
    "GET /openapi.json": "openapi",
    "GET /queues": "queues",
    "DELETE /queues/{queue}": "delete_queue",
    "GET /queues/{queue}": "get_queue",
    "PUT /queues/{queue}": "declare_queue",
    "POST /queues/{queue}/bulk/cancel": "bulk_cancel",
    "POST /queues/{queue}/bulk/expire": "bulk_expire",
    "POST /queues/{queue}/bulk/retry": "bulk_retry",
    "POST /queues/{queue}/claim": "claim",
    "POST /queues/{queue}/claim/wait": "claim",
    "POST /queues/{queue}/pause": "pause",
    "POST /queues/{queue}/purge": "purge",
    "POST /queues/{queue}/resume": "resume",
    "GET /queues/{queue}/schedules": "schedules",
    "POST /queues/{queue}/schedules": "create_schedule",
    "DELETE /queues/{queue}/schedules/{id}": "delete_schedule",
    "GET /queues/{queue}/schedules/{id}": "get_schedule",
    "PUT /queues/{queue}/schedules/{id}": "update_schedule",
    "GET /queues/{queue}/schedules/{id}/history": "schedule_history",
    "POST /queues/{queue}/schedules/{id}/pause": "pause_schedule",
    "POST /queues/{queue}/schedules/{id}/resume": "resume_schedule",
    "POST /queues/{queue}/schedules/{id}/trigger": "trigger_schedule",
    "GET /queues/{queue}/stats": "stats",
    "GET /queues/{queue}/tasks": "list",
    "POST /queues/{queue}/tasks": "submit",
    "POST /queues/{queue}/tasks/batch": "submit_batch",
    "POST /queues/{queue}/tasks/wait": "submit",
    "GET /queues/{queue}/tasks/{id}": "status",
    "POST /queues/{queue}/tasks/{id}/artifacts": "create_artifact",
    "GET /queues/{queue}/tasks/{id}/artifacts/{name}": "artifact",
    "POST /queues/{queue}/tasks/{id}/cancel": "cancel",
    "POST /queues/{queue}/tasks/{id}/cancel-ack": "ack_cancel",
    "POST /queues/{queue}/tasks/{id}/complete": "complete",
    "POST /queues/{queue}/tasks/{id}/expire": "expire",
    "POST /queues/{queue}/tasks/{id}/fail": "fail",
    "POST /queues/{queue}/tasks/{id}/heartbeat": "heartbeat",
    "GET /queues/{queue}/tasks/{id}/history": "history",
    "POST /queues/{queue}/tasks/{id}/reschedule": "reschedule",
    "POST /queues/{queue}/tasks/{id}/retry": "retry",
    "GET /tasks": "list_all_queues",
}
