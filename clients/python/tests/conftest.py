"""A fresh `s3q dev` on a free port for the whole session, and a fresh queue per test."""

from __future__ import annotations

import os
import pathlib
import socket
import subprocess
import time
import uuid
from typing import Iterator

import pytest

import s3q

ROOT = pathlib.Path(__file__).resolve().parents[3]
PUSH_SECRET = "dev-secret"  # what `s3q dev` signs URL deliveries with (--push-secret)
PUSH_SECRET_NAME = "dev"  # its name for a queue's target.secret


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def s3q_binary() -> str:
    b = os.environ.get("S3Q_BIN") or str(ROOT / ".bin" / "s3q")
    if not os.path.exists(b):
        subprocess.run(["go", "build", "-o", b, "./cmd/s3q"], cwd=ROOT, check=True)
    return b


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a fresh `s3q dev` (in-process S3, sweep and tick every second)."""
    addr = f"127.0.0.1:{free_port()}"
    log = open(tmp_path_factory.mktemp("dev") / "s3q-dev.log", "wb")
    p = subprocess.Popen(
        [s3q_binary(), "dev", "--addr", addr, "--tick", "1s", "--push-secret", PUSH_SECRET],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    host, port = addr.split(":")
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            break
        except OSError:
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"s3q dev did not start; see {log.name}") from None
            time.sleep(0.05)
    try:
        yield f"http://{addr}"
    finally:
        p.terminate()
        p.wait(10)
        log.close()


@pytest.fixture
def queue_name() -> str:
    return "py-" + uuid.uuid4().hex[:12]


@pytest.fixture
def client(server: str, queue_name: str) -> s3q.Client:
    """A client addressing a queue of its own."""
    return s3q.Client(server, queue=queue_name, retry_backoff=0.05)


def wait_for(what: str, cond: "object", timeout: float = 20.0) -> None:
    """Poll cond() until true (not a timing assertion: a bound on a wait)."""
    end = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
