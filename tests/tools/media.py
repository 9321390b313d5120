"""Images and PDFs made on the spot for the media tests: Pillow images, hand-written PDFs."""

from __future__ import annotations

import io
import os

from PIL import Image
from pypdf import PdfReader, PdfWriter


def image(
    size: tuple[int, int], format: str = "PNG", *, mode: str = "RGB", noise: bool = False
) -> bytes:
    """An image of *size* in *format*: a gradient (compresses well) or noise (does not)."""
    if noise:
        picture = Image.frombytes("RGB", size, os.urandom(size[0] * size[1] * 3))
    else:
        picture = Image.linear_gradient("L").resize(size).convert(mode)
    out = io.BytesIO()
    picture.save(out, format, **({"compress_level": 1} if format == "PNG" else {}))
    return out.getvalue()


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
        stream = "\n".join([*operations, "ET"]).encode("latin-1")
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * n)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
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
