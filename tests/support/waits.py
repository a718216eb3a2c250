"""Ports on loopback, and waiting for what a test's processes do."""
from __future__ import annotations

import socket
import time
from collections.abc import Callable


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now (the server about to start takes it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition: Callable[[], object], what: str, patience: float, *, interval: float = 0.2,
             explain: Callable[[], str] = lambda: "") -> None:
    """Poll ``condition`` until it holds; after ``patience`` seconds fail naming ``what``, with ``explain()``
    (the tails of the logs that would say why)."""
    deadline = time.monotonic() + patience
    while not condition():
        if time.monotonic() > deadline:
            details = explain()
            raise AssertionError(f"gave up waiting for {what}" + (f"\n{details}" if details else ""))
        time.sleep(interval)
