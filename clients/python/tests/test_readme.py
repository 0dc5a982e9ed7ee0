"""The README's Python snippets run, in order, against the test server."""

from __future__ import annotations

import re
import threading
from typing import Any, Dict, List

from conftest import ROOT, wait_for

import s3q


def python_blocks() -> List[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_python_snippets_run(server: str) -> None:
    blocks = python_blocks()
    assert len(blocks) >= 2, "the README's From Python section has the client and the worker snippets"
    ns: Dict[str, Any] = {}
    for b in blocks:
        exec(compile(b, "README.md", "exec"), ns)  # noqa: S102 - the README's own code
    task_id = ns["submit_welcome"](server)
    worker: s3q.Worker = ns["make_worker"](server)
    t = threading.Thread(target=worker.run)
    t.start()
    try:
        c = s3q.Client(server, queue="emails")
        wait_for("the README's worker to complete the task", lambda: c.status(task_id)["status"] == "completed")
        assert c.status(task_id)["output"] == {"sent_to": "a@example.com"}
        bad = c.submit("email.send", {})["task"]["id"]
        wait_for("the README's worker to fail bad input", lambda: c.status(bad)["status"] == "failed")
        assert c.status(bad)["last_error"] == "no recipient"
    finally:
        worker.stop()
        t.join(30)
