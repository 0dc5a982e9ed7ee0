#!/usr/bin/env python3
"""Measure the Python client through an s3q API (scripts/clientbench runs it; prints, never asserts).

    python scripts/bench.py submit --url URL --latency none --calls 200
    python scripts/bench.py worker --url URL --latency typical --tasks 200 --concurrency 4

submit: one thread submits ``calls`` tasks one after another; p50/p99 of a call's wall time,
and client_cpu_ms, the CPU this process spent per call (the client's own overhead: encoding,
HTTP, decoding; the server's time is not in it).
worker: a backlog of ``tasks`` no-op tasks is submitted, then a Worker of ``concurrency``
drains it; tasks_per_s is the backlog over the time from the worker's start to its last
complete.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
import uuid
from typing import Any, List

sys.path.insert(0, __file__.rsplit("/scripts/", 1)[0])

import s3q  # noqa: E402


def pct(xs: List[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def submit(url: str, latency: str, calls: int) -> None:
    c = s3q.Client(url, queue="bench-py-submit-" + uuid.uuid4().hex[:8])
    c.submit("bench.noop", {})  # the connection, the queue's auto-declaration
    times = []
    cpu0 = time.process_time()
    for i in range(calls):
        t0 = time.perf_counter()
        c.submit("bench.noop", {"i": i})
        times.append((time.perf_counter() - t0) * 1000)
    cpu = (time.process_time() - cpu0) * 1000 / calls
    print(
        f"bench clients lang=python op=submit latency={latency} calls={calls} "
        f"p50_ms={statistics.median(times):.2f} p99_ms={pct(times, 99):.2f} client_cpu_ms={cpu:.3f}",
        flush=True,
    )


def worker(url: str, latency: str, tasks: int, concurrency: int) -> None:
    c = s3q.Client(url, queue="bench-py-worker-" + uuid.uuid4().hex[:8])
    for i in range(0, tasks, 500):
        c.submit_batch([{"task_type": "bench.noop", "input": j} for j in range(i, min(tasks, i + 500))])
    done = threading.Event()
    count = [0]
    last = [0.0]
    lock = threading.Lock()
    w = s3q.Worker(c, concurrency=concurrency, wait=5)
    complete = w.client.complete

    def counting(lease: Any, output: Any = None) -> Any:
        r = complete(lease, output)
        with lock:
            count[0] += 1
            last[0] = time.perf_counter()
            if count[0] >= tasks:
                done.set()
        return r

    w.client.complete = counting  # type: ignore[method-assign]
    w.handle("bench.noop", lambda task: None)
    t = threading.Thread(target=w.run, kwargs={"handle_signals": False})
    start = time.perf_counter()
    t.start()
    done.wait(600)
    w.stop()
    t.join(60)
    secs = last[0] - start
    print(
        f"bench clients lang=python worker concurrency={concurrency} latency={latency} tasks={count[0]} "
        f"tasks_per_s={count[0] / secs:.1f}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["submit", "worker"])
    ap.add_argument("--url", required=True)
    ap.add_argument("--latency", default="none")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--tasks", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=4)
    a = ap.parse_args()
    if a.what == "submit":
        submit(a.url, a.latency, a.calls)
    else:
        worker(a.url, a.latency, a.tasks, a.concurrency)


if __name__ == "__main__":
    main()
