"""RFC 3339 times from the API as aware datetimes (Python 3.9's fromisoformat takes no 'Z')."""

from __future__ import annotations

import datetime as dt
import re
from typing import Optional

_FRACTION = re.compile(r"\.(\d+)")


def parse(s: Optional[str]) -> Optional[dt.datetime]:
    """An aware datetime of an RFC 3339 string (nanoseconds cut to microseconds), None for None or ""."""
    if not s:
        return None
    s = s.strip()
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    s = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], s, count=1)
    t = dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.timezone.utc)
    return t
