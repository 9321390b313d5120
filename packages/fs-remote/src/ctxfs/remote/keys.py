"""Keys: where root-relative paths live in a store, confined lexically under a prefix.

An object store has no kernel to confine paths: a key is the configured prefix,
a slash and a path that :func:`~ctxfs.core.kit.check_path` accepted.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from ctxfs.core import InvalidArgument, InvalidPath, OutsideRoot
from ctxfs.core.kit import check_path, is_reserved

__all__ = ["KeySpace", "split_url"]


def split_url(url: str) -> tuple[str, str]:
    """The bucket and the prefix of ``scheme://bucket/prefix``.

    Raises:
        ValueError: The URL names no bucket, or carries a query or a fragment.

    """
    parts = urlsplit(url)
    if not parts.netloc:
        raise ValueError(f"{url!r} names no bucket (expected {parts.scheme}://bucket/prefix)")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r}: pass options as keyword arguments, not in the URL")
    return unquote(parts.netloc), unquote(parts.path)


class KeySpace:
    """The keys of one root: ``<prefix>/<path>`` in one bucket (or container, or host).

    Args:
        bucket: The bucket, container or other top-level namespace ("" for none).
        prefix: The root inside it; leading and trailing slashes are ignored.
        unicode_only: Refuse a path that is not valid Unicode (a name that is not UTF-8,
            carried as ``os.fsdecode`` does); a file server takes any name.

    Raises:
        InvalidArgument: The bucket or the prefix is not a plain name or path.

    """

    def __init__(self, bucket: str, prefix: str = "", *, unicode_only: bool = True) -> None:
        if "/" in bucket or bucket in (".", ".."):
            raise InvalidArgument(f"{bucket!r} is not a bucket name")
        stripped = prefix.strip("/")
        if stripped:
            try:
                check_path(stripped)
            except (InvalidPath, OutsideRoot) as exc:
                raise InvalidArgument(f"{prefix!r} is not a usable root prefix: {exc}") from exc
        self.bucket = bucket
        self.prefix = stripped
        self.unicode_only = unicode_only

    def key(self, path: str) -> str:
        """The key of root-relative *path* (``""``: the root's own key, the prefix).

        Raises:
            InvalidPath, OutsideRoot: *path* is not canonical, not valid Unicode (where
                that is asked), or names a reserved entry.

        """
        check_path(path)
        if self.unicode_only:
            try:
                path.encode("utf-8")
            except UnicodeEncodeError:
                raise InvalidPath(
                    f"{path!r} is not valid Unicode, which object keys must be", path=path
                ) from None
        return "/".join(part for part in (self.prefix, path) if part)

    def directory(self, path: str) -> str:
        """The key prefix under which the entries of directory *path* live."""
        key = self.key(path)
        return f"{key}/" if key else ""

    def internal(self, name: str) -> str:
        """The key of a backend object *name* (a reserved name) at the root."""
        if not is_reserved(name):
            raise ValueError(f"{name!r} is not a reserved name")
        return f"{self.prefix}/{name}" if self.prefix else name

    def path(self, key: str) -> str:
        """The root-relative path of *key*, which must lie under the prefix, as the key spells it.

        A key with an empty segment (``a//b``, ``/a``) gives no canonical path: listings count it
        as one no path can name.
        """
        if not self.prefix:
            return key
        if key == self.prefix:
            return ""
        head = self.prefix + "/"
        if not key.startswith(head):
            raise ValueError(f"key {key!r} is outside {self.prefix!r}")
        return key[len(head) :]

    def __repr__(self) -> str:
        return f"KeySpace({self.bucket!r}, {self.prefix!r})"
