"""What a prune call is given, checked: the budget, and the pages, read as one page or several
and cleaned (or taken from the cleaned-page cache), with every page that cannot be read skipped
and reported."""

from __future__ import annotations

import logging
import numbers
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from hrefine.errors import (
    BudgetTooSmallError,
    EmptyInputError,
    HrefineError,
    HtmlParseError,
    InputTypeError,
)
from hrefine.html._cleancache import CleanedCache
from hrefine.html._load import check_input_size
from hrefine.html.clean import clean_document, serialize
from hrefine.html.formats import as_html, resolve_format
from hrefine.html.options import MIN_BUDGET, HtmlPrunerOptions
from hrefine.html.reasons import EMPTY, FAILED, REPEAT
from hrefine.repeats import first_copies

__all__ = ["PAGE_TYPES", "CleanedPages", "check_budget", "clean_pages", "pages_of"]

logger = logging.getLogger("hrefine.html.prune")  # the logger it always wrote to

#: What prune() takes as one page (anything else is a collection of pages).
PAGE_TYPES = (str, bytes, bytearray, memoryview)


def pages_of(html: Any) -> list[Any]:
    """The pages of a prune call: one page, or each page of an iterable (each is checked by
    the cleaner)."""
    if isinstance(html, PAGE_TYPES):
        return [html]
    if isinstance(html, (Mapping, Set)):  # a dict would be pruned as its keys, a set unordered
        msg = f"expected HTML pages in a list, got a {type(html).__name__}; pass them in a list"
        raise InputTypeError(msg)
    if isinstance(html, Iterable):
        docs = list(html)
        if not docs:
            raise EmptyInputError("no HTML documents were given")
        return docs
    msg = (
        "expected HTML as str, bytes or bytearray, or an iterable of them, got "
        f"{type(html).__name__}"
    )
    raise InputTypeError(msg)


def check_budget(max_tokens: Any) -> int:
    """``max_tokens`` as an int of at least :data:`MIN_BUDGET`."""
    # numpy integers are integers too; bools, floats (inf, nan) and strings are not.
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, numbers.Integral):
        msg = f"max_tokens must be an int, got {type(max_tokens).__name__} {max_tokens!r}"
        raise InputTypeError(msg)
    budget = int(max_tokens)
    if budget < MIN_BUDGET:
        msg = f"a budget of {budget} tokens is below the minimum of {MIN_BUDGET}; raise it"
        raise BudgetTooSmallError(msg, budget=budget, smallest=MIN_BUDGET)
    return budget


@dataclass
class CleanedPages:
    """The pages of a prune call, cleaned: those to prune, and why each other one is not."""

    roots: list[Any]
    """The cleaned root of each page to prune."""
    doc_ids: list[int]
    """The input index of each root."""
    cleaned: list[str]
    """Each input's cleaned HTML ("" when it was empty or could not be read)."""
    formats: list[str | None]
    """Each input's format (see ``input_format``; None when it could not be read)."""
    failed: dict[int, str]
    """Input index -> why it could not be read."""
    repeats: dict[int, int]
    """Input index -> the earlier input it repeats (the same HTML once cleaned): its blocks
    would compete with their own copies and could be kept twice, so it is pruned once."""

    def skip_reason(self, d: int) -> str:
        """Why input ``d``, which has no root, has no blocks (a block report's reason)."""
        return FAILED if d in self.failed else REPEAT if d in self.repeats else EMPTY

    def skipped_stats(self) -> dict[str, Any]:
        """``failed_documents`` and ``repeated_documents`` for a result's stats (each only
        when there is one)."""
        stats: dict[str, Any] = {}
        if self.failed:
            stats["failed_documents"] = [
                {"document": d, "error": e} for d, e in self.failed.items()
            ]
        if self.repeats:
            stats["repeated_documents"] = [
                {"document": d, "same_as": i} for d, i in self.repeats.items()
            ]
        return stats


def clean_pages(
    docs: Sequence[str | bytes], options: HtmlPrunerOptions, cache: CleanedCache
) -> CleanedPages:
    """The inputs cleaned (see :class:`CleanedPages`).

    One bad input never sinks the others: an input that is empty is skipped, and one that
    fails (binary, too large, of a wrong type, or anything the parser chokes on) is skipped
    and reported, unless it is the only input, which raises. An input whose cleaned HTML is
    an earlier input's is skipped and reported as its repeat.
    """
    roots: list[Any] = []
    doc_ids: list[int] = []
    cleaned: list[str] = []
    formats: list[str | None] = []
    empty: list[str] = []
    failed: dict[int, str] = {}
    for d, doc in enumerate(docs):
        try:
            root, html, fmt = _clean_one(doc, options, cache)
        except EmptyInputError as exc:
            if len(docs) == 1:
                raise
            empty.append(f"document {d}: {exc}")
            cleaned.append("")
            formats.append(resolve_format(doc, options.input_format))  # it was read: it is empty
            continue
        except HrefineError as exc:
            if len(docs) == 1:
                raise
            failed[d] = f"{type(exc).__name__}: {exc}"
            cleaned.append("")
            formats.append(None)
            continue
        except Exception as exc:  # a parser's own error: named, never raw
            msg = f"document {d} could not be read as a page ({type(exc).__name__}: {exc})"
            if len(docs) == 1:
                raise HtmlParseError(msg) from exc
            failed[d] = f"HtmlParseError: {msg}"
            cleaned.append("")
            formats.append(None)
            continue
        cleaned.append(html)
        formats.append(fmt)
        roots.append(root)
        doc_ids.append(d)
    if not roots:
        reasons = [f"document {d}: {why}" for d, why in failed.items()] + empty
        msg = f"none of the {len(docs)} documents has text to prune: " + "; ".join(reasons)
        raise (HtmlParseError if failed else EmptyInputError)(msg)
    for err in empty:
        logger.info("skipping an empty input: %s", err)
    for d, why in failed.items():
        logger.warning("skipping input %d, which could not be read: %s", d, why)
    repeats = first_copies([html or None for html in cleaned])  # "": empty or not read
    if repeats:
        keep = [k for k, d in enumerate(doc_ids) if d not in repeats]
        roots, doc_ids = [roots[k] for k in keep], [doc_ids[k] for k in keep]
    for d, i in repeats.items():
        logger.info("input %d is the same page as input %d once cleaned: pruned once", d, i)
    return CleanedPages(roots, doc_ids, cleaned, formats, failed, repeats)


def _clean_one(
    doc: str | bytes, options: HtmlPrunerOptions, cache: CleanedCache
) -> tuple[Any, str, str]:
    """One input's cleaned root, its HTML and its format (from the cache when seen)."""
    boilerplate = options.boilerplate
    fmt = resolve_format(doc, options.input_format)
    # Anything but text or bytes goes to the cleaner, which says what it expected.
    key = CleanedCache.key(doc, boilerplate, fmt) if isinstance(doc, PAGE_TYPES) else None
    hit = None if key is None else cache.get(key)
    if hit is not None:
        root, html = hit
        return root, html, fmt
    # Checked before Markdown or text is converted; the HTML made from it is not checked
    # again.
    check_input_size(doc, options.max_input_bytes)
    root = clean_document(as_html(doc, fmt), boilerplate=boilerplate, max_input_bytes=None)
    html = serialize(root)
    if key is not None:
        cache.put(key, doc, root, html)
    return root, html, fmt
