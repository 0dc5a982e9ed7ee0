"""Every operation of the document sent to a fresh `s3q dev` at least once, each request
matched to its operation: a method that called the wrong route would show here."""

from __future__ import annotations

import re
import urllib.request
from typing import Any, Set
from zoneinfo import ZoneInfo

import s3q
from s3q.client import OPERATION_METHODS
from s3q.models import OPERATIONS


def recorder(client: s3q.Client) -> Set[str]:
    """Record the operation ("METHOD /path/{template}") of every request the client sends."""
    seen: Set[str] = set()
    pats = [(o.method, re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", o.path) + "$"), f"{o.method} {o.path}") for o in OPERATIONS]
    once = client._t.once

    def recording(method: str, path: str, query: Any, body: Any, **kw: Any) -> Any:
        for m, pat, name in pats:
            if m == method and pat.match(path):
                seen.add(name)
        return once(method, path, query, body, **kw)

    client._t.once = recording  # type: ignore[method-assign]
    return seen


def test_every_operation(server: str, queue_name: str) -> None:
    c = s3q.Client(server, queue=queue_name)
    seen = recorder(c)
    assert "paths" in c.openapi()
    q = c.declare_queue(max_attempts=2, timeout="1m", ttl="1h")
    assert q["name"] == queue_name and q.get("max_attempts") == 2
    assert c.get_queue()["name"] == queue_name
    assert queue_name in [x["name"] for x in c.queues(counts=True)]
    t = c.submit("a.b", {"n": 1})["task"]
    assert c.status(t["id"])["status"] == "pending"
    assert any(x["id"] == t["id"] for x in c.list_all_queues(queue=queue_name))
    assert [x["id"] for x in c.list(status="pending", task_type="a.b")] == [t["id"]]
    assert c.submit("a.b", {"n": 2}, wait="1s")["task"]["status"] in ("pending", "running")
    (claimed,) = c.claim(task_types=["a.b"], lease_for="30s", worker_id="w1", max_tasks=1)
    hb = c.heartbeat(claimed["lease"], lease_for=60)
    assert hb["task"]["status"] == "running"
    assert c.reschedule(hb["lease"], delay=0)["status"] == "pending"
    (claimed,) = c.claim(wait=2)
    assert c.fail(claimed["lease"], "boom")["status"] in ("pending", "failed")
    (claimed,) = c.claim(wait=5)
    c.cancel(claimed["task"]["id"])
    assert c.ack_cancel(claimed["lease"])["status"] == "cancelled"
    assert c.retry(claimed["task"]["id"])["status"] == "pending"
    (claimed,) = c.claim(wait=5)
    assert c.complete(claimed["lease"], [1, 2])["output"] == [1, 2]
    t2 = c.submit("a.b", {})["task"]
    assert c.expire(t2["id"])["status"] == "expired"
    assert len(list(c.history(t["id"]))) >= 2
    art = c.create_artifact(t["id"], "out.txt", 5)
    req = urllib.request.Request(art["upload_url"], data=b"hello", method="PUT")
    for k, vs in art.get("headers", {}).items():
        for v in vs:
            req.add_header(k, v)
    urllib.request.urlopen(req).close()
    with urllib.request.urlopen(c.artifact(t["id"], "out.txt")["download_url"]) as r:
        assert r.read() == b"hello"
    assert c.bulk_retry(status="cancelled", dry_run=True)["dry_run"] is True
    assert c.bulk_cancel(status="pending", task_type="none.such")["changed"] == 0
    assert c.bulk_expire(status="pending", older_than="1h")["op"] == "expire"
    assert c.pause()["paused"] and not c.resume().get("paused")
    assert "counts" in c.stats()
    s = c.create_schedule("nightly", "report.build", "0 2 * * *", {"k": 1}, timezone="UTC", enabled=False, overlap="skip")
    assert s.get("enabled") is False
    assert c.update_schedule("nightly", "report.build", "0 3 * * *")["cron"] == "0 3 * * *"
    assert [x["id"] for x in c.schedules()] == ["nightly"]
    assert c.resume_schedule("nightly").get("enabled") is True
    assert c.pause_schedule("nightly").get("enabled") is False
    fire = c.trigger_schedule("nightly")
    assert [f["task_id"] for f in c.schedule_history("nightly", since="2020-01-01T00:00:00Z")] == [fire["task_id"]]
    assert c.get_schedule("nightly")["id"] == "nightly"
    c.delete_schedule("nightly")
    c.purge("expired")
    for st in ("cancelled", "pending", "failed", "completed"):
        c.purge(st)
    c.bulk_cancel(status="running")
    assert c.submit_batch([{"task_type": "a.b"}])[0]["task"]["status"] == "pending"
    c.purge("pending")
    c.delete_queue()
    assert sorted(set(OPERATION_METHODS) - seen) == []


def test_a_schedule_in_a_zoneinfo_zone(client: s3q.Client) -> None:
    """A zoneinfo.ZoneInfo is sent as its IANA name (json could not encode it)."""
    got = client.create_schedule("morning", "digest.send", "0 9 * * MON-FRI", timezone=ZoneInfo("Europe/Berlin"))
    assert got["timezone"] == "Europe/Berlin"
