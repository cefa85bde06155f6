"""Hostile text inputs, budgets and queries for the RAPTOR, GARLIC and LongRefiner fuzz run
(issue #55), and the helpers their checks share.

A document is empty text, white space, one huge token, random code points (lone surrogates
among them), random bytes, generated Markdown, a real document of the shared data cut and
mutated (:func:`benchmarks._fuzzcases.mutate`), or not text at all. Budgets are 0, 1,
negative, huge (past 2**63), or not whole numbers; queries are blank, huge or not strings.
Each generator returns its value and the name of its kind, so a run counts cases by kind.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hrefine.errors import HrefineError

from benchmarks._fuzzcases import QUERY_WORDS, Finding, mutate, random_query

__all__ = [
    "BAD_TYPES",
    "call",
    "crash",
    "load_texts",
    "random_budget",
    "random_docs",
    "random_method_query",
    "random_text",
    "repro",
    "uncovered",
]

#: Values that are no text, no number and no list of texts.
BAD_TYPES: tuple[Any, ...] = (None, 5, 2.5, b"bytes", ["river", 3], {"a": "b"}, object())
_WHITE = (" ", "\n", "\t", "\u3000", "\u2028", "\x0c", "\x85", "\u200b", "\ufeff", "\r\n")
_TEXT_DIRS = ("leval/cuad/docs", "leval/qasper/docs", "leval/quality/docs", "leval/nq/docs")
_REPRO_CHARS = 400


def load_texts(data: Path, per_set: int = 6, max_bytes: int = 300_000) -> list[bytes]:
    """Up to ``per_set`` real documents of each L-Eval set (the first ones by name)."""
    texts: list[bytes] = []
    for sub in _TEXT_DIRS:
        files = sorted(p for p in (data / sub).glob("*") if p.is_file())
        texts.extend([f.read_bytes() for f in files if f.stat().st_size <= max_bytes][:per_set])
    return texts


def _markdown(rng: random.Random) -> str:
    out: list[str] = []
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.3:
            out.append("#" * rng.randint(1, 7) + rng.choice(("", " ")) + rng.choice(QUERY_WORDS))
        elif r < 0.4:
            out.append(f"{rng.randint(0, 99)}.{rng.randint(0, 9)} " + rng.choice(QUERY_WORDS))
        elif r < 0.5:
            out.append("<h2>" + rng.choice(QUERY_WORDS) + "</h2><p>" + rng.choice(QUERY_WORDS))
        else:
            words = [rng.choice(QUERY_WORDS) for _ in range(rng.randint(1, 60))]
            out.append(" ".join(words) + rng.choice((".", "", "?", "\u3002")))
    return rng.choice(("\n", "\n\n", "\r\n", " ")).join(out)


def random_text(rng: random.Random, texts: Sequence[bytes]) -> tuple[str, Any]:
    """One document and its kind (see the module docstring)."""
    k = rng.random()
    if k < 0.05:
        return "empty", ""
    if k < 0.1:
        return "whitespace", "".join(rng.choice(_WHITE) for _ in range(rng.randint(1, 40)))
    if k < 0.15:
        unit = rng.choice(("x", "\u65e5", "9", "\U0001f600", "a\u0301", "&#1;"))
        return "huge-token", unit * rng.randint(1_000, 20_000)
    if k < 0.25:
        top = rng.choice((0x80, 0x3000, 0x110000))
        chars = (chr(rng.randrange(top)) for _ in range(rng.randint(1, 3000)))
        return "unicode", "".join(chars)
    if k < 0.3:
        return "bytes", rng.randbytes(rng.randint(0, 3000))
    if k < 0.45:
        return "markdown", _markdown(rng)
    if k < 0.48:
        return "bad-type", rng.choice(BAD_TYPES)
    page = rng.choice(texts)
    start = rng.randrange(len(page))
    window = mutate(rng, page[start : start + rng.randint(100, 12_000)], max_edits=8)
    return "real-cut", window.decode("utf-8", rng.choice(("replace", "surrogateescape")))


def random_docs(rng: random.Random, texts: Sequence[bytes], most: int = 3) -> tuple[str, Any]:
    """One document (one case in three), a list of 1 to ``most`` of them, or not a list."""
    r = rng.random()
    if r < 0.02:
        return "bad-type", rng.choice((None, 5, {"a": "b"}, {"x"}))
    if r < 0.35:
        return random_text(rng, texts)
    picked = [random_text(rng, texts) for _ in range(rng.randint(1, most))]
    return "+".join(sorted({k for k, _ in picked})), [d for _, d in picked]


def random_budget(rng: random.Random, typical: Sequence[int | None]) -> Any:
    """A budget: one of ``typical`` mostly, else 0, 1, negative, huge, or not a whole number."""
    r = rng.random()
    if r < 0.7:
        return rng.choice(typical)
    return rng.choice(
        (0, 1, 2, -1, -(2**40), 10**6, 10**9, 2**63, 2**64, 10**30, 1.5, float("inf"),
         float("nan"), "100", None, True, [100])
    )  # fmt: skip


def random_method_query(rng: random.Random) -> Any:
    """A query as :func:`benchmarks._fuzzcases.random_query` makes, or a huge one."""
    r = rng.random()
    if r < 0.03:
        return " ".join(rng.choice(QUERY_WORDS) for _ in range(rng.randint(2_000, 20_000)))
    if r < 0.05:
        return "river" * rng.randint(1_000, 50_000)
    if r < 0.06:
        return rng.choice(BAD_TYPES)
    return random_query(rng)


# -- checks ------------------------------------------------------------------------------
def crash(where: str, exc: BaseException) -> Finding:
    """A crash finding (the exception's type)."""
    return Finding("crash", where, type(exc).__name__)


def call(where: str, fn: Callable[[], Any], raised: Any, found: list[Finding]) -> tuple[bool, Any]:
    """``(True, fn())``, or ``(False, None)`` when it raised: an HrefineError is counted in
    ``raised``, anything else is appended to ``found`` as a crash."""
    try:
        return True, fn()
    except HrefineError as exc:
        raised[type(exc).__name__] += 1
    except RecursionError as exc:  # a subclass of RuntimeError: still a crash
        found.append(crash(where, exc))
    except Exception as exc:
        found.append(crash(where, exc))
    return False, None


def uncovered(text: str, spans: Sequence[tuple[int, int]]) -> int:
    """How many non-white-space characters of ``text`` no span covers."""
    held = bytearray(len(text))
    for a, b in spans:
        held[max(a, 0) : max(b, 0)] = b"\x01" * len(range(len(text))[max(a, 0) : max(b, 0)])
    return sum(1 for ch, h in zip(text, held, strict=True) if not h and not ch.isspace())


def repro(**parts: Any) -> str:
    """A short reproducer: each part's repr cut to a few hundred characters."""
    out = []
    for key, value in parts.items():
        text = repr(value)
        if len(text) > _REPRO_CHARS:
            text = text[:_REPRO_CHARS] + f"... ({len(text)} chars)"
        out.append(f"{key}={text}")
    return ", ".join(out)
