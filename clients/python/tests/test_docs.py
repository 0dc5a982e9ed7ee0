"""docs/clients.md's Python blocks marked ``runnable`` run as written against the test
server, and type-check under mypy --strict as a reader's program would."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List

import pytest
from conftest import ROOT
from test_readme import python_blocks

import s3q


def runnable_blocks() -> List[str]:
    text = (ROOT / "docs" / "clients.md").read_text()
    return re.findall(r"```python runnable\n(.*?)```", text, re.S)


def test_docs_runnable_python_blocks_run(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = runnable_blocks()
    assert blocks, "docs/clients.md has a ```python runnable block"
    monkeypatch.setenv("S3Q_URL", server)
    for b in blocks:
        ns: Dict[str, Any] = {"__name__": "docs_clients"}
        exec(compile(b, "docs/clients.md", "exec"), ns)  # noqa: S102 - the docs' own code
    c = s3q.Client(server, queue="reports")
    q = c.get_queue()
    assert (q.get("max_per_second"), q.get("burst")) == (2, 1)
    assert c.get_schedule("nightly")["timezone"] == "Europe/Berlin"
    fired = next(iter(c.schedule_history("nightly")))
    t = c.status(fired["task_id"])
    assert (t["status"], t["priority"], t["input"]) == ("cancelled", 2, {"month": "current"})
    assert sum(1 for _ in c.list(status="pending")) == 2  # the delayed and the scheduled report


def test_docs_python_blocks_typecheck(tmp_path: Path) -> None:
    """docs/clients.md's runnable blocks, and the README's From Python blocks (one program)."""
    for i, b in enumerate(runnable_blocks()):
        (tmp_path / f"block{i}.py").write_text(b)
    (tmp_path / "readme.py").write_text("\n".join(python_blocks()))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_deadline_already_past_is_accepted_and_expired_at_once(server: str) -> None:
    # docs/api.md: a submit whose expires_at is past (or ttl 0s) answers with the task expired.
    c = s3q.Client(server, queue="docs-past")
    for t in (
        c.submit("report.build", {}, expires_at="2020-01-01T00:00:00Z")["task"],
        c.submit("report.build", {}, ttl="0s")["task"],
    ):
        assert (t["status"], t.get("expiry_reason")) == ("expired", "ttl"), t
        assert c.status(t["id"])["status"] == "expired"


def test_a_declaration_replaces_the_settings_as_a_whole(server: str) -> None:
    # docs/clients.md: declare_queue(priority=5) on a rate-limited queue drops its max_per_second.
    c = s3q.Client(server, queue="docs-redeclare")
    assert c.declare_queue(max_per_second=2, burst=1).get("max_per_second") == 2
    q = c.declare_queue(priority=5)
    assert (q.get("priority"), q.get("max_per_second"), q.get("burst")) == (5, None, None)


def test_cancel_of_a_pending_task_answers_it_cancelled(server: str) -> None:
    # docs/clients.md: cancel(task_id) returns the task, a pending one cancelled at once.
    c = s3q.Client(server, queue="docs-cancel")
    t = c.submit("report.build", {}, delay="1h")["task"]
    assert c.cancel(t["id"])["status"] == "cancelled"
