"""Each remote backend names its root by the service too: one bucket name at two endpoints, one
container name in two accounts, one path on two SFTP servers are two roots (an owner's steps made
in one are not undone in the other). Opening a backend connects to nothing: no server is needed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ctxfs.core import Backend, open_backend

SIGNATURE = "SECRET-SIGNATURE"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def _azure(endpoint: str) -> Backend:
    pytest.importorskip("adlfs", reason="the azure extra: uv sync --all-extras")
    connection = (
        f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};"
        f"BlobEndpoint={endpoint}/devstoreaccount1;"
    )
    return open_backend("az://container/project", connection_string=connection)


def _azure_sas(endpoint: str) -> Backend:
    pytest.importorskip("adlfs", reason="the azure extra: uv sync --all-extras")
    signed = f"sv=2024-01-01&sig={SIGNATURE}"  # (a token rotates: the root stays the same)
    connection = f"BlobEndpoint={endpoint}/account/;SharedAccessSignature={signed}"
    return open_backend("az://container/project", connection_string=connection)


def _s3_by_environment(endpoint: str) -> Backend:
    pytest.importorskip("s3fs", reason="the s3 extra: uv sync --all-extras")
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        return open_backend("s3://bucket/project", anon=True)


def _s3(endpoint: str) -> Backend:
    pytest.importorskip("s3fs", reason="the s3 extra: uv sync --all-extras")
    return open_backend("s3://bucket/project", endpoint_url=endpoint, anon=True)


def _gcs(endpoint: str) -> Backend:
    pytest.importorskip("gcsfs", reason="the gcs extra: uv sync --all-extras")
    return open_backend("gs://bucket/project", endpoint_url=endpoint, token="anon")


def _sftp(endpoint: str) -> Backend:
    pytest.importorskip("asyncssh", reason="the sftp extra: uv sync --all-extras")
    return open_backend(f"sftp://agent@{endpoint.removeprefix('http://')}/srv/project")


@pytest.mark.parametrize(
    "opened",
    [_s3, _s3_by_environment, _gcs, _azure, _azure_sas, _sftp],
    ids=["s3", "s3 by its environment", "gcs", "azure", "azure by a SAS", "sftp"],
)
def test_one_name_served_at_two_places_is_two_roots(opened: Callable[[str], Backend]) -> None:
    here, again = opened("http://127.0.0.1:5555"), opened("http://127.0.0.1:5555")
    there = opened("http://127.0.0.2:5555")
    assert here.root_identity is not None
    assert here.root_identity == again.root_identity  # (another process: the same root)
    assert there.root_identity not in (None, here.root_identity)
    assert SIGNATURE not in here.root_identity  # (kept with every step: no credential)
