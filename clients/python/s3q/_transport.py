"""One HTTP exchange with the API: keep-alive connections per thread, SigV4 when asked."""

from __future__ import annotations

import http.client
import json
import random
import select
import socket
import threading
import time
import urllib.parse
from typing import Any, Dict, Mapping, Optional, Tuple

from .errors import APIError, from_answer

_NETWORK = (OSError, http.client.HTTPException)


def is_aws_host(host: str) -> bool:
    """The Go client's rule: sign when the host ends in .amazonaws.com."""
    return host.endswith(".amazonaws.com")


def region_from_host(host: str) -> str:
    """The region of {api}.execute-api.{region}.amazonaws.com, else ""."""
    parts = host.split(".")
    for i, p in enumerate(parts):
        if p == "execute-api" and i + 1 < len(parts):
            return parts[i + 1]
    return ""


def _closed(c: http.client.HTTPConnection) -> bool:
    """True when an idle kept-alive connection is readable: the server closed it (EOF)."""
    sock = c.sock
    if sock is None:
        return False  # not connected yet: it connects when used
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _Signer:
    """SigV4 for API Gateway's IAM auth, with botocore's credential chain (imported only here)."""

    def __init__(self, region: str, credentials: Any) -> None:
        import botocore.session  # noqa: PLC0415 - only a signing client needs botocore

        session = botocore.session.get_session()
        self.region = region or session.get_config_variable("region") or ""
        if not self.region:
            raise ValueError("s3q: SigV4 needs a region: pass region= or set AWS_REGION")
        self.credentials = credentials if credentials is not None else session.get_credentials()
        if self.credentials is None:
            raise ValueError("s3q: SigV4 found no AWS credentials (the default chain is empty)")

    def headers(self, method: str, url: str, body: bytes, headers: Dict[str, str]) -> Dict[str, str]:
        from botocore.auth import SigV4Auth  # noqa: PLC0415
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415

        frozen = self.credentials.get_frozen_credentials()
        req = AWSRequest(method=method, url=url, data=body, headers=headers)
        SigV4Auth(frozen, "execute-api", self.region).add_auth(req)
        return dict(req.headers.items())


class Transport:
    """Sends requests to one API base URL. Safe for concurrent use (a connection per thread)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float,
        sigv4: Optional[bool],
        region: str,
        credentials: Any,
        user_agent: str,
        max_retries: int,
        retry_backoff: float,
    ) -> None:
        u = urllib.parse.urlsplit(base_url.rstrip("/"))
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"s3q: base URL {base_url!r}: want http(s)://host[:port][/stage]")
        self.base_url = base_url.rstrip("/")
        self.scheme, self.host, self.port, self.prefix = u.scheme, u.hostname, u.port, u.path
        self.origin = f"{u.scheme}://{u.netloc}"
        self.timeout = timeout
        self.user_agent = user_agent
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        sign = is_aws_host(self.host) if sigv4 is None else sigv4
        self.signer = _Signer(region or region_from_host(self.host), credentials) if sign else None
        self._local = threading.local()
        self._polls: "set[http.client.HTTPConnection]" = set()
        self._polls_lock = threading.Lock()
        self._stopping = False

    def _conn(self) -> Tuple[http.client.HTTPConnection, bool]:
        c: Optional[http.client.HTTPConnection] = getattr(self._local, "conn", None)
        if c is not None:
            if not _closed(c):
                return c, True
            self._drop()  # the server closed it while it was idle: nothing was sent on it
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        c = cls(self.host, self.port, timeout=self.timeout)
        self._local.conn = c
        return c, False

    def _drop(self) -> None:
        c = getattr(self._local, "conn", None)
        if c is not None:
            c.close()
            self._local.conn = None

    def once(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]],
        body: Any,
        *,
        poll: bool = False,
        resend: bool = True,
        headers: Optional[Mapping[str, str]] = None,
        answer: Optional[Dict[str, str]] = None,
    ) -> Tuple[int, Any]:
        """One request; the status and the decoded JSON answer (None when empty). Raises APIError for >= 400.

        ``headers`` are sent besides the client's own; ``answer``, when given, receives the
        answer's Retry-After and S3q-Retry-After-Ms headers (those it has) under their names.
        A kept-alive connection lost with no answer is tried once more on a fresh one only
        when ``resend`` (a request safe to repeat): the server may have processed it."""
        url = self.prefix + path
        if query:
            q = {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items() if v is not None}
            if q:
                url += "?" + urllib.parse.urlencode(q)
        payload = b"" if body is None else json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
        sent = {"User-Agent": self.user_agent, "Accept": "application/json"}
        if headers:
            sent.update(headers)
        if body is not None:
            sent["Content-Type"] = "application/json"
        if self.signer is not None:
            sent = self.signer.headers(method, self.origin + url, payload, sent)
        for fresh_try in (False, True):
            conn, reused = self._conn()
            if poll:
                with self._polls_lock:
                    self._polls.add(conn)
            try:
                conn.request(method, url, body=payload if body is not None else None, headers=sent)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self._drop()
                if resend and reused and not fresh_try and not (poll and self._stopping):
                    continue  # the server closed an idle keep-alive connection: nothing was processed
                raise
            except BaseException:
                self._drop()
                raise
            finally:
                if poll:
                    with self._polls_lock:
                        self._polls.discard(conn)
            if resp.getheader("Connection", "").lower() == "close":
                self._drop()
            break
        status = resp.status
        if answer is not None:
            for name in ("Retry-After", "S3q-Retry-After-Ms"):
                value = resp.getheader(name)
                if value is not None:
                    answer[name] = value
        if status >= 400:
            raise from_answer(status, raw, resp.getheader("Retry-After"))
        if not raw or status == 204:
            return status, None
        return status, json.loads(raw)

    def call(
        self,
        method: str,
        path: str,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        *,
        retry: bool,
        headers: Optional[Mapping[str, str]] = None,
    ) -> Tuple[int, Any]:
        """once, sent again (retry true) after a network error, 429, 5xx (not 504) or a lost race
        (409 conflict with no field) with capped jittered backoff."""
        n = 0
        while True:
            try:
                return self.once(method, path, query, body, resend=retry, headers=headers)
            except APIError as e:
                if not retry or n >= self.max_retries or not e.retryable:
                    raise  # retryable: a 429, a 5xx other than 504, or a lost race (409 conflict, no field)
                self._sleep(n, e.retry_after)
            except _NETWORK:
                if not retry or n >= self.max_retries:
                    raise
                self._sleep(n, None)
            n += 1

    def _sleep(self, n: int, retry_after: Optional[float]) -> None:
        cap = 20 * self.retry_backoff
        d = min(self.retry_backoff * (2**n), cap)
        d = d / 2 + random.uniform(0, d / 2)
        if retry_after is not None and retry_after > d:
            d = min(retry_after, cap)
        time.sleep(d)

    def interrupt_polls(self) -> None:
        """End the long-polls in flight at once (they raise OSError): a stopping worker's."""
        with self._polls_lock:
            self._stopping = True  # an interrupted long-poll is not sent again
            conns = list(self._polls)
        for c in conns:
            sock = c.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._drop()
