"""Writing Java properties files: ``hoodie.properties`` and ``.hoodie_partition_metadata`` (spec §1.2, §1.3).

Both are ``java.util.Properties.store`` output: comment lines, a date line, then ``key=value`` lines with
Java escaping. :func:`escape_java_property` is the inverse of ``hoodie.config.parse_java_properties``.
"""
from __future__ import annotations

import datetime as dt

_SPECIAL = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f", "=": "\\=", ":": "\\:", "#": "\\#", "!": "\\!",
            "\\": "\\\\"}


def escape_java_property(text: str, *, is_key: bool = False) -> str:
    """``Properties.saveConvert``: escape ``text`` as a key (every space escaped) or a value (a leading one)."""
    out = []
    for i, c in enumerate(text):
        if c == " ":
            out.append("\\ " if (i == 0 or is_key) else " ")
        elif c in _SPECIAL:
            out.append(_SPECIAL[c])
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            if ord(c) > 0xFFFF:  # Java strings are UTF-16: a surrogate pair, each escaped
                code = ord(c) - 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}")
            else:
                out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    return "".join(out)


def java_date(now: dt.datetime | None = None) -> str:
    """``java.util.Date.toString()`` in UTC, e.g. ``Thu Apr 09 00:20:02 UTC 2026`` (the date line of ``store``)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return now.strftime("%a %b %d %H:%M:%S UTC %Y")


def render_properties(props: dict[str, str], comment: str | None = None, now: dt.datetime | None = None) -> bytes:
    """The bytes ``Properties.store(out, comment)`` writes (ISO-8859-1; other characters escaped)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    lines = []
    if comment is not None:
        lines.append("#" + escape_java_property(comment).replace("\\ ", " ").replace("\\:", ":"))
    lines.append("#" + java_date(now))
    lines += [f"{escape_java_property(k, is_key=True)}={escape_java_property(v)}" for k, v in props.items()]
    return ("\n".join(lines) + "\n").encode("latin-1")
