"""Time zone names: which ones this machine knows, and its own.

A module of its own, free of the format layer's readers, because the stream's options check a zone name when a
query is defined (``streaming.options``), in PySpark workers that read no table (the planner's).
"""
from __future__ import annotations

import os
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


def is_zone(name: str) -> bool:
    """Whether ``name`` is an IANA time zone name this machine knows (``Europe/Berlin``, ``UTC``)."""
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def local_zone() -> str:
    """This process's zone as an IANA name (``TZ``, else what ``/etc/localtime`` links to), UTC when neither
    names one: tasks on other machines get the name, not this machine's offset."""
    for name in (os.environ.get("TZ", "").lstrip(":"), os.path.realpath("/etc/localtime").partition("zoneinfo/")[2]):
        if name and is_zone(name):
            return name
    return "UTC"
