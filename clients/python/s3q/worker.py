"""The s3q worker: claim, run the handler of the task's type, heartbeat while it runs,
then complete, fail, reschedule or acknowledge a cancel; stop gracefully on SIGTERM/SIGINT.

::

    worker = s3q.Worker(s3q.Client("http://127.0.0.1:8080", queue="emails"), concurrency=4)

    @worker.task("email.send")
    def send(task: s3q.TaskContext) -> dict:
        ...
        return {"sent": True}

    worker.run()  # until SIGTERM/SIGINT or worker.stop()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import logging
import os
import signal
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar

from . import _times
from ._task import Permanent, Reschedule, TaskContext
from .client import Client
from .errors import APIError, ArgumentError, BadRequestError, LeaseError, NotFoundError, QueueNotFoundError
from .models import Claimed

Handler = Callable[[TaskContext], Any]
"""A task type's handler (a function or an ``async def``, run in the slot's thread, with an
event loop of its own for an async one): returns the task's output (any JSON, None for none), or raises:
:class:`Permanent` fails the task at once, :class:`Reschedule` puts it back for later,
any other exception fails the attempt (retried while attempts remain)."""

H = TypeVar("H", bound=Handler)

DEFAULT_WAIT = 20.0
"""Seconds a claim long-polls when nothing is available."""

DEFAULT_CANCEL_POLL = 2.0
"""Seconds between the reads of a running task that see a cancel request between heartbeats."""

log = logging.getLogger("s3q.worker")


class Worker:
    """Claims and runs tasks of the types it has handlers for. Register handlers with
    :meth:`task`, then :meth:`run`."""

    def __init__(
        self,
        client: Client,
        *,
        queue: Optional[str] = None,
        concurrency: int = 1,
        lease_for: Optional[float] = None,
        wait: float = DEFAULT_WAIT,
        idle_backoff: float = 1.0,
        max_idle_backoff: float = 30.0,
        shutdown_grace: float = 30.0,
        cancel_poll: float = DEFAULT_CANCEL_POLL,
        worker_id: Optional[str] = None,
    ) -> None:
        """Make a worker.

        :param client: the client it calls (its queue, unless ``queue`` is given).
        :param queue: the queue to claim from. Defaults to the client's.
        :param concurrency: how many tasks run at once, each in a thread. Defaults to 1.
        :param lease_for: seconds of lease asked at claim and each heartbeat. Defaults to
            None: each task's own timeout.
        :param wait: seconds a claim long-polls (POST .../claim/wait) when nothing is due;
            0 turns long-polling off. Only one thread long-polls at a time, so an idle
            worker costs one long-poll whatever its concurrency. Defaults to 20.
        :param idle_backoff: first pause after a claim error or an empty claim without
            long-polling; doubles up to ``max_idle_backoff``. Defaults to 1 and 30. An empty
            claim whose answer has a ``Retry-After`` (a queue's rate limit holding claims
            back) pauses that long instead.
        :param shutdown_grace: seconds running handlers may finish after a stop; then their
            ``stopping`` event is set and their tasks handed back. Defaults to 30.
        :param cancel_poll: seconds between reads of a running task (one GET) between
            heartbeats, so that a cancel reaches its handler within about this long whatever
            the lease; 0 turns them off (a cancel is then seen at the next heartbeat, a third
            of the lease). Defaults to DEFAULT_CANCEL_POLL (2).
        :param worker_id: recorded on claimed tasks. Defaults to host-pid.
        """
        if concurrency < 1:
            raise ValueError("concurrency: want at least 1")
        self.client = client.in_queue(queue) if queue else client
        self.concurrency = concurrency
        self.lease_for = lease_for
        self.wait = wait
        self.idle_backoff, self.max_idle_backoff = idle_backoff, max_idle_backoff
        self.shutdown_grace = shutdown_grace
        self.cancel_poll = cancel_poll
        self.worker_id = worker_id or f"{socket.gethostname()}-{os.getpid()}"
        self.handlers: Dict[str, Handler] = {}
        self._stop = threading.Event()
        self._turn = threading.Lock()  # held by the one slot that long-polls
        self._fatal: Optional[BaseException] = None
        self._running: Dict[str, TaskContext] = {}
        self._running_lock = threading.Lock()

    def task(self, task_type: str) -> Callable[[H], H]:
        """Decorator registering the handler of ``task_type``."""

        def register(fn: H) -> H:
            self.handle(task_type, fn)
            return fn

        return register

    def handle(self, task_type: str, fn: Handler) -> None:
        """Register the handler of ``task_type``."""
        self.handlers[task_type] = fn

    # --- running ---------------------------------------------------------------

    def stop(self) -> None:
        """Stop claiming; :meth:`run` then lets running handlers finish (``shutdown_grace``)
        and returns. Safe from any thread and from a signal handler."""
        self._stop.set()
        self.client._t.interrupt_polls()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self, *, handle_signals: bool = True) -> None:
        """Claim and run tasks until :meth:`stop` (or SIGTERM/SIGINT when ``handle_signals``
        and called from the main thread). Then: no new claims; running handlers get
        ``shutdown_grace`` seconds; after it their ``stopping`` event is set and their tasks
        are handed back (reschedule, available at once). Raises :class:`QueueNotFoundError`
        at once when the queue is not declared where the deployment requires it."""
        if not self.handlers:
            raise ValueError("worker: no handlers registered")
        old: Dict[signal.Signals, Any] = {}
        if handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, lambda *_: self.stop())
        finisher = concurrent.futures.ThreadPoolExecutor(self.concurrency, thread_name_prefix="s3q-finish")
        slots = [
            threading.Thread(target=self._slot, args=(finisher,), name=f"s3q-slot-{i}", daemon=True)
            for i in range(self.concurrency)
        ]
        try:
            for t in slots:
                t.start()
            while not self._stop.wait(0.5):
                pass
            log.info("worker stopping: no new claims; waiting for running tasks (grace %.0fs)", self.shutdown_grace)
            end = time.monotonic() + self.shutdown_grace
            for t in slots:
                t.join(max(0.0, end - time.monotonic()))
            if any(t.is_alive() for t in slots):
                self._hand_back()
                for t in slots:
                    t.join()
            finisher.shutdown(wait=True)
        finally:
            for sig, h in old.items():
                signal.signal(sig, h)
        if self._fatal is not None:
            raise self._fatal

    def _hand_back(self) -> None:
        """Past the grace: tell the running handlers to stop and give their tasks back now."""
        with self._running_lock:
            running = list(self._running.values())
        for ctx in running:
            ctx.stopping.set()
            if ctx.lease is not None and not ctx.lease_lost.is_set():
                ctx.lease_lost.set()  # whatever the handler returns now is dropped
                try:
                    self.client.reschedule(ctx.lease)
                    log.info("task %s handed back on shutdown", ctx.id)
                except APIError as e:
                    log.warning("handing back task %s failed; its lease will run out: %s", ctx.id, e)

    def _slot(self, finisher: concurrent.futures.ThreadPoolExecutor) -> None:
        prev: Optional[concurrent.futures.Future[None]] = None
        while not self._stop.is_set():
            try:
                c = self._claim()
            except Exception:  # a bug, not the API: log it, do not lose the slot
                log.exception("claim failed")
                self._stop.wait(self.idle_backoff)
                continue
            if c is None:
                continue
            finish = self._run(c)
            if prev is not None:
                prev.result()
            prev = finisher.submit(finish)  # sent while this slot claims its next task
        if prev is not None:
            prev.result()

    def _claim(self) -> Optional[Claimed]:
        got, paused = self._claim_once(0)
        if got is not None or paused or self._stop.is_set():
            return got
        if self.wait <= 0:
            self._stop.wait(self.idle_backoff)
            return None
        # Only the slot holding the turn long-polls; the others wait for it.
        while not self._turn.acquire(timeout=0.2):
            if self._stop.is_set():
                return None
        try:
            backoff = 0.0
            while not self._stop.is_set():
                began = time.monotonic()
                got, paused = self._claim_once(self.wait)
                if got is not None:
                    return got
                if paused:
                    continue  # it waited as the answer's Retry-After asked
                if time.monotonic() - began < self.wait / 2 and not self._stop.is_set():
                    # An API that answers a long-poll early is not asked again in a tight loop.
                    backoff = min(self.max_idle_backoff, backoff * 2 if backoff else self.idle_backoff)
                    self._stop.wait(backoff)
            return None
        finally:
            self._turn.release()

    def _claim_once(self, wait: float) -> Tuple[Optional[Claimed], bool]:
        """One claim of one task, waiting up to ``wait``; and whether it already paused as
        an empty answer's Retry-After asked (a queue's rate limit answers 204 with one: the
        next claim waits that long instead of the usual pause)."""
        try:
            cs, retry_after = self.client._claim(
                task_types=sorted(self.handlers),
                lease_for=self.lease_for,
                worker_id=self.worker_id,
                max_tasks=1,
                wait=wait if wait > 0 else None,
            )
        except QueueNotFoundError as e:
            self._fatal = e
            self.stop()
            return None, True
        except BadRequestError as e:
            if wait > 0 and e.field == "wait":
                log.warning("the API refuses this long-poll; claiming without waiting: %s", e)
                self.wait = 0
                return None, False
            log.error("claim refused: %s", e)
            self._stop.wait(self.max_idle_backoff)
            return None, False
        except (APIError, OSError) as e:
            if not self._stop.is_set():
                log.warning("claim failed: %s", e)
                self._stop.wait(e.retry_after if isinstance(e, APIError) and e.retry_after else self.idle_backoff)
            return None, False
        if cs:
            return cs[0], False
        if retry_after is not None:
            log.debug("claim held back (Retry-After %.3gs)", retry_after)
            self._stop.wait(retry_after)
            return None, True
        return None, False

    def _run(self, c: Claimed) -> Callable[[], None]:
        """Run one claimed task's handler; return what ends it, for a finisher thread."""
        task, lease = c["task"], c["lease"]
        ctx = TaskContext(task, lease)
        h = self.handlers.get(task["task_type"])
        if h is None:  # the claim filters by type; a safety net
            return lambda: self._quiet(self.client.fail, lease, f"no handler for task type {task['task_type']}")
        with self._running_lock:
            self._running[task["id"]] = ctx
        beat_stop = threading.Event()
        beat = threading.Thread(target=self._heartbeat, args=(ctx, beat_stop), daemon=True)
        beat.start()
        out: Any = None
        err: Optional[BaseException] = None
        try:
            out = h(ctx)
            if inspect.iscoroutine(out):  # an async def handler: run in this slot's own loop
                out = asyncio.run(out)
        except Exception as e:  # noqa: BLE001 - every handler error becomes the attempt's outcome
            err = e
        finally:
            # The outcome is what the handler saw when it returned: a cancel or a lost lease
            # that a read in flight reports afterwards does not drop its output.
            lost, cancelled = ctx.lease_lost.is_set(), ctx.cancelled.is_set()
            beat_stop.set()
            beat.join()
            with self._running_lock:
                self._running.pop(task["id"], None)
        cur = ctx.lease or lease
        if lost:
            log.warning("task %s: lease lost or handed back; result dropped", ctx.id)
            return lambda: None
        if cancelled:
            return lambda: self._quiet(self.client.ack_cancel, cur)
        if err is None:
            try:
                json.dumps(out, allow_nan=False)
            except (TypeError, ValueError) as e:
                bad = f"the handler's output is not JSON-serialisable: {e}"
                return lambda: self._quiet(self.client.fail, cur, bad, retryable=False)
            return lambda: self._complete(cur, out)
        if isinstance(err, Reschedule):
            r = err
            return lambda: self._reschedule(cur, r)
        permanent = isinstance(err, Permanent)
        msg = str(err) or type(err).__name__
        if permanent:
            log.warning("task %s (%s): failed for good: %s", ctx.id, task["task_type"], msg)
        else:  # with its traceback: the task keeps only the message (last_error)
            log.warning("task %s (%s): attempt %s failed: %s", ctx.id, task["task_type"], task.get("attempt"), msg, exc_info=err)
        return lambda: self._quiet(self.client.fail, cur, msg, retryable=not permanent)

    def _complete(self, lease: Any, out: Any) -> None:
        """Complete with out; an output the server refuses (413 over the inline limit, 400)
        fails the task at once: no attempt could deliver it, and a lapsed lease would run
        the finished task again."""
        try:
            self.client.complete(lease, out)
        except BadRequestError as e:
            log.warning("task %s: the output was refused; failing the task: %s", lease.get("task_id"), e)
            self._quiet(self.client.fail, lease, f"the handler's output was refused: {e}", retryable=False)
        except Exception as e:  # noqa: BLE001 - a finisher thread must not die: the lease will lapse
            log.warning("complete failed: %s", e)

    def _reschedule(self, lease: Any, r: Reschedule) -> None:
        """Give the task back as the handler asked; a Reschedule the client or the server
        refuses (a delay such as "soon") fails the attempt with the reason instead of
        leaving the lease to lapse."""
        try:
            self.client.reschedule(lease, delay=r.delay, extend_expiration=r.extend)
        except (BadRequestError, ArgumentError) as e:
            log.warning("task %s: the reschedule was refused; failing the attempt: %s", lease.get("task_id"), e)
            self._quiet(self.client.fail, lease, f"the handler's Reschedule was refused: {e}")
        except Exception as e:  # noqa: BLE001 - a finisher thread must not die: the lease will lapse
            log.warning("reschedule failed: %s", e)

    @staticmethod
    def _quiet(op: Callable[..., Any], *args: Any, **kw: Any) -> None:
        try:
            op(*args, **kw)
        except Exception as e:  # noqa: BLE001 - a finisher thread must not die: the lease will lapse
            log.warning("%s failed: %s", getattr(op, "__name__", "lease operation"), e)

    def _heartbeat(self, ctx: TaskContext, stop: threading.Event) -> None:
        """Extend the lease at a third of what is left of it until stop, reading the task every
        cancel_poll seconds between heartbeats; set the context's cancelled or lease_lost event
        when an answer says so."""
        while True:
            lease = ctx.lease
            assert lease is not None
            exp = _times.parse(lease.get("expires_at"))
            left = (exp.timestamp() - time.time()) if exp else 30.0
            beat_at = time.monotonic() + max(0.1, left / 3)
            while True:
                now = time.monotonic()
                poll = self.cancel_poll > 0 and not ctx.cancelled.is_set()
                step = beat_at - now if not poll else min(beat_at - now, self.cancel_poll)
                if stop.wait(max(0.0, step)):
                    return
                if time.monotonic() >= beat_at:
                    break
                try:
                    if self.client.status(ctx.id).get("cancel_requested"):
                        ctx.cancelled.set()
                except Exception as e:  # noqa: BLE001 - any failed read: the next poll or heartbeat tells
                    log.debug("task %s: cancel poll failed: %s", ctx.id, e)
            try:
                hb = self.client.heartbeat(lease, lease_for=self.lease_for)
            except (LeaseError, NotFoundError) as e:
                log.warning("task %s: lease lost: %s", ctx.id, e)
                ctx.lease_lost.set()
                return
            except APIError as e:
                if e.status == 409 and not e.retryable:  # invalid_state: past the heartbeat limit, the lease will lapse
                    ctx.lease_lost.set()
                    return
                log.warning("task %s: heartbeat failed; retrying: %s", ctx.id, e)
                continue
            except Exception as e:  # noqa: BLE001 - a network error or an odd answer: this thread must not die
                log.warning("task %s: heartbeat failed; retrying: %s", ctx.id, e)
                continue
            ctx.lease = hb["lease"]
            ctx.task = hb["task"]
            if hb["task"].get("cancel_requested"):
                ctx.cancelled.set()  # the lease is still held until the handler returns


def run_handlers(handlers: Dict[str, Handler], client: Client, **options: Any) -> None:
    """Run a worker over ``handlers`` (task type → handler) until SIGTERM/SIGINT."""
    w = Worker(client, **options)
    for t, h in handlers.items():
        w.handle(t, h)
    w.run()


__all__: List[str] = ["Worker", "Handler", "DEFAULT_WAIT", "DEFAULT_CANCEL_POLL", "run_handlers"]
