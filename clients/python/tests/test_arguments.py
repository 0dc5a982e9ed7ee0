"""Bad arguments fail before any request, naming the argument: the client here points at a
port nothing listens on, so a request would fail with a connection error instead."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from typing import Any, Callable

import pytest
from conftest import free_port

import s3q
from s3q import _values
from s3q._transport import Transport, is_aws_host, region_from_host

NOWHERE = s3q.Client(f"http://127.0.0.1:{free_port()}", max_retries=0)
UTC = dt.timezone.utc


def refused(argument: str, call: Callable[[], Any]) -> s3q.ArgumentError:
    with pytest.raises(s3q.ArgumentError) as e:
        call()
    assert e.value.argument == argument, e.value
    assert isinstance(e.value, ValueError)
    return e.value


def test_ttl_and_expires_at_together() -> None:
    refused("ttl", lambda: NOWHERE.submit("a.b", {}, expires_at=dt.datetime(2030, 1, 1, tzinfo=UTC), ttl="1h"))
    refused("ttl_seconds", lambda: NOWHERE.submit("a.b", {}, ttl="1h", ttl_seconds=60))


def test_naive_datetime_is_refused() -> None:
    e = refused("expires_at", lambda: NOWHERE.submit("a.b", {}, expires_at=dt.datetime(2030, 1, 1)))
    assert "naive" in str(e)
    refused("schedule_at", lambda: NOWHERE.submit("a.b", {}, schedule_at=dt.datetime(2030, 1, 1)))


def test_input_not_json() -> None:
    refused("input", lambda: NOWHERE.submit("a.b", {"when": dt.date(2030, 1, 1)}))
    refused("input", lambda: NOWHERE.submit("a.b", {"x": float("nan")}))
    refused("input", lambda: NOWHERE.submit("a.b", decimal.Decimal("1.5")))


@pytest.mark.parametrize("bad", ["", "has space", "a..b", "x" * 129, "é", 7, None, "ab\n", "ab\r\n"])
def test_task_type_the_server_would_refuse(bad: Any) -> None:
    refused("task_type", lambda: NOWHERE.submit(bad, {}))


def test_other_arguments() -> None:
    refused("schedule_id", lambda: NOWHERE.create_schedule("", "a.b", "* * * * *"))
    refused("cron", lambda: NOWHERE.create_schedule("s", "a.b", " "))
    refused("timezone", lambda: NOWHERE.create_schedule("s", "a.b", "0 9 * * *", timezone=UTC))
    refused("max_attempts", lambda: NOWHERE.submit("a.b", {}, max_attempts=0))
    refused("delay", lambda: NOWHERE.submit("a.b", {}, delay=True))
    refused("delay", lambda: NOWHERE.submit("a.b", {}, delay="1m", schedule_at="2030-01-01T00:00:00Z"))
    refused("ttl_seconds", lambda: NOWHERE.submit("a.b", {}, ttl_seconds=1.5))  # type: ignore[arg-type]
    refused("lease", lambda: NOWHERE.complete({}, {}))  # type: ignore[typeddict-item]
    refused("task_id", lambda: NOWHERE.status(""))


def test_good_arguments_reach_the_network() -> None:
    # The same calls with good arguments do send (and fail to connect): nothing above was refused for the port.
    with pytest.raises(OSError):
        NOWHERE.submit("a.b", {"x": 1}, expires_at=dt.datetime(2030, 1, 1, 9, tzinfo=dt.timezone(dt.timedelta(hours=2))))


def test_times_and_durations_on_the_wire() -> None:
    t = dt.datetime(2030, 1, 1, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert _values.timestamp("t", t) == "2030-01-01T07:30:00Z"
    assert _values.timestamp("t", t.replace(microsecond=5)) == "2030-01-01T07:30:00.000005Z"
    assert _values.duration("d", dt.timedelta(hours=1)) == 3600
    assert _values.duration("d", dt.timedelta(milliseconds=1500)) == 1.5
    assert _values.duration("d", "1h") == "1h"


def test_ids_are_uuidv7() -> None:
    a, b = s3q.new_id(), s3q.new_id()
    assert a != b and a == a.lower()
    u = uuid.UUID(a)
    assert u.version == 7 and u.variant == uuid.RFC_4122
    assert s3q.new_id(0x0192_3A5E_0000).startswith("01923a5e-0000-7")


def test_sigv4_rule() -> None:
    assert is_aws_host("abc.execute-api.eu-west-1.amazonaws.com")
    assert not is_aws_host("127.0.0.1") and not is_aws_host("amazonaws.com.evil.example")
    assert region_from_host("abc.execute-api.eu-west-1.amazonaws.com") == "eu-west-1"


def test_sigv4_signs_with_botocore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    t = Transport(
        "https://abc.execute-api.eu-west-1.amazonaws.com/prod",
        timeout=1,
        sigv4=None,
        region="",
        credentials=None,
        user_agent="t",
        max_retries=0,
        retry_backoff=0.1,
    )
    assert t.signer is not None and t.signer.region == "eu-west-1"
    h = t.signer.headers("POST", t.origin + "/prod/queues/q/tasks", b"{}", {"Content-Type": "application/json"})
    assert h["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in h["Authorization"]
    assert "X-Amz-Date" in h
    plain = s3q.Client("http://127.0.0.1:8080")
    assert plain._t.signer is None
