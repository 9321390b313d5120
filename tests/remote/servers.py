"""The real test servers (`.ci/servers`), and how each store's tests reach them.

Each store gets a fresh bucket (or container, or directory) per test session
and a fresh prefix per test. A store whose server is not listening skips with
the command that starts it; with ``CTXFS_REQUIRE_SERVERS=1`` (CI) it fails.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest

SERVERS_HOME: Final = Path(os.environ.get("CTXFS_SERVERS_HOME", "/tmp/ctxfs-servers"))
AZURITE_KEY: Final = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURITE: Final = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    f"AccountKey={AZURITE_KEY};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
)


@dataclass(frozen=True, kw_only=True)
class Server:
    """One store's test server: where it listens and how ctxfs opens it."""

    name: str
    scheme: str
    port: int
    options: dict[str, Any] = field(default_factory=dict)
    """Keyword options of ``open_fs`` for this server (no environment needed)."""

    def require(self) -> None:
        """Skip (or, in CI, fail) unless the server listens on 127.0.0.1."""
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
        except OSError:
            message = (
                f"the {self.name} test server is not listening on 127.0.0.1:{self.port}; "
                f"start it with `.ci/servers install {self.name} && .ci/servers start {self.name}`"
            )
            if os.environ.get("CTXFS_REQUIRE_SERVERS") == "1":
                pytest.fail(message)
            pytest.skip(message)

    def create_bucket(self, *, versioned: bool = False, name: str | None = None) -> str:
        """A new, empty bucket (container, directory) on the server; returns its name.

        *versioned*: the bucket keeps every version of an object (S3 and GCS only).
        """
        name = name or f"ctxfs-{uuid.uuid4().hex[:16]}"
        if self.name == "s3":
            import s3fs  # noqa: PLC0415

            s3 = s3fs.S3FileSystem(skip_instance_cache=True, **self.options)
            s3.call_s3("create_bucket", Bucket=name)
            if versioned:
                s3.call_s3(
                    "put_bucket_versioning",
                    Bucket=name,
                    VersioningConfiguration={"Status": "Enabled"},
                )
        elif self.name == "gcs":
            request = urllib.request.Request(
                "http://127.0.0.1:4443/storage/v1/b",
                data=json.dumps({"name": name, "versioning": {"enabled": versioned}}).encode(),
                headers={"Content-Type": "application/json"},
            )
            urllib.request.urlopen(request, timeout=10).close()
        elif versioned:
            raise ValueError(f"no versioned buckets on the {self.name} test server")
        elif self.name == "azure":
            from azure.storage.blob import BlobServiceClient  # noqa: PLC0415

            with BlobServiceClient.from_connection_string(AZURITE) as service:
                service.create_container(name)
        elif self.name == "sftp":
            name = f"/tmp/ctxfs-sftp-tests/{name}"
        return name

    def url(self, bucket: str, prefix: str) -> str:
        """The ctxfs URL of *prefix* in *bucket*."""
        if self.name == "sftp":
            return f"sftp://{getpass.getuser()}@127.0.0.1:{self.port}{bucket}/{prefix}"
        return f"{self.scheme}://{bucket}/{prefix}"


S3: Final = Server(
    name="s3",
    scheme="s3",
    port=5555,
    options={
        "endpoint_url": "http://127.0.0.1:5555",
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    },
)
GCS: Final = Server(
    name="gcs",
    scheme="gs",
    port=4443,
    options={"endpoint_url": "http://127.0.0.1:4443", "token": "anon", "project": "test"},
)
AZURE: Final = Server(name="azure", scheme="az", port=10000, options={"connection_string": AZURITE})
SFTP: Final = Server(
    name="sftp",
    scheme="sftp",
    port=2222,
    options={
        "client_keys": [str(SERVERS_HOME / "ssh" / "client_ed25519")],
        "known_hosts": str(SERVERS_HOME / "ssh" / "known_hosts"),
    },
)
SERVERS: Final = {server.name: server for server in (S3, GCS, AZURE, SFTP)}
