"""Files written whole or not at all, and text output that never fails on an odd character.

A file is written to a temporary file beside it, flushed to disk, then moved over the old one
with ``os.replace`` (atomic on POSIX and Windows within one folder): a write that fails half way
(a full disk, a character the encoding cannot take, an interrupt) leaves the old file as it was
and no temporary file behind. Text is made :func:`~hrefine._encodable.encodable` first, so
UTF-8 never refuses it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, TextIO

from hrefine._encodable import encodable

__all__ = ["discard", "echo", "new_temp", "replace_all", "write_bytes", "write_text"]

_TRIES = 100


def new_temp(final: Path) -> Path:
    """Create an empty temporary file in ``final``'s folder that will become ``final``.

    The name starts with a dot and ends in ``.tmp``. The file gets ``final``'s permissions when
    ``final`` exists, else those of any new file (``0o666`` less the umask): not the private
    ``0o600`` of :func:`tempfile.mkstemp`, since it is moved into place as the real file.

    Raises
    ------
    OSError
        The folder does not exist or cannot be written to.
    """
    tmp, fd = _create(final)
    os.close(fd)
    return tmp


def _create(final: Path) -> tuple[Path, int]:
    """:func:`new_temp`'s file, and a descriptor open on it for writing."""
    try:
        mode: int | None = stat.S_IMODE(final.stat().st_mode)
    except OSError:
        mode = None
    for _ in range(_TRIES):
        tmp = final.with_name(f".{final.name}-{secrets.token_hex(6)}.tmp")
        try:
            # O_EXCL: never an existing file, nor a link planted under the name.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        if mode is not None:
            try:
                os.chmod(tmp, mode)
            except OSError:
                os.close(fd)
                tmp.unlink(missing_ok=True)
                raise
        return tmp, fd
    msg = f"could not create a temporary file beside {final} in {_TRIES} tries"
    raise FileExistsError(msg)


@contextlib.contextmanager
def _writing(final: Path) -> Iterator[IO[bytes]]:
    """A binary file that becomes ``final`` when the block ends without an error."""
    tmp, fd = _create(final)
    try:
        # Written through the descriptor made with O_EXCL, never reopened by name.
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (the old file stays whole if this fails).

    Raises
    ------
    OSError
        The folder does not exist or cannot be written to; ``path`` is unchanged.
    """
    with _writing(Path(path)) as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8, atomically; lone surrogates become U+FFFD.

    The text is encoded before the temporary file is made, so an encoding problem could not
    cost a half-written file even if there were one.

    Raises
    ------
    OSError
        The folder does not exist or cannot be written to; ``path`` is unchanged.
    """
    write_bytes(path, encodable(text).encode("utf-8"))


def replace_all(moves: Mapping[Path, Path]) -> None:
    """Move each written temporary file onto its final name, in the mapping's order, as one
    change: when a move fails (an I/O error, an interrupt), the files already moved are put
    back as they were and no temporary file is left, so a folder of files that belong
    together (a save and its manifest) is never left half old, half new.

    The old files are kept through hard links while the moves run (a copy where the file
    system has none). A process killed outright between two moves, which no exception
    reports, can still leave a mix; a save's checksums then refuse it on load.
    """
    kept: dict[Path, Path] = {}  # final -> the old file's content, until every move is done
    moved: list[Path] = []
    try:
        for tmp, final in moves.items():
            if final.exists():
                kept[final] = _keep(final)
            os.replace(tmp, final)
            moved.append(final)
    except BaseException:
        for final in reversed(moved):
            with contextlib.suppress(OSError):
                if final in kept:
                    os.replace(kept.pop(final), final)
                else:
                    final.unlink(missing_ok=True)
        discard([*moves, *kept.values()])
        raise
    discard(kept.values())


def _keep(final: Path) -> Path:
    """A second name for ``final``'s current content, beside it (a hard link, else a copy)."""
    backup = final.with_name(f".{final.name}-{secrets.token_hex(6)}.old")
    try:
        os.link(final, backup)
    except OSError:  # no hard links here (FAT, some network file systems)
        shutil.copy2(final, backup)
    return backup


def discard(temps: Iterable[Path]) -> None:
    """Remove temporary files (those already gone are skipped)."""
    for tmp in temps:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)


def echo(text: str, stream: TextIO | None = None) -> None:
    """Write ``text`` to ``stream`` (default: ``sys.stdout``), whatever its encoding.

    Lone surrogates become U+FFFD; a character the stream's encoding has no byte for (a
    terminal set to ASCII or a legacy code page) becomes that encoding's replacement (``?``).
    """
    out = sys.stdout if stream is None else stream
    text = encodable(text)
    try:
        out.write(text)
    except UnicodeEncodeError:
        encoding = getattr(out, "encoding", None) or "utf-8"
        out.write(text.encode(encoding, "replace").decode(encoding, "replace"))
