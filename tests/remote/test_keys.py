"""Keys are confined lexically: the string checks that run before any request."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxfs.core import ErrorCode, FsError, InvalidArgument, open_fs
from ctxfs.remote.keys import KeySpace, split_url


@pytest.mark.parametrize(
    ("prefix", "path", "key"),
    [("", "a.txt", "a.txt"), ("root", "a/b.txt", "root/a/b.txt"), ("/deep/root/", "x", "deep/root/x"),
     ("root", "", "root"), ("", "", "")],
)  # fmt: skip
def test_keys_join_the_prefix_and_the_path(prefix: str, path: str, key: str) -> None:
    keys = KeySpace("bucket", prefix)
    assert keys.key(path) == key
    assert keys.path(key) == path


@pytest.mark.parametrize(
    "path",
    ["../x", "a/../../x", "/abs", "a\\b", "s3://other/key", "a//b", "./a", "a/", "a\x00b",
     ".ctxfs-probe-1", "d/.ctxfs-lock.a", "bad\udcffname", "C:x"],
)  # fmt: skip
def test_keys_refuse_what_could_leave_the_prefix(path: str) -> None:
    with pytest.raises(FsError) as refused:
        KeySpace("bucket", "root").key(path)
    assert refused.value.code in (ErrorCode.INVALID_PATH, ErrorCode.OUTSIDE_ROOT)


@pytest.mark.parametrize(
    ("bucket", "prefix"), [("a/b", ""), ("..", ""), ("b", "../up"), ("b", "x//y")]
)
def test_bad_buckets_and_prefixes_are_refused_at_open(bucket: str, prefix: str) -> None:
    with pytest.raises(InvalidArgument):
        KeySpace(bucket, prefix)


def test_only_keys_under_the_prefix_map_back_to_paths() -> None:
    keys = KeySpace("bucket", "root")
    with pytest.raises(ValueError, match="outside"):
        keys.path("rootless/a.txt")
    assert keys.directory("") == "root/"
    assert keys.directory("d") == "root/d/"
    assert keys.internal(".ctxfs-probe-1") == "root/.ctxfs-probe-1"


def test_urls_split_into_bucket_and_prefix() -> None:
    assert split_url("s3://bucket/a/b") == ("bucket", "/a/b")
    assert split_url("gs://bucket") == ("bucket", "")
    for bad in ("s3:///nobucket", "s3://b/p?versionId=1", "s3://b/p#frag"):
        with pytest.raises(ValueError, match=r"bucket|keyword"):
            split_url(bad)


@pytest.mark.parametrize(
    "url", ["fsspec+file:///tmp/root", "fsspec+local://tmp", "fsspec+sftp://h/r"]
)
def test_fsspec_filesystems_that_follow_links_are_refused_at_open(url: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="follows symbolic links"):
        open_fs(url)
    (tmp_path / "out").symlink_to("/etc")
    with pytest.raises(InvalidArgument):  # (a link in the root would reach /etc)
        open_fs(f"fsspec+file://{tmp_path}")
