"""Turn the bytes of a page into text: find the encoding, and refuse what is not text at all.

The order of the rules, each tried when the ones before it do not settle the encoding:

1. a file type's signature (PDF, PNG, ZIP...): refused with :class:`HtmlParseError`;
2. a byte-order mark;
3. UTF-16 or UTF-32 without one (most ASCII characters then carry a NUL byte);
4. a high share of NUL and control bytes: binary data, refused;
5. strict UTF-8;
6. mostly valid UTF-8 (the page's non-ASCII characters far outnumber its invalid bytes):
   UTF-8 with each invalid sequence replaced by U+FFFD, and a warning logged;
7. the ``<meta charset>`` the page declares;
8. charset-normalizer's guess (windows-1252 when that scores about as well);
9. windows-1252 with replacement characters.
"""

from __future__ import annotations

import codecs
import logging
import re
from typing import Any, NamedTuple

from hrefine.errors import HtmlParseError

__all__ = ["DecodedPage", "decode_bytes", "decode_page", "refuse_binary_text", "wide_encoding"]

logger = logging.getLogger(__name__)

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_META_CHARSET = re.compile(rb"""<meta[^>]{0,400}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.I)
# charset-normalizer's names for the code pages read as windows-1252, and how much more chaos
# than the best guess windows-1252 may show and still win.
_WESTERN = frozenset({"cp1252", "latin_1", "iso8859_15"})
_WESTERN_TOLERANCE = 0.05
# A larger margin against a DOS (OEM) or Mac code page: they read windows-1252's punctuation
# (curly quotes, dashes, the euro sign: bytes 0x80-0x9F) as letters, which a short text cannot
# tell apart by chaos ("“hello” – 5€" as cp775's "ōhelloö ¢ 5Ć" scored 0.0 against 0.056), and
# they are rare in today's documents. Text that really is in one is not windows-1252 at all:
# charset-normalizer then rejects windows-1252 outright.
_OLD_CODE_PAGES = re.compile(r"cp(?:437|7\d\d|8[56]\d)|mac_\w+")
_OLD_CODE_PAGE_TOLERANCE = 0.15

# File signatures of the binary formats most often passed by mistake (a retrieved attachment,
# a file read without extracting its text). Checked on the first bytes only; none is likely at
# the start of a text (binary formats with such signatures are left to the control share).
_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"%PDF-", "a PDF document"),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document, EPUB or JAR, which are ZIP files)"),
    (b"PK\x05\x06", "an empty ZIP archive"),
    (b"\x1f\x8b", "gzip-compressed data"),
    (b"\xfd7zXZ\x00", "xz-compressed data"),
    (b"(\xb5/\xfd", "zstd-compressed data"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!\x1a\x07", "a RAR archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office document (OLE2)"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x00asm", "a WebAssembly module"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"OggS\x00", "an Ogg media file"),
)
# Signatures with a variable part: RIFF containers and ISO media (MP4, MOV, HEIC, AVIF).
_RIFF_KINDS = {b"WEBP": "a WebP image", b"WAVE": "a WAV audio file", b"AVI ": "an AVI video"}
# Bytes no text holds in any number: NUL and the C0 controls other than tab, line feed, form
# feed, carriage return and the escape, shift-out and shift-in of ISO-2022 encodings.
_CONTROL_BYTES = bytes(b for b in range(0x20) if b not in b"\t\n\x0c\r\x1b\x0e\x0f")
# Binary data is judged on its first bytes; a page shorter than _MIN_SAMPLE is never called
# binary for its control bytes (a short string with a few stray NULs is text with junk in it).
# Compressed or encrypted data holds about 10% of such bytes, text next to none.
_SAMPLE = 16_384
_MIN_SAMPLE = 256
_BINARY_SHARE = 0.05
# UTF-16/32 without a byte-order mark: judged on this many first bytes (a multiple of 4).
_WIDE_SAMPLE = 4096
# Mostly valid UTF-8: at least this many valid non-ASCII characters per invalid sequence (a
# page that declares UTF-8: _DECLARED_RATIO). Legacy multi-byte text read as UTF-8 shows 0.1
# (Big5) to 0.5 (EUC-JP) valid sequences per invalid one, single-byte code pages about 0.
_UTF8_RATIO = 3
_DECLARED_RATIO = 1


class DecodedPage(NamedTuple):
    """A page's text, the encoding it was read in, and the invalid byte sequences replaced."""

    text: str
    encoding: str
    replaced: int


def decode_bytes(data: bytes) -> str:
    """Decode HTML bytes (see :func:`decode_page`); return the text."""
    return decode_page(data).text


def decode_page(data: bytes) -> DecodedPage:
    """Decode the bytes of a page (the rules are in this module's docstring).

    Strict UTF-8 comes before the meta tag because pages often declare latin-1 while serving
    UTF-8, and valid multi-byte UTF-8 is very unlikely to be anything else.

    Raises
    ------
    HtmlParseError
        The bytes are a binary file (PDF, an image, an archive...) or binary data.
    """
    _refuse_signature(data[:16])
    for bom, name in _BOMS:
        if data.startswith(bom):
            return _decode_replacing(data[len(bom) :], name)
    wide = wide_encoding(data[:_WIDE_SAMPLE])
    if wide is not None:
        return _decode_replacing(data, wide)
    sample = data[:_SAMPLE]
    if len(sample) >= _MIN_SAMPLE:
        controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
        _check_control_share(len(sample), controls, "bytes")
    try:
        return DecodedPage(data.decode("utf-8"), "utf-8", 0)
    except UnicodeDecodeError:
        pass
    match = _META_CHARSET.search(data[:8192])
    declared = _lookup(match.group(1).decode("ascii", "ignore")) if match else None
    mostly = _mostly_utf8(data, declared == "utf-8")
    if mostly is not None:
        return mostly
    if declared is not None:
        try:
            return DecodedPage(data.decode(declared), declared, 0)
        except (UnicodeDecodeError, LookupError):
            pass
    try:
        encoding = _guess_legacy(data[:200_000])
    except ImportError:
        encoding = None
    return _decode_replacing(data, encoding or "cp1252")


def refuse_binary_text(text: str) -> None:
    """Raise :class:`HtmlParseError` if a str looks like a binary file read as text (a file
    signature at its start, or a high share of NUL and control characters)."""
    _refuse_signature(text[:16].encode("latin-1", "replace"))
    sample = text[:_SAMPLE]
    if len(sample) >= _MIN_SAMPLE:
        # Counted in the UTF-8 bytes (no control byte occurs inside a multi-byte sequence):
        # a quarter of the time of a regular expression over the str.
        data = sample.encode("utf-8", "surrogatepass")
        _check_control_share(len(sample), len(data) - len(data.translate(None, _CONTROL_BYTES)))


def _lookup(name: str) -> str | None:
    try:
        codec = codecs.lookup(name).name
    except LookupError:
        return None
    # Browsers read latin-1 and ascii labels as windows-1252 (the WHATWG encoding standard).
    return "cp1252" if codec in {"latin-1", "iso8859-1", "ascii"} else codec


def _decode_replacing(data: bytes, encoding: str) -> DecodedPage:
    try:
        return DecodedPage(data.decode(encoding), encoding, 0)
    except UnicodeDecodeError:
        text = data.decode(encoding, errors="replace")
    replaced = _replacements(data, text, encoding)
    if replaced:
        logger.warning(
            "decoded %d bytes as %s with %d invalid byte sequences replaced by U+FFFD",
            len(data),
            encoding,
            replaced,
        )
    return DecodedPage(text, encoding, replaced)


def _replacements(data: bytes, text: str, encoding: str) -> int:
    """How many U+FFFD in ``text`` stand for invalid bytes of ``data`` (not written there)."""
    try:
        written = data.count("\ufffd".encode(encoding))
    except (UnicodeEncodeError, LookupError):  # a code page without the character
        written = 0
    return max(0, text.count("\ufffd") - written)


def _refuse_signature(head: bytes) -> None:
    kind = next((k for sig, k in _SIGNATURES if head.startswith(sig)), None)
    if kind is None and head[:4] == b"RIFF":
        kind = _RIFF_KINDS.get(head[8:12])
    if kind is None and head[:1] == b"\x00" and head[4:8] == b"ftyp":  # a box's size, its type
        kind = "an MP4 or other ISO media file"
    if kind is not None:
        msg = (
            f"the input looks like {kind}, not HTML or text (it starts with {head[:8]!r}); "
            "extract its text first and pass that"
        )
        raise HtmlParseError(msg)


def _check_control_share(size: int, controls: int, unit: str = "characters") -> None:
    """Raise :class:`HtmlParseError` if ``controls`` of the first ``size`` bytes or characters
    of the input are NUL or control ones: too many for text."""
    if controls >= _BINARY_SHARE * size:
        msg = (
            f"the input looks like binary data, not HTML or text: {controls:,} of its first "
            f"{size:,} {unit} are NUL or control {unit}; pass the page's text (extract the "
            "text of a document, decompress compressed data, decode bytes in their encoding)"
        )
        raise HtmlParseError(msg)


def wide_encoding(sample: bytes) -> str | None:
    """UTF-32 or UTF-16 (LE or BE) for text without a byte-order mark, from where the NUL
    bytes of its (mostly ASCII) markup fall; None for anything else."""
    n = len(sample) // 4
    if n < 4:
        return None
    nul = [sample[i : 4 * n : 4].count(0) / n for i in range(4)]  # share of NULs per position
    if nul[3] > 0.99 and nul[2] > 0.9 and nul[0] < 0.1:
        return "utf-32-le"
    if nul[0] > 0.99 and nul[1] > 0.9 and nul[3] < 0.1:
        return "utf-32-be"
    even, odd = (nul[0] + nul[2]) / 2, (nul[1] + nul[3]) / 2
    if odd > 0.3 and even < 0.02:
        return "utf-16-le"
    if even > 0.3 and odd < 0.02:
        return "utf-16-be"
    return None


def _mostly_utf8(data: bytes, declared: bool) -> DecodedPage | None:
    """``data`` decoded as UTF-8 with its invalid sequences replaced, if its valid non-ASCII
    characters outnumber them enough (see _UTF8_RATIO); else None."""
    text = data.decode("utf-8", errors="replace")
    bad = _replacements(data, text, "utf-8")
    valid = len(text) - len(text.encode("ascii", "ignore")) - bad  # non-ASCII characters
    if valid < (_DECLARED_RATIO if declared else _UTF8_RATIO) * bad:
        return None
    logger.warning(
        "decoded %d bytes as UTF-8 with %d invalid byte sequences replaced by U+FFFD "
        "(%d valid non-ASCII characters)",
        len(data),
        bad,
        valid,
    )
    return DecodedPage(text, "utf-8", bad)


def _guess_legacy(sample: bytes) -> str | None:
    """charset-normalizer's guess for undeclared non-UTF-8 bytes, or None for windows-1252.

    A guess that changes how many ``<`` and ``>`` the bytes hold is wrong: no legacy page hides
    markup inside a multi-byte character, but multi-byte code pages read Latin text that way
    (``résumé</p>`` as three CJK characters and ``/p>``). Windows-1252, the web's usual code page
    and the WHATWG default, wins whenever its chaos is within a tolerance of the best guess's:
    Baltic and Central European code pages score as well or slightly better on Western text,
    and DOS and Mac code pages better still on a short one (a wider tolerance against them).
    """
    from charset_normalizer import from_bytes

    angles = sample.count(b"<") + sample.count(b">")

    def keeps_markup(match: Any) -> bool:
        text = str(match)
        return bool(match.encoding) and text.count("<") + text.count(">") == angles

    candidates = [m for m in from_bytes(sample) if keeps_markup(m)]  # best first
    if not candidates:
        return None
    western = next((m for m in candidates if m.encoding in _WESTERN), None)
    if western is None:  # on short samples the search stops before it tries windows-1252
        western = next(iter(from_bytes(sample, cp_isolation=["cp1252"])), None)
    best = candidates[0]
    old_page = _OLD_CODE_PAGES.fullmatch(str(best.encoding))
    margin = _OLD_CODE_PAGE_TOLERANCE if old_page else _WESTERN_TOLERANCE
    if western is not None and western.chaos <= best.chaos + margin:
        return None
    return str(best.encoding)
