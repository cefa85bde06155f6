"""JSON Lines read as written: a Ray Data datasource that converts no text.

Ray's own ``read_json(lines=True)`` reads through pandas' ``read_json``, which turns a column
of texts that look like numbers or dates into numbers or dates (``"007"`` becomes 7, ``"1e3"``
1000.0): the ids of the output then differ from the input's, and a rerun no longer recognises
its rows. Here each line is parsed with :mod:`json` and each block is the DataFrame of its
objects, with no conversion: a text stays the text it is, a number the number it is (typing
the stage's columns is :func:`~hrefine.distributed.rows.prepare`'s work).

Imported by :func:`~hrefine.distributed.io.read_corpus` only, once Ray is there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pandas as pd
from ray.data.datasource import FileBasedDatasource, Partitioning, PartitionStyle

from hrefine._json_lines import json_object

__all__ = ["JSON_EXTENSIONS", "JsonLinesDatasource", "json_rows", "read_jsonl"]

#: The file names read in a folder (those of Ray's ``read_json``).
JSON_EXTENSIONS = [
    f"{name}{packed}" for packed in ("", ".gz", ".br", ".zst", ".lz4") for name in ("json", "jsonl")
]
#: JSON text per block (a block of pandas objects takes a few times as much memory).
BLOCK_BYTES = 32 << 20
_READ_BYTES = 1 << 20
#: A surrogate, as a ``\\u`` escape or encoded in the bytes (which :mod:`json` lets through):
#: a lone one parses into a text Arrow cannot hold.
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


def _lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a byte stream given in pieces, without their line ends."""
    tail = b""
    for chunk in chunks:
        *whole, tail = (tail + chunk).split(b"\n")
        yield from whole
    if tail:
        yield tail


def _whole(value: Any) -> Any:
    """``value`` with each lone surrogate of its texts replaced by U+FFFD (pairs, which
    :mod:`json` joins into one character, stay as they are)."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {_whole(k): _whole(v) for k, v in value.items()}
    return value


def json_rows(
    chunks: Iterable[bytes], path: str, *, block_bytes: int = BLOCK_BYTES
) -> Iterator[list[dict[str, Any]]]:
    """The objects of a JSON Lines byte stream, in lists of about ``block_bytes`` of text.

    Blank lines are skipped; a line that is not a JSON object raises ConfigError naming the
    file and the line (as pandas' reader stopped the run on it).
    """
    rows: list[dict[str, Any]] = []
    size = 0
    for number, line in enumerate(_lines(chunks), 1):
        if not line.strip():
            continue
        row = json_object(line, f"{path}, line {number}")
        rows.append(_whole(row) if _SURROGATE.search(line) else row)
        size += len(line)
        if size >= block_bytes:
            yield rows
            rows, size = [], 0
    if rows:
        yield rows


def _frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The block of ``rows``: the DataFrame pandas' ``read_json`` builds, unconverted."""
    frame = pd.DataFrame(list(rows))
    if isinstance(frame.columns, pd.RangeIndex):  # rows of ``{}``: Ray wants named columns
        frame.columns = frame.columns.astype(str)
    return frame


class JsonLinesDatasource(FileBasedDatasource):
    """JSON Lines files (compressed ones too), each object a row, its values as parsed."""

    def _read_stream(self, f: Any, path: str) -> Iterator[pd.DataFrame]:
        def chunks() -> Iterator[bytes]:
            while chunk := f.read(_READ_BYTES):
                yield bytes(chunk)

        for rows in json_rows(chunks(), path):
            yield _frame(rows)


def read_jsonl(paths: Sequence[str], *, num_cpus: float) -> Any:
    """A Ray Dataset over JSON Lines files or folders, with ``path`` (each row's file), read
    as :func:`ray.data.read_json` reads them (hive partitions, the same file names) but for
    the converted texts."""
    import ray.data as rd

    source = JsonLinesDatasource(
        list(paths),
        partitioning=Partitioning(PartitionStyle.HIVE),
        include_paths=True,
        file_extensions=JSON_EXTENSIONS,
    )
    return rd.read_datasource(source, num_cpus=num_cpus)
