"""What the stores' failures mean in ctxfs terms: the parts every driver shares.

Each driver maps its client's own exceptions and hands anything else to
:func:`translate`: timeouts and lost connections are ``Unavailable``
(retryable), anything unknown is ``BackendError``. No client exception escapes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from ctxfs.core import BackendError, FsError, PermissionDenied, TooLarge, Unavailable

try:  # the HTTP stores' transport; not needed for SFTP
    import aiohttp
except ImportError:  # pragma: no cover - every HTTP extra installs it
    aiohttp: Any = None  # type: ignore[no-redef]

__all__ = ["RETRYABLE_STATUS", "from_status", "translate", "translated"]

RETRYABLE_STATUS: Final = frozenset({408, 409, 429, 500, 502, 503, 504})
"""HTTP statuses worth a retry (409: a concurrent conditional request, on S3)."""


def from_status(status: int, message: str) -> FsError:
    """The error for an HTTP *status* not handled by the caller (404 and 412 usually are)."""
    if status in (401, 403):
        return PermissionDenied(message)
    if status == 413:
        return TooLarge(message)
    if status in RETRYABLE_STATUS:
        return Unavailable(message)
    return BackendError(f"HTTP {status}: {message}")


def translate(exc: BaseException) -> FsError:
    """The ctxfs error for a transport-level failure, or ``BackendError``."""
    if isinstance(exc, FsError):
        return exc
    if isinstance(exc, TimeoutError | ConnectionError):
        return Unavailable(f"{type(exc).__name__}: {exc}")
    if aiohttp is not None:
        if isinstance(exc, aiohttp.ClientConnectionError | aiohttp.ServerTimeoutError):
            return Unavailable(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, aiohttp.ClientResponseError):
            return from_status(exc.status, exc.message)
    if isinstance(exc, PermissionError):
        return PermissionDenied(str(exc))
    return BackendError(f"{type(exc).__name__}: {exc}")


@contextmanager
def translated(error: Callable[[BaseException], FsError] = translate) -> Iterator[None]:
    """Raise any exception from the block as its *error* (``FsError`` passes through)."""
    try:
        yield
    except FsError:
        raise
    except Exception as exc:
        raise error(exc) from exc
