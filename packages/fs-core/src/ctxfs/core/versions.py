"""Version tokens: opaque, scheme-prefixed strings that name one state of a file.

``xxh3:<32 hex digits>`` is the 128-bit xxh3 hash of the content, used where the
store has no token of its own (local disk, memory, SFTP). Stores with their own
tokens use them behind their own prefix (``etag:`` on S3 and Azure, ``gen:`` on
GCS). Callers compare tokens for equality and never parse them.
"""

from __future__ import annotations

import enum
from typing import Final, NewType, TypeAlias

import xxhash

__all__ = ["ABSENT", "Absent", "ContentHasher", "Expect", "Version", "content_version"]

Version = NewType("Version", str)
"""An opaque version token, e.g. ``"xxh3:9c1f..."`` or ``"etag:\\"abc\\""``."""


class Absent(enum.Enum):
    """The type of :data:`ABSENT`."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = Absent.ABSENT
"""Write precondition: the path must not exist (create-only)."""

Expect: TypeAlias = Version | Absent | None
"""A write precondition: a version (update only that state), ABSENT, or None (unconditional)."""


def content_version(data: bytes) -> Version:
    """Return the ``xxh3:`` version of *data*."""
    return Version("xxh3:" + xxhash.xxh3_128_hexdigest(data))


class ContentHasher:
    """Compute an ``xxh3:`` version incrementally, for streamed reads."""

    __slots__ = ("_state",)

    def __init__(self) -> None:
        self._state = xxhash.xxh3_128()

    def update(self, chunk: bytes) -> None:
        """Feed the next chunk of content."""
        self._state.update(chunk)

    def version(self) -> Version:
        """Return the version of everything fed so far."""
        return Version("xxh3:" + self._state.hexdigest())
