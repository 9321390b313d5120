"""Images for a model: known by their first bytes, sent as they are or made to fit.

An image within the limits (:class:`ImageLimits`) is sent byte for byte; a
larger one, or an animation (its first frame), is decoded with Pillow,
downscaled and re-encoded: PNG where the original is lossless and PNG fits, else
JPEG (a big JPEG decoded at a reduced scale, Pillow's ``draft``). Pixels and
decoded memory are checked from the header before decoding. Callers run
:func:`prepared_image` in a worker thread; Pillow loads with the first image
that needs it.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ctxfs.core import BinaryFile, FsError, NotEnabled, TooLarge
from ctxfs.core.kit import require
from ctxfs.tools.results import size

if TYPE_CHECKING:
    from PIL import Image

    Encoder = Callable[[Image.Image], bytes]

__all__ = ["IMAGE_TYPES", "ImageLimits", "PreparedImage", "image_type", "prepared_image"]

IMAGE_TYPES: Final = {
    "image/png": "PNG",
    "image/jpeg": "JPEG",
    "image/gif": "GIF",
    "image/webp": "WEBP",
}
"""The media types an image is sent as, and Pillow's name of each format."""

_SMALLEST_EDGE: Final = 16
"""Below this long edge, an image that still does not fit is refused rather than shrunk."""
_REDUCING_GAP: Final = 3
"""A big image is first reduced by a whole factor to no less than this many times the size
it is sent at, then resampled (Pillow's ``reducing_gap``: as good as resampling it whole)."""
_STRIP_PIXELS: Final = 1 << 20
"""Pixels of one strip of a big image converted and reduced at a time."""


def image_type(head: bytes) -> str | None:
    """The media type of the image a file starting with *head* holds; None for any other file."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


@dataclass(frozen=True, kw_only=True)
class ImageLimits:
    """What an image sent to a model may be."""

    max_edge: int
    """Longest edge in pixels."""
    max_bytes: int
    """Encoded size."""
    max_pixels: int
    """Width times height of the original; more is refused before decoding."""
    max_decoded_bytes: int
    """Memory the decoded image takes (at the scale it decodes at); more is refused
    before decoding."""


@dataclass(frozen=True, kw_only=True)
class PreparedImage:
    """An image as it is sent, and what the original was."""

    data: bytes
    media_type: str
    width: int
    height: int
    original_media_type: str
    original_width: int
    original_height: int
    original_bytes: int
    frames: int
    """Frames of the original (an animation has more than one; its first is sent)."""

    @property
    def sent_bytes(self) -> int:
        """The size of the image as sent."""
        return len(self.data)

    @property
    def unchanged(self) -> bool:
        """Whether the bytes sent are the file's own."""
        return (
            self.media_type == self.original_media_type
            and len(self.data) == self.original_bytes
            and (self.width, self.height) == (self.original_width, self.original_height)
        )


def prepared_image(
    data: bytes, media_type: str, limits: ImageLimits, *, path: str
) -> PreparedImage:
    """The image *data* (of *media_type*, from file *path*) as it fits *limits*.

    Raises:
        TooLarge: The image has more pixels, or would take more memory decoded, than the
            limits (or more pixels than Pillow decodes).
        BinaryFile: The bytes are not a whole image of their type (damaged or cut short).
        NotEnabled: Pillow is not installed (the ``images`` extra).

    """
    require("PIL", install="ctxfs-tools[images]", needed_by="reading an image", error=NotEnabled)
    from PIL import Image, UnidentifiedImageError  # noqa: PLC0415 - loaded by the first image

    name = IMAGE_TYPES[media_type]
    try:
        with Image.open(io.BytesIO(data), formats=[name]) as image:
            return _prepared(image, data, media_type, limits, path=path)
    except FsError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise _too_many_pixels(path, None, None, limits.max_pixels) from None
    except Exception as bad:  # Pillow's decoders raise many kinds; none may leak
        reason = "its header is not valid" if isinstance(bad, UnidentifiedImageError) else str(bad)
        raise BinaryFile(
            f"{path} starts like a {name} image but cannot be decoded: {reason}",
            path=path,
            hint="The image is damaged or cut short; it cannot be shown. "
            "Do not retry: the same bytes fail the same way.",
            details={"media_type": media_type, "reason": reason},
        ) from None


def _prepared(
    image: Image.Image, data: bytes, media_type: str, limits: ImageLimits, *, path: str
) -> PreparedImage:
    width, height = image.size
    if width * height > limits.max_pixels:
        raise _too_many_pixels(path, width, height, limits.max_pixels)
    frames = getattr(image, "n_frames", 1)
    fits = max(width, height) <= limits.max_edge and len(data) <= limits.max_bytes
    lossless = image.format != "JPEG"
    if not lossless and not fits:  # decode at 1/2, 1/4 or 1/8 scale when that is still big enough
        image.draft("RGB", _fit(image.size, limits.max_edge))
    decoded = _decoded_bytes(image, width * height)
    if decoded > limits.max_decoded_bytes:
        raise TooLarge(
            f"{path} is an image of {width}x{height} pixels that takes {size(decoded)} decoded; "
            f"the limit is {size(limits.max_decoded_bytes)}",
            path=path,
            hint=_SMALLER_COPY,
            details={
                "width": width,
                "height": height,
                "decoded_bytes": decoded,
                "max_decoded_bytes": limits.max_decoded_bytes,
            },
        )
    if fits and frames == 1 and _orientation(image) == 1:
        image.load()  # a damaged file is refused here, not by the provider's API
        sent, sent_type, sent_size = data, media_type, (width, height)
    else:
        sent, sent_type, sent_size = _fitted(image, limits, lossless=lossless, path=path)
    return PreparedImage(
        data=sent,
        media_type=sent_type,
        width=sent_size[0],
        height=sent_size[1],
        original_media_type=media_type,
        original_width=width,
        original_height=height,
        original_bytes=len(data),
        frames=frames,
    )


def _decoded_bytes(image: Image.Image, pixels: int) -> int:
    """The memory Pillow takes for *image* (of *pixels* in the file) decoded.

    A pixel of several bands takes 4 bytes. A progressive JPEG also holds every coefficient
    of its *pixels*, 2 bytes a band, whatever the scale it decodes at (libjpeg's buffer).
    """
    from PIL import ImageMode  # noqa: PLC0415

    mode = ImageMode.getmode(image.mode)
    per_pixel = 4 if len(mode.bands) > 1 else int(mode.typestr[-1])
    decoded = image.width * image.height * per_pixel
    if image.format == "JPEG" and image.info.get("progressive"):
        decoded += pixels * len(image.getbands()) * 2
    return decoded


def _orientation(image: Image.Image) -> int:
    """The photo's stored orientation (EXIF; 1: as stored, and where its EXIF is damaged)."""
    try:
        return int(image.getexif().get(_ORIENTATION, 1))
    except Exception:  # (Pillow's EXIF parser raises many kinds; the picture is still shown)
        return 1


_ORIENTATION: Final = 0x0112
"""The EXIF tag of a photo's stored orientation (1: as stored)."""


_SMALLER_COPY: Final = "It cannot be shown. A smaller copy of it (made with another tool) can be."


def _too_many_pixels(path: str, width: int | None, height: int | None, most: int) -> TooLarge:
    measured = f" ({width}x{height})" if width is not None else ""
    return TooLarge(
        f"{path} is an image of too many pixels{measured} to decode; the limit is {most:,}",
        path=path,
        hint=_SMALLER_COPY,
        details={"width": width, "height": height, "max_pixels": most},
    )


def _fitted(
    image: Image.Image, limits: ImageLimits, *, lossless: bool, path: str
) -> tuple[bytes, str, tuple[int, int]]:
    """The first frame of *image*, within the limits: encoded bytes, media type and size."""
    from PIL import Image, ImageOps  # noqa: PLC0415

    picture = _reduced(image, limits.max_edge)
    ImageOps.exif_transpose(picture, in_place=True)  # a photo's stored orientation, applied
    alpha = picture.mode.endswith("A")
    encoders: list[tuple[str, Encoder]] = [("image/png", _png)] if lossless or alpha else []
    encoders += [("image/jpeg", _jpeg(85)), ("image/jpeg", _jpeg(70))]
    edge = min(limits.max_edge, max(picture.size))
    while True:
        size = _fit(picture.size, edge)
        resized = (
            picture
            if size == picture.size
            else picture.resize(size, Image.Resampling.LANCZOS, reducing_gap=3.0)
        )
        for media_type, encode in encoders:
            encoded = encode(resized)
            if len(encoded) <= limits.max_bytes:
                return encoded, media_type, size
        if edge <= _SMALLEST_EDGE:
            raise TooLarge(
                f"{path} does not fit in {limits.max_bytes:,} bytes, even downscaled",
                path=path,
                hint="It cannot be shown.",
                details={"max_bytes": limits.max_bytes},
            )
        edge = max(_SMALLEST_EDGE, edge * 3 // 4)


def _reduced(image: Image.Image, edge: int) -> Image.Image:
    """The first frame of *image* in the mode it is sent in, reduced to fit *edge* roughly.

    The mode is L, LA, RGB or RGBA (16-bit gray scaled to 8 bits). The reduction is by a
    whole factor that keeps the long edge at least :data:`_REDUCING_GAP` times *edge*.
    Strip by strip, so that no copy of the image is made at full size.
    """
    from PIL import Image  # noqa: PLC0415

    gray = image.mode in {"1", "L", "LA", "I", "I;16", "F"}
    alpha = image.has_transparency_data
    mode = ("LA" if gray else "RGBA") if alpha else ("L" if gray else "RGB")
    factor = max(1, max(image.size) // (_REDUCING_GAP * edge))
    if factor == 1 and image.mode == mode:
        return image
    width, height = image.size
    rows = factor * max(1, _STRIP_PIXELS // (width * factor))
    reduced = Image.new(mode, (-(-width // factor), -(-height // factor)))
    for top in range(0, height, rows):
        strip = _converted(image.crop((0, top, width, min(height, top + rows))), mode)
        reduced.paste(strip.reduce(factor) if factor > 1 else strip, (0, top // factor))
    reduced.info = dict(image.info)  # its EXIF orientation, among the rest
    return reduced


def _converted(picture: Image.Image, mode: str) -> Image.Image:
    if picture.mode.startswith("I"):  # 16-bit gray: scaled to 8 bits, not clipped to white
        picture = picture.convert("I").point(lambda value: value / 256)
    return picture.convert(mode)


def _fit(size: tuple[int, int], edge: int) -> tuple[int, int]:
    """*size* scaled down so that its longer side is at most *edge* (never up)."""
    width, height = size
    scale = min(1.0, edge / max(width, height))
    return max(1, round(width * scale)), max(1, round(height * scale))


def _png(picture: Image.Image) -> bytes:
    out = io.BytesIO()
    picture.save(out, "PNG")
    return out.getvalue()


def _jpeg(quality: int) -> Encoder:
    from PIL import Image  # noqa: PLC0415

    def encode(picture: Image.Image) -> bytes:
        if picture.mode in {"RGBA", "LA"}:  # JPEG has no alpha: flatten onto white
            background = Image.new("RGB", picture.size, "white")
            background.paste(picture, mask=picture.getchannel("A"))
            picture = background
        out = io.BytesIO()
        picture.save(out, "JPEG", quality=quality, optimize=True)
        return out.getvalue()

    return encode
