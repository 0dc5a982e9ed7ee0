"""examples/python/emails.py: its HTTP push target takes a live delivery from `s3q dev`, and
its Lambda handler answers the Lambda contract."""

from __future__ import annotations

import datetime as dt
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any, Dict

import pytest
from conftest import PUSH_SECRET, PUSH_SECRET_NAME, ROOT, free_port, wait_for

import s3q


def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("emails", ROOT / "examples" / "python" / "emails.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["emails"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_example_push_target(client: s3q.Client) -> None:
    ex = example()
    addr = f"127.0.0.1:{free_port()}"
    srv = ex.serve(addr, f"http://{addr}/", client.queue, [PUSH_SECRET])
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        client.declare_queue(target={"url": f"http://{addr}/", "secret": PUSH_SECRET_NAME})
        ok = client.submit("email.send", {"to": "a@example.com"})["task"]["id"]
        bad = client.submit("email.send", {"to": "nobody"})["task"]["id"]
        wait_for("the delivery", lambda: client.status(ok)["status"] == "completed")
        wait_for("the permanent failure", lambda: client.status(bad)["status"] == "failed")
    finally:
        srv.shutdown()
        srv.server_close()
    assert client.status(ok)["output"] == {"sent_to": "a@example.com"}
    assert client.status(bad)["attempt"] == 1  # 4xx: failed without retry


def test_example_lambda_handler() -> None:
    ex = example()
    deadline = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=10)).isoformat()
    event: Dict[str, Any] = {"task": {"id": "t", "task_type": "email.send", "input": {"to": "a@example.com"}}, "deadline": deadline}
    assert ex.lambda_handler(event, None) == {"sent_to": "a@example.com"}
    event["task"]["input"] = {}
    with pytest.raises(Exception) as e:
        ex.lambda_handler(event, None)
    assert type(e.value).__name__ == "s3q.Permanent"
