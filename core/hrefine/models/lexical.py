"""BM25 scoring (the Lucene variant, as bm25s scores it) with a case- and punctuation-insensitive,
unicode-aware tokenizer."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

import numpy as np

from hrefine._numba_target import hold_to_avx2
from hrefine._optional import require
from hrefine._unicode import CJK
from hrefine.errors import ConfigError

__all__ = ["BM25Scorer", "fuse", "lexical_tokens", "plural_stem", "query_window", "with_match"]

_SPACED = re.compile(r"\S+")
# What an apostrophe joins to a word ("Handmaid's", "don't", "we'll"): not a word of its own, and
# a question's "'s" would otherwise match every "(s)" and possessive of a page.
_CLITIC = re.compile(r"['\u2019](?:s|t|d|ll|re|ve|m)\b", re.IGNORECASE)
# A question's own words: they say what is asked, not what about (bm25s' English list is
# Lucene's, made for keyword queries, and keeps them).
_QUESTION_WORDS = frozenset(
    ["who", "whom", "whose", "what", "which", "when", "where", "why", "how", "do", "does", "did"]
)
_WORD = re.compile(CJK + r"|[^\W_]+", re.UNICODE)


def lexical_tokens(text: str) -> list[str]:
    """Lower-cased, accent-folded word tokens; CJK characters are tokens of their own.

    Numbers keep their digits and lose thousands separators ("1,000" and "1000" match).
    """
    folded = text.casefold()
    if not folded.isascii():  # ASCII has no accents to fold: most pages' text skips this
        folded = unicodedata.normalize("NFKD", folded)
        folded = "".join(ch for ch in folded if not unicodedata.combining(ch))
    folded = re.sub(r"(?<=\d)[,\u00a0\u202f](?=\d{3}\b)", "", folded)
    return _WORD.findall(folded)


def query_window(text: str, terms: frozenset[str], size: int, *, stem: bool = False) -> str:
    """The part of ``text`` a reader of at most ``size`` words should read for a query.

    ``terms`` are the query's words as :meth:`BM25Scorer.terms` gives them (``stem`` as that
    scorer's). A text of at most ``size`` words (runs of non-space characters) is returned
    whole. A longer one gives its first ``size`` words, unless a window of ``size`` words,
    starting at a multiple of a quarter window, holds more distinct query words than the start
    does: then the one that holds the most (the earliest among equals). An embedder cut at its
    length limit reads a paragraph's start only; this reads the part that names the
    question's subject, where it falls.
    """
    if size < 1:
        msg = f"size must be >= 1, got {size}"
        raise ConfigError(msg)
    spans = [m.span() for m in _SPACED.finditer(text)]
    if len(spans) <= size:
        return text
    found: list[frozenset[str]] = []
    if terms:
        for a, b in spans:
            words = lexical_tokens(text[a:b])
            if stem:
                words = [plural_stem(w) for w in words]
            found.append(terms.intersection(words))
    best = best_found = 0
    if any(found):
        step = max(1, size // 4)
        last = len(spans) - size
        for start in sorted({*range(0, last, step), last}):
            n = len(frozenset().union(*found[start : start + size]))
            if n > best_found:  # strictly more: the earliest window wins ties
                best, best_found = start, n
    begin = 0 if best == 0 else spans[best][0]
    return text[begin : spans[best + size - 1][1]]


@functools.lru_cache(maxsize=1 << 16)
def plural_stem(word: str) -> str:
    """``word`` with an English plural ending removed (Harman's "S" stemmer, 1991).

    Only the first rule that applies is used: "-ies" -> "-y" (not after "e" or "a"), "-es" ->
    "-e" (not after "a", "e" or "o"), "-s" -> "" (not after "u" or "s"). Words of three
    characters or fewer and words holding digits are kept: "bus", "1990s" and "ps" stay.
    It is deliberately light: "carboxyalkyls" meets "carboxyalkyl" and "floods" "flood",
    while "news" or "physics" lose at most a final "s" on both sides of a match alike.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and not word.endswith(("eies", "aies")):
        return word[:-3] + "y"
    if word.endswith("es") and not word.endswith(("aes", "ees", "oes")):
        return word[:-1]
    if word.endswith("s") and not word.endswith(("us", "ss")):
        return word[:-1]
    return word


def fuse(dense: np.ndarray, match: np.ndarray, weight: float) -> np.ndarray:
    """Dense similarities with a BM25 match added: ``dense + weight * match / best match``.

    The one fusion of every method (LongRefiner's leaves, RAPTOR's nodes, GARLIC's leaves):
    the match is scaled by the call's best so that it adds at most ``weight`` whatever the
    texts' lengths, and a call where no text matches adds nothing. Names, numbers and rare
    words of a question, which an embedding blurs, then still count. The result is in
    ``[-1, 1 + weight]``; :func:`hrefine.results.unit_scores` with ``scale="cosine"`` and
    ``extra=weight`` maps it into [0, 1].
    """
    out = np.asarray(dense, dtype=np.float64)
    lex = np.asarray(match, dtype=np.float64)
    top = float(lex.max()) if lex.size else 0.0
    if weight <= 0 or top <= 0:
        return out.copy()
    return out + float(weight) * lex / top


def with_match(query: str, texts: Sequence[str], dense: np.ndarray, weight: float) -> np.ndarray:
    """``dense`` with the BM25 match of ``query`` in ``texts`` fused in (:func:`fuse`); a copy
    of ``dense`` when ``weight`` is 0 or there are no texts (no scoring done)."""
    if weight <= 0 or not texts:
        return np.asarray(dense, dtype=np.float64).copy()
    return fuse(dense, BM25Scorer().score(query, texts), weight)


class BM25Scorer:
    """Scores texts against a query with Okapi BM25 over the texts themselves.

    Parameters
    ----------
    k1, b:
        The BM25 parameters (``k1 >= 0``, ``0 <= b <= 1``; ValueError otherwise).
    stopwords:
        ``"en"`` (default) drops English function words (bm25s' list), so "who was X?" ranks
        by "who" and X, not by "was"; ``None`` keeps every token.
    stem:
        Match singular and plural forms (:func:`plural_stem` on the query's and the texts'
        words): "which airports" finds "airport". Off by default: on long chunks it lost more
        answers than it found (L-Eval NQ, CUAD and Qasper chunk retrieval); the HTML pruner
        turns it on for its short blocks, where it found more.
    questions:
        The queries are questions: their question words (who, what, when, which, how, did...)
        are not matched, nor is what an apostrophe joins to a word (the "'s" of "Handmaid's",
        which would match every "(s)" of an infobox). Off by default: on chunk retrieval
        (L-Eval NQ) it lost answers; the HTML pruner turns it on, where it found more.
    """

    name = "bm25"

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: str | None = "en",
        stem: bool = False,
        questions: bool = False,
    ) -> None:
        if k1 < 0 or not 0 <= b <= 1:
            msg = f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}"
            raise ConfigError(msg)
        self.k1 = k1
        self.b = b
        self.stopwords = stopwords
        self.stem = stem
        self.questions = questions

    def _stop(self) -> frozenset[str]:
        if self.stopwords not in (None, "en"):
            msg = f"unknown stopword list {self.stopwords!r}; use 'en' or None"
            raise ConfigError(msg)
        return _stop_set(self.stopwords, self.questions)

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """BM25 score of each text for ``query`` (0 where no query term occurs).

        The texts are the whole collection (document frequencies and the mean length come from
        them). Scores are bm25s' default (Lucene) BM25: a query word that occurs twice counts
        twice, and a text with no words counts as one word long.
        """
        if not texts:
            return np.zeros(0, dtype=np.float32)
        stop = self._stop()
        q = self._words(query, stop)
        if not q:
            return np.zeros(len(texts), dtype=np.float32)
        # Only the query's words are counted in each text, so no index of the whole vocabulary
        # is built: a pruner scores each page's blocks once per question.
        key = (self.stopwords, self.stem, self.questions)
        wanted = sorted(set(q))
        tf = np.zeros((len(wanted), len(texts)), dtype=np.float64)
        lengths = np.empty(len(texts), dtype=np.float64)
        row = {word: j for j, word in enumerate(wanted)}
        for k, text in enumerate(texts):
            counts, n = _term_counts(text, key)
            lengths[k] = max(n, 1)
            # The shorter side is walked: a long query (a pasted passage) meets short blocks.
            if len(counts) < len(row):
                for word, c in counts.items():
                    j = row.get(word)
                    if j is not None:
                        tf[j, k] = c
            else:
                for word, j in row.items():
                    tf[j, k] = counts.get(word, 0)
        df = (tf > 0).sum(axis=1)
        present = df > 0
        if not present.any():
            return np.zeros(len(texts), dtype=np.float32)
        n_docs = len(texts)
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        norm = self.k1 * ((1.0 - self.b) + self.b * lengths / lengths.mean())
        # A text without the word scores 0 for it (0/0 when k1 is 0).
        part = np.divide(tf, tf + norm[None, :], out=np.zeros_like(tf), where=tf > 0)
        per_word = idf[:, None] * part
        asked = Counter(q)
        times = np.asarray([asked[w] for w in wanted], dtype=np.float64)
        scores = (times[present, None] * per_word[present]).sum(axis=0)
        return np.asarray(scores, dtype=np.float32)

    def terms(self, query: str) -> frozenset[str]:
        """The distinct words of ``query`` this scorer matches (stopwords out, stemmed if set)."""
        return frozenset(self._words(query, self._stop()))

    def _words(self, text: str, stop: frozenset[str]) -> list[str]:
        return _scored_words(text, stop, stem=self.stem, questions=self.questions)


def _scored_words(text: str, stop: frozenset[str], *, stem: bool, questions: bool) -> list[str]:
    if questions:  # here, not in lexical_tokens: the evaluation's token metrics count clitics
        text = _CLITIC.sub("", text)
    words = [w for w in lexical_tokens(text) if w not in stop]
    return [plural_stem(w) for w in words] if stem else words


@functools.lru_cache(maxsize=2)
def _stopwords(name: str | None) -> frozenset[str]:
    """The stopword list ``name`` (``"en"``: bm25s' English list), or none for None."""
    if name is None:
        return frozenset()
    hold_to_avx2()  # bm25s imports numba: a later UMAP in this process is then held too
    stopwords = require("bm25s.stopwords", "models")
    return frozenset(stopwords.STOPWORDS_EN)


@functools.lru_cache(maxsize=4)
def _stop_set(name: str | None, questions: bool) -> frozenset[str]:
    """The words a scorer does not match: the list ``name``, and question words if asked."""
    stop = _stopwords(name)
    return stop | _QUESTION_WORDS if questions else stop


# A page's blocks are scored again for every question and budget: their word counts are kept
# (keyed by the text and the scorer's settings), so a repeated call only counts the query.
# Long texts (whole chunks, pages, tables) are counted each time: they would hold the memory.
# Bounded so: at most about 30 MB (most blocks are far shorter, a few MB).
_CACHED_CHARS = 1024
_CACHED_TEXTS = 4096


def _term_counts(text: str, key: tuple[str | None, bool, bool]) -> tuple[dict[str, int], int]:
    if len(text) > _CACHED_CHARS:
        return _count_terms(text, key)
    return _count_terms_cached(text, key)


def _count_terms(text: str, key: tuple[str | None, bool, bool]) -> tuple[dict[str, int], int]:
    stopwords, stem, questions = key
    words = _scored_words(text, _stop_set(stopwords, questions), stem=stem, questions=questions)
    return Counter(words), len(words)


_count_terms_cached = functools.lru_cache(maxsize=_CACHED_TEXTS)(_count_terms)
