"""A local S3 for tests: moto's standalone server on loopback, one bucket, and the options that reach it.

The server is a real HTTP endpoint (not moto's in-process mock), so Spark's Python workers — separate
processes — reach it through the same options as the test itself.
"""
from __future__ import annotations

from pathlib import Path

import boto3
import fsspec
from moto.server import ThreadedMotoServer

BUCKET = "hudi-streaming-tests"
REGION = "us-east-1"
#: moto accepts any credentials; these only have to be present
KEY, SECRET = "test-access-key-id", "test-secret-access-key"


class S3Endpoint:
    """What clients of an S3 endpoint on loopback use (the server itself, or a proxy in front of it): URLs of the
    test bucket and the options that reach ``endpoint``."""

    endpoint: str

    def url(self, name: str) -> str:
        return f"s3://{BUCKET}/{name}"

    @property
    def storage_options(self) -> dict:
        """fsspec/s3fs options, as Python API users give them."""
        return {"key": KEY, "secret": SECRET, "client_kwargs": {"endpoint_url": self.endpoint, "region_name": REGION}}

    @property
    def spark_options(self) -> dict[str, str]:
        """The same as Spark options, in the Hadoop S3A names Spark users type."""
        return {"fs.s3a.endpoint": self.endpoint, "fs.s3a.endpoint.region": REGION, "fs.s3a.access.key": KEY,
                "fs.s3a.secret.key": SECRET, "fs.s3a.path.style.access": "true"}


class S3Server(S3Endpoint):
    """moto's server on 127.0.0.1 (a free port) with :data:`BUCKET` created; :meth:`stop` ends it."""

    def __init__(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION, aws_access_key_id=KEY,
                     aws_secret_access_key=SECRET).create_bucket(Bucket=BUCKET)

    def upload(self, folder: Path, name: str) -> str:
        """Copy a local folder (hidden files included: ``.hoodie``, log files) to ``name``; returns its URL."""
        fs = fsspec.filesystem("s3", skip_instance_cache=True, **self.storage_options)
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            fs.pipe_file(f"{BUCKET}/{name}/{path.relative_to(folder).as_posix()}", path.read_bytes())
        return self.url(name)

    def stop(self) -> None:
        self._server.stop()
