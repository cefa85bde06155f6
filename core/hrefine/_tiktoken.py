"""Budgets counted in OpenAI's tokenizers (tiktoken), from data already on disk.

tiktoken downloads an encoding's merge table on first use and keeps it in a cache folder
(``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``). hrefine
never downloads: it looks for the table in those folders and in the copy that
``llama-index-core`` ships, and says what to set when it is in none of them. tiktoken itself is
optional (``hrefine[tiktoken]``) and imported only when a tiktoken name or encoding is used.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hrefine._count_checks import check_many, not_text
from hrefine._optional import available, require
from hrefine.errors import MissingDependencyError, ModelNotFoundError

__all__ = ["TiktokenCounter", "is_tiktoken_encoding", "tiktoken_counter", "tiktoken_encoding_name"]

_BLOB = "https://openaipublic.blob.core.windows.net"
_GPT2 = (f"{_BLOB}/gpt-2/encodings/main/vocab.bpe", f"{_BLOB}/gpt-2/encodings/main/encoder.json")
#: Each encoding's files, as tiktoken names them (its cache keys are their URLs' SHA-1).
ENCODING_FILES: dict[str, tuple[str, ...]] = {
    "gpt2": _GPT2,
    "r50k_base": (f"{_BLOB}/encodings/r50k_base.tiktoken",),
    "p50k_base": (f"{_BLOB}/encodings/p50k_base.tiktoken",),
    "p50k_edit": (f"{_BLOB}/encodings/p50k_base.tiktoken",),
    "cl100k_base": (f"{_BLOB}/encodings/cl100k_base.tiktoken",),
    "o200k_base": (f"{_BLOB}/encodings/o200k_base.tiktoken",),
    "o200k_harmony": (f"{_BLOB}/encodings/o200k_base.tiktoken",),
}
# OpenAI model names, recognised without tiktoken so that its absence is named as such.
_OPENAI_PREFIXES = ("gpt-3.5", "gpt-35", "gpt-4", "gpt-5", "o1", "o3", "o4", "text-embedding-")
# tiktoken reads its cache folder from the environment at each load: pointing it at another
# folder is one change of os.environ, made by one thread at a time.
_ENV_LOCK = threading.Lock()


def tiktoken_encoding_name(name: str) -> str | None:
    """The tiktoken encoding ``name`` stands for (an encoding's name, or an OpenAI model's
    such as ``"gpt-4o"``), or None when it names neither.

    Raises
    ------
    MissingDependencyError
        ``name`` is an OpenAI encoding or model name and tiktoken is not installed.
    """
    if not available("tiktoken"):
        plain = name.strip().lower()
        if plain in ENCODING_FILES or ("/" not in plain and plain.startswith(_OPENAI_PREFIXES)):
            raise MissingDependencyError("tiktoken", "tiktoken")
        return None
    import tiktoken

    if name in tiktoken.list_encoding_names():
        return name
    try:
        return str(tiktoken.encoding_name_for_model(name))
    except KeyError:
        return None


def is_tiktoken_encoding(obj: Any) -> bool:
    """Whether ``obj`` is a ``tiktoken.Encoding`` (duck-typed on the methods counting uses)."""
    return callable(getattr(obj, "encode_ordinary", None)) and hasattr(obj, "n_vocab")


class TiktokenCounter:
    """Counts tokens with a ``tiktoken.Encoding``.

    Text is encoded as ordinary text: a page that happens to hold ``<|endoftext|>`` counts it
    as the characters it is, where ``Encoding.encode`` would raise.

    Parameters
    ----------
    encoding:
        The encoding (``tiktoken.get_encoding(...)`` or any object with ``encode_ordinary``).
    """

    def __init__(self, encoding: Any) -> None:
        self.encoding = encoding
        self.name = str(getattr(encoding, "name", None) or type(encoding).__name__)

    def count(self, text: str) -> int:
        """Number of tokens in ``text``; anything but a str is an ``InputTypeError``."""
        if not isinstance(text, str):
            raise not_text(text, self.name)
        return len(self.encoding.encode_ordinary(text)) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, in order."""
        check_many(texts, self.name)
        # encode_ordinary_batch starts a thread pool per call: dearer than the short texts
        # counted here.
        return [self.count(t) for t in texts]


def _cache_folders() -> list[Path]:
    """Folders that may hold tiktoken's data, in the order they are tried."""
    folders: list[Path] = []
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        value = os.environ.get(var)
        if value:
            folders.append(Path(value).expanduser())
    folders.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        folders.append(Path(spec.origin).parent / "_static" / "tiktoken_cache")
    return folders


def _tiktoken_folder() -> str | None:
    """The folder tiktoken itself reads: None when caching is off (it then always fetches)."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if var in os.environ:
            return os.environ[var] or None
    return str(Path(tempfile.gettempdir()) / "data-gym-cache")


def _data_folder(encoding: str) -> Path | None:
    """The first folder holding every file of ``encoding``, or None."""
    keys = [hashlib.sha1(url.encode()).hexdigest() for url in ENCODING_FILES[encoding]]
    for folder in _cache_folders():
        if all((folder / key).is_file() for key in keys):
            return folder
    return None


def tiktoken_counter(name: str) -> TiktokenCounter:
    """A counter for the tiktoken encoding or OpenAI model ``name``, loaded from disk only.

    Raises
    ------
    ModelNotFoundError
        The encoding's data is in none of the folders tried (the message lists them and what
        to set), or hrefine does not know the encoding's files.
    MissingDependencyError
        tiktoken is not installed.
    """
    encoding = tiktoken_encoding_name(name)
    tiktoken = require("tiktoken", "tiktoken")
    if encoding is None or encoding not in ENCODING_FILES:
        msg = (
            f"hrefine does not know where tiktoken keeps the data of {name!r}; build the "
            "encoding yourself and pass the tiktoken.Encoding as the tokenizer"
        )
        raise ModelNotFoundError(msg)
    folder = _data_folder(encoding)
    if folder is None:
        tried = ", ".join(str(f) for f in _cache_folders())
        msg = (
            f"tiktoken's data for {encoding!r} (tokenizer {name!r}) is not on disk (looked in "
            f"{tried}); hrefine never downloads: run tiktoken.get_encoding({encoding!r}) once "
            "where the network is allowed, or set TIKTOKEN_CACHE_DIR to a folder holding it"
        )
        raise ModelNotFoundError(msg)
    if str(folder) == _tiktoken_folder():
        return TiktokenCounter(tiktoken.get_encoding(encoding))
    with _ENV_LOCK:
        before = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
        try:
            return TiktokenCounter(tiktoken.get_encoding(encoding))
        finally:
            if before is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = before
