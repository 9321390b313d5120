"""Images and PDFs made on the spot for the media tests: Pillow images, hand-written PDFs."""

from __future__ import annotations

import io
import os
import struct
import zlib
from typing import Any, Final

from PIL import Image
from pypdf import PdfReader, PdfWriter


def image(
    size: tuple[int, int],
    format: str = "PNG",
    *,
    mode: str = "RGB",
    noise: bool = False,
    **saved: Any,
) -> bytes:
    """An image of *size* in *format*: a gradient (compresses well) or noise (does not).

    *saved*: more of Pillow's options to save it with (``progressive=True``, ``exif=...``).
    """
    if noise:
        picture = Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3))
    else:
        picture = Image.linear_gradient("L").resize(size).convert(mode)
    out = io.BytesIO()
    picture.save(out, format, **({"compress_level": 1} if format == "PNG" else {}), **saved)
    return out.getvalue()


def turned(orientation: int) -> bytes:
    """EXIF data saying a photo is stored turned (*orientation*: 6, a quarter turn right)."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def animation(frames: int, format: str = "GIF", size: tuple[int, int] = (40, 30)) -> bytes:
    """An animated GIF or WebP of *frames* frames."""
    pictures = [Image.new("RGB", size, (40 * n % 256, 0, 0)) for n in range(frames)]
    out = io.BytesIO()
    pictures[0].save(out, format, save_all=True, append_images=pictures[1:], duration=100, loop=0)
    return out.getvalue()


def dimensions(data: bytes) -> tuple[str | None, tuple[int, int]]:
    """The format and size of image *data*, as Pillow decodes it."""
    with Image.open(io.BytesIO(data)) as decoded:
        decoded.load()
        return decoded.format, decoded.size


def deep_png(size: tuple[int, int], *, color: bool) -> bytes:
    """A 16-bit PNG (RGB or gray) of *size* in one tone, written by hand: Pillow writes no
    16-bit colour, and this writes hundreds of megapixels in a second."""
    width, height = size
    row = b"\x00" + b"\x75\x30" * width * (3 if color else 1)  # filter 0, then the pixels
    compressor = zlib.compressobj(1)
    at_once = max(1, (1 << 22) // len(row))
    idat = [
        compressor.compress(row * min(at_once, height - top)) for top in range(0, height, at_once)
    ]
    header = struct.pack(">IIBBBBB", width, height, 16, 2 if color else 0, 0, 0, 0)
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", b"".join(idat) + compressor.flush()),
            _chunk(b"IEND", b""),
        ]
    )


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _escaped(line: str) -> str:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def pdf(*pages: str) -> bytes:
    """A PDF of one page per text (lines in Helvetica), written by hand with a correct xref."""
    kids = " ".join(f"{4 + 2 * n} 0 R" for n in range(len(pages)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for n, text in enumerate(pages):
        operations = ["BT", "/F1 12 Tf", "72 720 Td", "14 TL"]
        operations += [f"({_escaped(line)}) Tj T*" for line in text.split("\n")]
        objects.append(_PAGE % (5 + 2 * n))
        objects.append(_stream("\n".join([*operations, "ET"]).encode("latin-1")))
    return _document(objects)


def slow_second_page_pdf(keys: int) -> bytes:
    """A PDF of two pages ("Hello one", "Hello two"): the second's content stream carries
    *keys* more entries in its dictionary, which pypdf parses before its text."""
    padding = b" ".join(b"/J%d %d" % (n, n) for n in range(keys))
    contents = [b"BT /F1 12 Tf 72 720 Td (Hello %s) Tj ET" % word for word in (b"one", b"two")]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R 6 0 R] /Count 2 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        _PAGE % 5,
        _stream(contents[0]),
        _PAGE % 7,
        b"<< %s /Length %d >>\nstream\n%s\nendstream" % (padding, len(contents[1]), contents[1]),
    ]
    return _document(objects)


def shared_pdf(pages: int, content: bytes) -> bytes:
    """A PDF of *pages* pages that all draw the one content stream *content* (font F1 set)."""
    kids = b" ".join(b"%d 0 R" % (5 + n) for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        _stream(content),
    ]
    return _document(objects + [_PAGE % 4] * pages)


def deflated_pdf(pages: int, size: int) -> bytes:
    """A PDF of *pages* pages, each drawing its own content: *size* bytes deflated (no text)."""
    kids = b" ".join(b"%d 0 R" % (4 + 2 * n) for n in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for number in range(pages):
        squeezed = zlib.compressobj(9)
        data = squeezed.compress(b"%% page %d\n" % number + b" " * size) + squeezed.flush()
        objects.append(_PAGE % (5 + 2 * number))
        objects.append(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(data), data)
        )
    return _document(objects)


_PAGE: Final = (
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
    b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>"
)


def _stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


def _document(objects: list[bytes]) -> bytes:
    """The PDF of *objects* (numbered from 1; the first is the catalog), with a correct xref."""
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def encrypted(document: bytes, *, user_password: str, owner_password: str = "owner") -> bytes:
    """*document* encrypted by pypdf (an empty user password locks only permissions)."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(document)))
    writer.encrypt(user_password=user_password, owner_password=owner_password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
