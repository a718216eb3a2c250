"""Storage options from Spark's option strings: typed the way fsspec expects, Hadoop's S3A names mapped.

Spark hands a source every option as a string, but fsspec file systems take Python values: s3fs reads
``anon="false"`` as true (unsigned requests, then "Access Denied") and needs ``client_kwargs`` as a dict
(a string fails with "'str' object has no attribute 'copy'"). And Spark users type the Hadoop S3A names
they give every other source (``fs.s3a.access.key``...), which s3fs does not know and silently ignores.

So ``true``/``false`` become booleans, integers and decimals numbers, and values starting with ``{`` or ``[``
JSON; the common S3A names become their s3fs equivalents, and any other ``fs.s3a.*`` name is an error naming
the s3fs option to use. Credentials, names and ids stay text even when they look like numbers. An empty value
means "not set", as in Hadoop, so the AWS environment variables and botocore's other credential sources
still apply.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..errors import OptionError

#: option names whose values are text however they look (a numeric secret must not become an int)
_TEXT = re.compile(r"(key|secret|token|password|username|name|profile|project|id)$")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+(\.\d*)?[eE][+-]?\d+)")

_S3A = "fs.s3a."
#: Hadoop S3A name (after ``fs.s3a.``) -> where its value goes in s3fs's arguments
_S3A_MAPPED: dict[str, tuple[str, ...]] = {
    "access.key": ("key",),
    "secret.key": ("secret",),
    "session.token": ("token",),
    "endpoint": ("client_kwargs", "endpoint_url"),
    "endpoint.region": ("client_kwargs", "region_name"),
    "path.style.access": ("config_kwargs", "s3", "addressing_style"),
    "connection.ssl.enabled": ("use_ssl",),
}
#: S3A names users often set that have an s3fs counterpart of another shape: what to write instead
_S3A_HINTS = {
    "aws.credentials.provider": "fs.key/fs.secret/fs.token, fs.profile, or fs.anon=true; without them s3fs uses "
                                "botocore's chain (AWS_* environment variables, ~/.aws, instance roles)",
    "impl": "nothing: s3:// and s3a:// URLs are read with s3fs",
    "requester.pays.enabled": "fs.requester_pays=true",
    "connection.maximum": 'fs.config_kwargs={"max_pool_connections": N}',
    "attempts.maximum": 'fs.config_kwargs={"retries": {"max_attempts": N}}',
    "connection.timeout": 'fs.config_kwargs={"read_timeout": SECONDS}',
    "connection.establish.timeout": 'fs.config_kwargs={"connect_timeout": SECONDS}',
    "server-side-encryption-algorithm": 'fs.s3_additional_kwargs={"ServerSideEncryption": "aws:kms"}',
    "server-side-encryption.key": 'fs.s3_additional_kwargs={"SSEKMSKeyId": "..."}',
    "encryption.algorithm": 'fs.s3_additional_kwargs={"ServerSideEncryption": "aws:kms"}',
    "encryption.key": 'fs.s3_additional_kwargs={"SSEKMSKeyId": "..."}',
}


def storage_options(options: Mapping[str, str]) -> dict[str, Any]:
    """fsspec storage options from Spark options named ``fs.<name>`` or ``storage.<name>`` (``fs.s3a.*``: Hadoop).

    Values are typed (see the module doc); Hadoop S3A names are mapped onto s3fs's arguments, merging into
    ``client_kwargs``/``config_kwargs`` given as JSON; one setting given two different ways is an error.
    """
    out: dict[str, Any] = {}
    mapped: list[tuple[str, tuple[str, ...], Any]] = []
    for option, raw in options.items():
        if raw is None or str(raw).strip() == "":
            continue
        value = str(raw).strip()
        if option.lower().startswith(_S3A):
            name = option[len(_S3A):].lower()
            mapped.append((option, _s3a_target(option, name), _s3a_value(option, name, value)))
        else:
            name = option.split(".", 1)[1]
            out[name] = value if _TEXT.search(name.lower()) else _typed(option, value)
    endpoint = next((m for m in mapped if m[1] == _S3A_MAPPED["endpoint"]), None)
    if endpoint is not None and "://" not in endpoint[2]:  # Hadoop takes a bare host; botocore needs a scheme
        ssl = next((v for _, target, v in mapped if target == ("use_ssl",)), True)
        mapped[mapped.index(endpoint)] = (endpoint[0], endpoint[1], f"{'https' if ssl else 'http'}://{endpoint[2]}")
    for option, target, value in mapped:
        _put(out, option, target, value)
    return out


def _typed(option: str, value: str) -> Any:
    """A storage option's value as fsspec users write it in Python."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    if _INT.fullmatch(value):
        return int(value)
    if _FLOAT.fullmatch(value):
        return float(value)
    if value.startswith(("{", "[")):
        try:
            return json.loads(value)
        except ValueError as e:
            raise OptionError(f"option {option}: not valid JSON ({e})") from None
    return value


def _s3a_target(option: str, name: str) -> tuple[str, ...]:
    if name in _S3A_MAPPED:
        return _S3A_MAPPED[name]
    if name in _S3A_HINTS:
        raise OptionError(f"option {option} is Hadoop's S3A connector's; this source reads with s3fs: use "
                          f"{_S3A_HINTS[name]}")
    mapped = ", ".join(f"fs.s3a.{n}" for n in _S3A_MAPPED)
    raise OptionError(f"option {option} is Hadoop's S3A connector's and has no s3fs equivalent here; this source "
                      f"reads with s3fs: pass s3fs's own argument as fs.<argument> (key, secret, token, anon, "
                      f"endpoint_url, client_kwargs, config_kwargs, s3_additional_kwargs, ...); Hadoop names "
                      f"understood: {mapped}")


def _s3a_value(option: str, name: str, value: str) -> Any:
    if name not in ("path.style.access", "connection.ssl.enabled"):
        return value
    if value.lower() not in ("true", "false"):
        raise OptionError(f"option {option}={value!r}: must be true or false")
    if name == "connection.ssl.enabled":
        return value.lower() == "true"
    return "path" if value.lower() == "true" else "virtual"


def _put(out: dict[str, Any], option: str, target: tuple[str, ...], value: Any) -> None:
    """Set ``out[target[0]][target[1]]... = value``; a different value already there is a conflict."""
    node = out
    for i, step in enumerate(target[:-1]):
        child = node.setdefault(step, {})
        if not isinstance(child, dict):
            raise OptionError(f"option {option} goes into fs.{'.'.join(target[:i + 1])}, which is not a JSON object")
        node = child
    last = target[-1]
    if last in node and node[last] != value:
        where = "fs." + target[0] + "".join(f"[{t!r}]" for t in target[1:])
        raise OptionError(f"option {option} and {where} set the same thing differently; give it once")
    node[last] = value
