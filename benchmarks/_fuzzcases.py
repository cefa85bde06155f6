"""Hostile inputs for the HtmlRAG pruner and the properties every call must keep (issue #41).

Shared by the property-based tests (``tests/unit/html/test_fuzz.py``, through hypothesis) and
the long seeded run of the benchmark suite (``benchmarks/fuzz.py``). A case is a page (text or
bytes: random HTML-ish text, random bytes, or a real page of the evaluation data mutated and
re-encoded), a query and a budget; :func:`check_prune` and :func:`check_clean` run it and
return what went wrong, as :class:`Finding` objects (an empty list when every property held):

- no exception other than an :class:`~hrefine.errors.HrefineError` subclass, and the one the
  arguments call for (a query that is not a str: ``InputTypeError``; a blank one:
  ``EmptyInputError``; a budget below ``MIN_BUDGET``: ``BudgetTooSmallError``);
- the output never exceeds the budget, counted again with the pruner's own counter;
- the visible text is accounted for: every block of the result is kept or has a drop reason,
  the text of every block kept whole is in the output, and every character of the cleaned
  page's text belongs to some block.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hrefine.errors import BudgetTooSmallError, EmptyInputError, HrefineError, InputTypeError
from hrefine.html import MIN_BUDGET, HtmlPruner, PruneResult, clean_html

__all__ = [
    "ATTR_NAMES",
    "NOT_QUERIES",
    "PIECES",
    "QUERY_WORDS",
    "Finding",
    "check_adapter_pages",
    "check_clean",
    "check_prune",
    "expected_error",
    "load_pages",
    "mutate",
    "random_budget",
    "random_bytes",
    "random_html",
    "random_nesting",
    "random_query",
    "reencode",
    "visible_text",
]

#: Attribute names a page may carry: ordinary ones and those of templates and frameworks
#: (``{x}``, ``@click``, ``:bind``), with quotes and equals signs where names should not have them.
ATTR_NAMES = (
    "class", "id", "alt", "title", "href", "src", "colspan", "style", "onclick", "{a",
    "{x}", "{x}alt", "@click", ":x", "(c)", "[b]", "#r", "=x", 'a"b', "a'b", "x{y}z", "{",
    '"', "=", "data-{{v}}", "xmlns:foo", "a\x01b", "\u00e9t\u00e9",
)  # fmt: skip

#: Pieces random pages are made of: tags (void, raw text, table, foreign, broken), entities
#: and numeric references (control characters, surrogates' code points, non-characters, out of
#: range), comments, CDATA, processing instructions, ``</html>`` in the middle, odd characters.
PIECES = (
    "<p>", "</p>", "<div>", "</div>", "<span>", "</span>", "<h1>", "</h1>", "<h2>", "</h2>",
    "<li>", "<ul>", "</ul>", "<table>", "</table>", "<tr>", "<td>", "</td>", "<th>", "</th>",
    "<caption>", "<br>", "<br/>", "<hr>", "<img alt='", "'>", "<a href=x>", "</a>", "<pre>",
    "</pre>", "<title>", "</title>", "<head>", "</head>", "<body>", "</body>", "<html>",
    "</html>", "<script>", "</script>", "<style>", "</style>", "<textarea>", "<svg>",
    "</svg>", "<math>", "<noscript>", "<template>", "<select><option>", "<Th_colspan=\"2\">",
    "<x{y}>", "<p/", "/>", "<", ">", "</", "<!--", "-->", "<![CDATA[", "]]>",
    "<?xml version='1.0'?>", "<!DOCTYPE html>", "<meta charset=utf-8>",
    "<meta charset=shift_jis>", "<meta charset=utf-16>", "<meta charset=x-unknown>",
    '<meta http-equiv=content-type content="text/html; charset=cp500">',
    "<?xml version='1.0' encoding='ebcdic-cp-us'?>", "&amp;", "&nbsp;", "&nbsp", "&lt;", "&",
    "&#", "&#x", "&#0;",
    "&#1;", "&#x1;", "&#8;", "&#x0B;", "&#12;", "&#27;", "&#127;", "&#x80;", "&#x85;",
    "&#xD800;", "&#xDFFF;", "&#55296;", "&#xFFFE;", "&#xFFFF;", "&#x10FFFF;", "&#x110000;",
    "&#99999999999;", "&#x1F600;", "\x00", "\x01", "\x0c", "\x1b", "\x7f", "\x85", "\ud800",
    "\udfff", "\ufffe", "\uffff", "\u2028", "\u200b", "\ufeff", "\u00e9", "\u65e5", "\U0001f600",
    " ", "  ", "\n", "\t", "=", '"', "'", "{", "}", "river", "Volga", "1972", "gold",
    "medal", "the longest river of Europe", "Norway won 11 gold medals",
)  # fmt: skip

#: Words random queries are made of (some match the pieces above and the real pages).
QUERY_WORDS = (
    "what", "who", "when", "how", "many", "river", "longest", "Europe", "gold", "medal",
    "Norway", "1972", "the", "of", "film", "directed", "population", "\u00e9t\u00e9", "\u65e5",
    "\ud800", "\udfff", "\x00", "\ufeff", "?", "&#1;", "<p>", "{x}",
)  # fmt: skip

#: Queries that are not text: InputTypeError, from the core and the adapters alike.
NOT_QUERIES: tuple[Any, ...] = (None, 5, b"river", ["river"])
# Blank queries: EmptyInputError is the only acceptable answer to them.
_BLANK_QUERIES = ("", " ", "\n\t", "\u3000", "\u2028", "\x1c\x1d", "\x85")

# Tags random nesting is made of.
_NESTING = ("div", "span", "table", "tr", "td", "ul", "li", "p", "b", "a href=x", "svg", "math",
            "blockquote", "section", "font", "select", "template", "dl", "dd")  # fmt: skip
_DATA_DIRS = ("wtq/pages", "leval/nq/docs", "articles/pages")
_WS = re.compile(r"\s+")
_WORD = re.compile(r"[^\W_]+")


# -- inputs ------------------------------------------------------------------------------
def random_attribute(rng: random.Random) -> str:
    """`` name``, `` name=value`` or `` name="value"`` with a name from :data:`ATTR_NAMES`."""
    name = rng.choice(ATTR_NAMES)
    form = rng.randrange(4)
    if form == 0:
        return f" {name}"
    value = rng.choice(("1", "x y", "a&#1;b", '"', "{v}", "\ud800", "&amp;", "data:,x"))
    quote = ("", '"', "'")[form - 1]
    return f" {name}={quote}{value}{quote}"


def random_html(rng: random.Random, max_pieces: int = 80) -> str:
    """Random HTML-ish text: pieces of :data:`PIECES`, random attributes inside opened tags,
    and random characters (any code point below U+3000, surrogates included)."""
    out: list[str] = []
    for _ in range(rng.randint(1, max_pieces)):
        r = rng.random()
        if r < 0.7:
            out.append(rng.choice(PIECES))
        elif r < 0.85:
            out.append(f"<{rng.choice(('p', 'div', 'img', 'td', 'a', 'x-y', 'Th_x'))}")
            out.extend(random_attribute(rng) for _ in range(rng.randint(0, 3)))
            out.append(rng.choice((">", "/>", "")))
        else:
            out.append("".join(chr(rng.randrange(0x3000)) for _ in range(rng.randint(1, 8))))
    return "".join(out)


def random_nesting(rng: random.Random, max_depth: int = 1000) -> str:
    """Text at the bottom of up to ``max_depth`` nested elements (of one tag, or of a random
    cycle of tags), closed or left open."""
    cycle = [rng.choice(_NESTING) for _ in range(rng.randint(1, 3))]
    depth = rng.randint(1, max_depth)
    opened = [cycle[i % len(cycle)] for i in range(depth)]
    head = "".join(f"<{t}>" for t in opened)
    tail = "".join(f"</{t.split()[0]}>" for t in reversed(opened)) if rng.random() < 0.5 else ""
    return head + rng.choice(QUERY_WORDS[:16]) + " " + random_html(rng, 10) + tail


def random_bytes(rng: random.Random, max_len: int = 3000) -> bytes:
    """Random bytes, sometimes behind a signature (PDF, PNG, gzip, a BOM) or an HTML start."""
    data = rng.randbytes(rng.randint(0, max_len))
    head = rng.choice(
        (b"", b"", b"%PDF-1.4\n", b"\x89PNG\r\n\x1a\n", b"\x1f\x8b\x08", b"\xef\xbb\xbf",
         b"\xff\xfe", b"\xfe\xff", b"<html><body><p>", b"GIF89a")
    )  # fmt: skip
    return head + data


def reencode(rng: random.Random, text: str) -> bytes:
    """``text`` as bytes in a random encoding: UTF-8 (valid or with bad bytes), UTF-16 with
    or without BOM, UTF-32, Latin-1, cp1252, Shift-JIS (unencodable characters replaced or
    escaped as references; lone surrogates passed through as they come)."""
    how = rng.choice(("utf-8", "utf-8-bad", "utf-16", "utf-16-le", "utf-16-be", "utf-32",
                      "latin-1", "cp1252", "shift_jis"))  # fmt: skip
    if how == "utf-8":
        return text.encode("utf-8", "surrogatepass")
    if how == "utf-8-bad":
        data = bytearray(text.encode("utf-8", "surrogatepass"))
        for _ in range(rng.randint(1, 5)):
            i = rng.randrange(len(data) + 1)
            data[i:i] = bytes([rng.choice((0x80, 0xC3, 0xE2, 0xF0, 0xFF, 0xC0, 0xED))])
        return bytes(data)
    errors = rng.choice(("replace", "xmlcharrefreplace"))
    return text.encode(how, errors if how.startswith(("latin", "cp", "shift")) else "replace")


def mutate(rng: random.Random, page: bytes, max_edits: int = 20) -> bytes:
    """A real page edited: bytes replaced, deleted, duplicated, pieces of :data:`PIECES`
    inserted, a tag cut in the middle; sometimes decoded and re-encoded (:func:`reencode`)."""
    data = bytearray(page)
    for _ in range(rng.randint(1, max_edits)):
        if not data:
            break
        i = rng.randrange(len(data))
        op = rng.random()
        if op < 0.25:
            data[i] = rng.randrange(256)
        elif op < 0.5:
            data[i:i] = rng.choice(PIECES).encode("utf-8", "surrogatepass")
        elif op < 0.65:
            del data[i : i + rng.randint(1, 64)]
        elif op < 0.8:
            n = rng.randint(1, 256)
            data[i:i] = data[i : i + n] * rng.randint(1, 4)
        else:  # cut at a tag: from a '<' to somewhere inside the next tag or text
            j = data.find(b"<", i)
            if j >= 0:
                del data[j + rng.randint(1, 4) : j + rng.randint(5, 40)]
    out = bytes(data)
    if rng.random() < 0.3:
        out = reencode(rng, out.decode("utf-8", "replace"))
    return out


def random_query(rng: random.Random) -> object:
    """A query of random words (lone surrogates and control characters among them), or a
    blank one (one in ten), or not a str at all (one in a hundred)."""
    r = rng.random()
    if r < 0.01:
        return rng.choice(NOT_QUERIES)
    if r < 0.1:
        return rng.choice(_BLANK_QUERIES)
    return " ".join(rng.choice(QUERY_WORDS) for _ in range(rng.randint(1, 8)))


def random_budget(rng: random.Random) -> int:
    """A budget: below :data:`MIN_BUDGET` one time in twenty, else small to a few thousand."""
    if rng.random() < 0.05:
        return rng.randint(-5, MIN_BUDGET - 1)
    return rng.choice((MIN_BUDGET, 5, 8, 16, 32, 64, 128, 256, 512, 1024, 4096))


def load_pages(data: Path, per_set: int = 10, max_bytes: int = 400_000) -> list[bytes]:
    """Up to ``per_set`` real pages from each of WTQ, L-Eval NQ and the article set, as bytes
    (the first ones by name, so a run is reproducible); pages over ``max_bytes`` left out."""
    pages: list[bytes] = []
    for sub in _DATA_DIRS:
        files = sorted((data / sub).glob("*.html"))
        chosen = [f.read_bytes() for f in files if f.stat().st_size <= max_bytes][:per_set]
        pages.extend(chosen)
    return pages


# -- properties --------------------------------------------------------------------------
@dataclass(frozen=True)
class Finding:
    """One broken property.

    Attributes
    ----------
    kind:
        ``"crash"`` (an exception that is not an HrefineError, or not the one the arguments
        call for), ``"over_budget"``, ``"unaccounted"`` (words in no block, a block neither
        kept nor given a reason, or a kept block's text missing from the output) or
        ``"sunk_batch"`` (a batch with a good page raised).
    where:
        What was called: ``"prune"``, ``"clean_html"``, ``"langchain"``, ``"llamaindex"``.
    detail:
        The exception type (for crashes) or what was found.
    """

    kind: str
    where: str
    detail: str


def expected_error(query: object, budget: int) -> type[HrefineError] | None:
    """The error the pruner must raise for these arguments whatever the page (the query is
    checked before the budget), or None."""
    if not isinstance(query, str):
        return InputTypeError
    if not query.strip():
        return EmptyInputError
    if budget < MIN_BUDGET:
        return BudgetTooSmallError
    return None


def visible_text(html: str) -> str:
    """The text of an HTML fragment or page as a reader sees it (``img`` alt text included,
    comments left out); "" for an empty one."""
    import lxml.etree
    import lxml.html

    if not html.strip():
        return ""
    root = lxml.html.document_fromstring(html)
    parts: list[str] = []
    for event, el in lxml.etree.iterwalk(root, events=("start", "end")):
        if event == "start":
            if isinstance(el.tag, str):
                parts.append(el.text or "")
                if el.tag == "img":
                    parts.append(el.get("alt") or "")
        elif el is not root:
            parts.append(el.tail or "")
    return "".join(parts)


def _squeeze(text: str) -> str:
    # A BOM opening the output is dropped by the parser that reads it back: not a loss.
    return _WS.sub("", text).replace("\ufeff", "")


def _word_chars(text: str) -> str:
    """The characters of ``text``'s words (text without a word, such as ``"->"`` or an emoji,
    makes no block)."""
    return "".join(_WORD.findall(text))


def _in_order(needle: str, hay: str) -> bool:
    """Whether the characters of ``needle`` occur in ``hay`` in the same order."""
    rest = iter(hay)
    return all(c in rest for c in needle)


def _accounting(result: PruneResult, where: str) -> list[Finding]:
    """Blocks kept or given a reason; the text of each block kept whole in the output (in
    order: an element's own text is split by its children); the characters of the cleaned
    pages' words covered by the blocks, unless a table was narrowed to its best columns
    (reported in ``stats["narrowed_tables"]``: the other columns' text is then in no block)."""
    found: list[Finding] = []
    for b in result.blocks:
        if not b.kept and not b.reason:
            found.append(Finding("unaccounted", where, f"block {b.block_id} dropped, no reason"))
    out = _squeeze(visible_text(result.html))
    for b in result.kept_blocks:
        text = _squeeze(b.text)
        if b.reason is None and not (_in_order(text, out) if b.own_text else text in out):
            found.append(
                Finding("unaccounted", where, f"kept block {b.block_id} not in the output")
            )
    if result.stats.get("narrowed_tables"):
        return found
    # A page that repeats an earlier one is pruned once, as that one: its words are that one's.
    same_as = {r["document"]: r["same_as"] for r in result.stats.get("repeated_documents", [])}
    for d, cleaned in enumerate(result.cleaned):
        if d in same_as:
            if cleaned != result.cleaned[same_as[d]]:
                found.append(Finding("unaccounted", where, f"doc {d} is no repeat of its page"))
            continue
        page = Counter(_word_chars(visible_text(cleaned)))
        blocks = Counter(_word_chars(" ".join(b.text for b in result.blocks if b.doc == d)))
        missing = page - blocks
        if missing:
            chars = "".join(sorted(missing))[:40]
            found.append(Finding("unaccounted", where, f"doc {d}: words in no block {chars!r}"))
    return found


def _crash(where: str, exc: BaseException, expected: type[HrefineError] | None) -> Finding:
    if expected is not None and isinstance(exc, HrefineError):
        return Finding("crash", where, f"{type(exc).__name__} (expected {expected.__name__})")
    return Finding("crash", where, type(exc).__name__)


def check_prune(
    pruner: HtmlPruner,
    html: str | bytes | Sequence[str | bytes],
    query: Any,
    budget: int,
    *,
    batch: bool = False,
    raised: Counter[str] | None = None,
) -> list[Finding]:
    """Prune one case and check every property (see the module docstring).

    ``batch``: ``html`` holds a good page, so only the arguments' own error or a budget too
    small for any block may stop the call (``"sunk_batch"`` otherwise). ``raised`` counts the
    HrefineErrors raised on purpose, by type.
    """
    expected = expected_error(query, budget)
    try:
        result = pruner.prune(html, query, budget)
    except HrefineError as exc:
        if raised is not None:
            raised[type(exc).__name__] += 1
        if expected is not None and not isinstance(exc, expected):
            return [_crash("prune", exc, expected)]
        if batch and expected is None and not isinstance(exc, BudgetTooSmallError):
            return [Finding("sunk_batch", "prune", type(exc).__name__)]
        return []
    except Exception as exc:
        return [_crash("prune", exc, expected)]
    if expected is not None:
        return [Finding("crash", "prune", f"no error (expected {expected.__name__})")]
    found: list[Finding] = []
    tokens = pruner.counter.count(result.html)
    if tokens > budget or result.tokens > budget:
        found.append(Finding("over_budget", "prune", f"{tokens} tokens > budget {budget}"))
    return found + _accounting(result, "prune")


def check_clean(html: str | bytes) -> list[Finding]:
    """Clean one page: nothing but HrefineError subclasses may come out."""
    try:
        clean_html(html)
    except HrefineError:
        return []
    except Exception as exc:
        return [_crash("clean_html", exc, None)]
    return []


def check_adapter_pages(
    call: Callable[[list[str], Any], list[tuple[str, dict[str, Any]]]],
    where: str,
    pages: list[str],
    query: Any,
    budget: int,
    count: Callable[[str], int],
    shared: bool,
    *,
    none_is_missing: bool = False,
) -> list[Finding]:
    """Run an adapter (``call`` gives each returned page's text and metadata) and check that
    it raises only HrefineError subclasses and keeps each output (or all of them together,
    ``shared``, joined with newlines in input order as the core joins them) within the
    budget. ``none_is_missing``: a None query is the framework's "no query given" (LlamaIndex's
    ``query_str=None``), an ``EmptyInputError``."""
    expected = expected_error(query, budget)
    if none_is_missing and query is None:
        expected = EmptyInputError
    try:
        out = call(pages, query)
    except HrefineError as exc:
        if expected is None or isinstance(exc, expected):
            return []
        return [_crash(where, exc, expected)]
    except Exception as exc:
        return [_crash(where, exc, expected)]
    texts = [text for text, _ in out]
    total = count("\n".join(texts)) if shared else max(map(count, texts), default=0)
    if total > budget:
        return [Finding("over_budget", where, f"{total} tokens > budget {budget}")]
    return []
