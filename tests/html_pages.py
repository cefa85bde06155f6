"""Small HTML pages and helpers shared by several test folders (adapters, HTML, browser)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lxml.html
import numpy as np
from hrefine.html import BlockReport, PruneResult
from hrefine.html._load import LIBXML_MAX_DEPTH, parse_document
from hrefine.html._text import element_text
from hrefine.testing import keyword_tokens

PAGES: dict[str, str] = {
    "olympics": """<html><head><title>2014 Winter Olympics medal table</title>
<style>body{color:red}</style></head><body>
<nav><a href="/">Home</a> <a href="/sports">Sports</a></nav>
<h1>2014 Winter Olympics medal table</h1>
<p>The 2014 Winter Olympics were held in Sochi, Russia, from 7 to 23 February 2014.</p>
<table class="wikitable">
<tr><th>Rank</th><th>Nation</th><th>Gold</th><th>Silver</th><th>Bronze</th></tr>
<tr><td>1</td><td>Russia</td><td>13</td><td>11</td><td>9</td></tr>
<tr><td>2</td><td>Norway</td><td>11</td><td>5</td><td>10</td></tr>
<tr><td>3</td><td>Canada</td><td>10</td><td>10</td><td>5</td></tr>
</table>
<h2>Venues</h2>
<p>Events took place in the Coastal Cluster by the Black Sea and in the Mountain Cluster at
Krasnaya Polyana, where skiing, biathlon and sliding events were held.</p>
<footer>Text is available under the Creative Commons licence.</footer>
</body></html>""",
    "radio": """<html><body>
<h1>Radio stations in Yankton, South Dakota</h1>
<p>Yankton is served by several radio stations owned by local broadcasters.</p>
<table class="wikitable">
<tr><th>Call sign</th><th>Frequency</th><th>Format</th><th>Nickname</th></tr>
<tr><td>KKYA</td><td>93.1 FM</td><td>Country</td><td>KK93</td></tr>
<tr><td>KDAM</td><td>94.3 FM</td><td>Classic rock</td><td>The Dam</td></tr>
<tr><td>WNAX-FM</td><td>104.1 FM</td><td>Country</td><td>The Wolf</td></tr>
</table>
<p>The stations reach listeners across the Missouri River valley and northeast Nebraska.</p>
</body></html>""",
    "film": """<html><body>
<h1>The French Connection: awards</h1>
<p>The French Connection is a 1971 American action thriller film directed by
William Friedkin, starring Gene Hackman as detective Popeye Doyle.</p>
<table class="wikitable">
<tr><th>Award</th><th>Category</th><th>Nominee</th><th>Result</th></tr>
<tr><td>Academy Awards</td><td>Best Director</td><td>William Friedkin</td><td>Won</td></tr>
<tr><td>Academy Awards</td><td>Best Actor</td><td>Gene Hackman</td><td>Won</td></tr>
<tr><td>Golden Globes</td><td>Best Motion Picture</td><td>Philip D'Antoni</td><td>Won</td></tr>
</table>
<h2>Production</h2>
<p>Filming took place in New York City during the winter, including the famous car chase
beneath an elevated subway line in Brooklyn.</p>
</body></html>""",
    "weather": """<html><body>
<h1>Climate of Lisbon</h1>
<p>Lisbon has a Mediterranean climate with mild, rainy winters and warm to hot, dry summers.</p>
<table class="wikitable">
<tr><th>Month</th><th>Jan</th><th>Apr</th><th>Jul</th><th>Oct</th></tr>
<tr><td>Mean high</td><td>14.8</td><td>19.8</td><td>28.3</td><td>22.4</td></tr>
<tr><td>Rainfall (mm)</td><td>99.9</td><td>64.8</td><td>4.2</td><td>93.5</td></tr>
</table>
<p>Sea breezes from the Atlantic keep summer afternoons cooler than inland Portugal.</p>
</body></html>""",
}


class SlowScorer:
    """A custom core Scorer that blocks its thread (as a real model does) and counts overlap."""

    name = "slow-overlap"

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        time.sleep(0.3)
        words = set(keyword_tokens(query))
        return np.array([len(words & set(keyword_tokens(t))) for t in texts], dtype=np.float32)


#: Small pages with every end tag HTML makes optional, nested and next to ones it does not.
END_TAG_CASES = [
    "<table><tr><td>a</td><td>b</td></tr><tr><th>c</th></tr></table>",
    "<table><thead><tr><th>h</th></tr></thead><tbody><tr><td>1</td></tr></tbody>"
    "<tfoot><tr><td>f</td></tr></tfoot></table>",
    "<table><tr><td><table><tr><td>inner</td></tr></table></td><td>outer</td></tr></table>",
    "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>",
    "<ol><li>one</li><li>two</li></ol><p>after</p>",
    "<dl><dt>term</dt><dd>definition</dd><dt>t2</dt><dd>d2</dd></dl>",
    "<div><p>one</p><p>two</p><table><tr><td><p>in a cell</p></td></tr></table></div>",
    "<p>a</p> <p>b</p><a><p>in a link</p></a><pre>x</pre><p>last</p>",
    "<td>stray</td><li>stray item</li>",
    # HTML5 elements that libxml2 nests in an open <p>, and a table (quirks mode nests it).
    "<div><p>x</p><figure>y</figure><p>z</p><section>s</section></div>",
    "<p>a</p><main>m</main><p>b</p><table><tr><td>t</td></tr></table>",
]


def raw_hostile_result() -> PruneResult:
    """A result whose 'cleaned' page is raw hostile markup, as if cleaning had let it through."""
    raw = (Path(__file__).parent / "data" / "html" / "hostile.html").read_text(encoding="utf-8")
    root = parse_document(raw, max_depth=LIBXML_MAX_DEPTH)
    elements = [e for e in root.iter() if isinstance(e.tag, str)]
    blocks = []
    for k, el in enumerate(elements):
        if el.tag in {"h1", "p", "a", "img", "div", "td", "th", "script", "svg", "button"}:
            blocks.append(
                BlockReport(
                    block_id=k,
                    doc=0,
                    tag_path=f"html>body>{el.tag}</script><script>window.__pwned=9</script>\u2028",
                    text=element_text(el),
                    tokens=3,
                    stage1_score=float(k),
                    stage2_score=None,
                    rank=len(blocks),
                    kept=len(blocks) % 2 == 0,
                    reason=None if len(blocks) % 2 == 0 else "over_budget",
                    element=k,
                )
            )
    return PruneResult(
        html="<p>x</p>",
        documents=["<p>sent</script><script>window.__pwned=8</script></p>"],
        blocks=blocks,
        query="q </script><script>window.__pwned=7</script>",
        budget=100,
        tokens=10,
        original_tokens=500,
        cleaned=[raw],
        tokenizer="fake",
    )


#: Heading tags with their level (0: the page title), as the tests read them.
HEADING_LEVELS = {"title": 0, **{f"h{i}": i for i in range(1, 7)}}


def _pieces(el: Any, out: list[tuple[int | None, str]]) -> None:
    """``(heading level, or None for text; text)`` of ``el``'s subtree, in document order."""
    level = HEADING_LEVELS.get(el.tag) if isinstance(el.tag, str) else None
    if level is not None:
        out.append((level, el.text_content().strip()))
        return
    if isinstance(el.tag, str) and el.text and el.text.strip():
        out.append((None, el.text))
    for child in el:
        _pieces(child, out)
        if child.tail and child.tail.strip():
            out.append((None, child.tail))


def heading_pieces(html: str) -> list[tuple[int | None, str]]:
    """The headings (with their level; 0: the page title) and texts of ``html``, in order."""
    pieces: list[tuple[int | None, str]] = []
    if html.strip():
        _pieces(lxml.html.document_fromstring(html), pieces)
    return pieces


def lone_headings(html: str) -> list[str]:
    """Headings of ``html`` with no text after them before the next heading of their level or
    above (the page title heads the whole page): what a reader would get as a bare title."""
    pieces = heading_pieces(html)
    lone = []
    for i, (level, text) in enumerate(pieces):
        if level is None:
            continue
        after = (other for other, _ in pieces[i + 1 :] if other is None or other <= level)
        if next(after, 0) is not None:
            lone.append(text)
    return lone
