"""Task ids made on the client: lowercase UUIDv7, as the server and the Go client make them."""

from __future__ import annotations

import os
import time


def new_id(now_ms: "int | None" = None) -> str:
    """A fresh UUIDv7: 48 bits of Unix milliseconds, then random bits."""
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    b = bytearray(ms.to_bytes(6, "big") + os.urandom(10))
    b[6] = (b[6] & 0x0F) | 0x70
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
