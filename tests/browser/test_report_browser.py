"""The pruning report in headless Chromium: blocks drawn, the switch, page code never run.

The screenshot used by docs/report.md is written by :func:`test_report_of_a_real_page` when
``HREFINE_UPDATE_SCREENSHOTS=1`` (into tmp_path otherwise).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hrefine.html import HtmlPruner, PruneResult
from hrefine.html._load import LIBXML_MAX_DEPTH, parse_document
from hrefine.html._text import element_text, normalize_space
from html_pages import raw_hostile_result
from many_blocks import many_blocks_result

# ``tab`` is tests/browser/conftest.py's Tab: a Playwright page plus what it reported.
Tab = Any

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "tests" / "data" / "html" / "hostile.html"
SCREENSHOT = REPO / "docs" / "img" / "htmlrag-report.png"

COUNTS = """() => {
  const full = document.querySelector('#doc-0 .full');
  const blocks = [...full.querySelectorAll('[data-b]')];
  return {
    blocks: blocks.length,
    kept: full.querySelectorAll('.hb.kept').length,
    visible: blocks.filter(e => e.checkVisibility()).length,
    listed: document.querySelectorAll('#rank li').length,
  };
}"""
ONLY_KEPT = """() => {
  const seen = e => e.checkVisibility();
  const all = sel => [...document.querySelectorAll(sel)];
  return {
    fullShown: all('#doc-0 .full [data-b]').filter(seen).length,
    droppedShown: all('.hb.drop:not(.own), .ot.drop').filter(seen).length,
    keptHidden: all('.kept-view .hb.kept').filter(e => !seen(e)).length,
    keptShown: all('.hb.kept').filter(seen).length,
    listed: document.querySelectorAll('#rank li').length,
    text: document.querySelector('#doc-0 .kept-view').innerText,
  };
}"""
# Blocks marked anywhere in the full view: drawn, or in a part not drawn yet.
ALL_MARKED = """() => {
  const full = document.querySelector('#doc-0 .full');
  let n = full.querySelectorAll('[data-b]').length;
  for (const t of full.querySelectorAll('template'))
    n += t.content.querySelectorAll('[data-b]').length;
  return n;
}"""
NOTHING_RAN = """() => ({
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  title: document.title,
  handlers: [...document.querySelectorAll('*')].filter(
    e => [...e.attributes].some(a => a.name.toLowerCase().startsWith('on'))).length,
  links: document.querySelectorAll('a[href], [src], [srcdoc], [action], [formaction]').length,
  scripts: [...document.scripts].map(s => s.type || 'js'),
  embedded: document.querySelectorAll('iframe, object, embed, svg, img, form, base').length,
})"""


@pytest.fixture(scope="module")
def wtq_case(shared_data: Path) -> tuple[dict[str, Any], bytes]:
    folder = shared_data / "wtq"
    first = json.loads((folder / "questions.jsonl").open().readline())
    return first, (folder / first["doc"]).read_bytes()


@pytest.fixture(scope="module")
def real(wtq_case: tuple[dict[str, Any], bytes]) -> PruneResult:
    question, page = wtq_case
    return HtmlPruner(scorer="bm25").prune(page, question["question"], 256)


def test_report_of_a_real_page(
    tab: Tab, real: PruneResult, wtq_case: tuple[dict[str, Any], bytes], tmp_path: Path
) -> None:
    question, _ = wtq_case
    path = tmp_path / "report.html"
    path.write_text(real.to_html(title=question["doc"]), encoding="utf-8")
    tab.open(path)
    page = tab.page
    n_blocks = sum(b.doc == 0 for b in real.blocks)
    n_kept = sum(b.kept for b in real.blocks)
    assert 0 < n_kept < n_blocks

    counts = page.evaluate(COUNTS)
    assert counts["blocks"] == n_blocks == len(real.blocks)
    assert counts["kept"] == n_kept
    assert counts["visible"] == n_blocks
    assert counts["listed"] == min(200, n_blocks)

    # Hovering a block shows its tag path, scores and rank.
    best = min((i for i, b in enumerate(real.blocks) if b.kept), key=lambda i: real.blocks[i].rank)
    page.hover(f'[data-b="{best}"]')
    assert page.inner_text("#insp .st").lower() == "kept"
    assert page.inner_text("#insp .path") == real.blocks[best].tag_path
    insp = page.inner_text("#insp")
    assert f"#{real.blocks[best].rank + 1}" in insp
    assert f"{real.blocks[best].stage1_score:.3f}" in insp
    assert page.is_visible("#tip")

    # The switch leaves only what the LLM receives.
    page.click("label.switch")
    only = page.evaluate(ONLY_KEPT)
    assert only["fullShown"] == 0
    assert only["droppedShown"] == 0
    assert only["keptHidden"] == 0 and only["keptShown"] == n_kept
    assert only["listed"] == n_kept
    shown = normalize_space(only["text"])
    for b in real.kept_blocks:
        assert normalize_space(b.text)[:60] in shown
    sent = parse_document(real.documents[0], max_depth=LIBXML_MAX_DEPTH)
    assert normalize_space(element_text(sent)).split() == shown.split()
    page.click("label.switch")
    assert page.evaluate(COUNTS)["visible"] == n_blocks

    # The ranked list scrolls to its block and selects it.
    third = page.evaluate("JSON.parse(document.getElementById('hr-data').textContent).order[2]")
    page.click("#rank li:nth-child(3) button")
    assert page.get_attribute(".full .hb.sel", "data-b") == str(third)
    page.wait_for_function(
        """() => { const r = document.querySelector('.full .hb.sel').getBoundingClientRect();
          return r.top > 150 && r.bottom < 900; }""",
        timeout=5_000,
    )
    box = page.locator(".full .hb.sel").bounding_box()
    assert box is not None

    # The picture in the docs: a selected answer row, its tooltip, kept and dropped blocks.
    page.mouse.move(box["x"] + box["width"] * 0.55, box["y"] + box["height"] / 2)
    page.wait_for_timeout(900)  # let the switch and flash transitions settle
    shot = SCREENSHOT if os.environ.get("HREFINE_UPDATE_SCREENSHOTS") == "1" else tmp_path / "r.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000

    assert tab.errors == [] and tab.dialogs == []
    assert tab.csp_violations() == []


@pytest.mark.parametrize("kind", ["pruned", "raw", "raw in parts"])
def test_hostile_page_scripts_never_run(
    tab: Tab, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hrefine.html._report_page as report_page

    if kind == "raw in parts":  # drawn part by part, as big pages are
        monkeypatch.setattr(report_page, "CHUNK", 3)
    if kind == "pruned":
        query = "what is the answer? </script><script>window.__pwned='query'</script>"
        result = HtmlPruner(scorer="bm25").prune(HOSTILE.read_bytes(), query, 60)
    else:
        result = raw_hostile_result()
    path = tmp_path / "hostile-report.html"
    path.write_text(result.to_html(title="<img src=x onerror=alert(1)>"), encoding="utf-8")
    tab.open(path)
    page = tab.page
    url = page.url
    if kind == "raw in parts":  # a small page: every part is near the screen and gets drawn
        assert page.locator(".full > .part").count() > 3
        page.wait_for_function("() => !document.querySelector('.full .ph, .full template')")
    data = page.evaluate("JSON.parse(document.getElementById('hr-data').textContent)")
    unplaced = len(data["unplaced"])  # blocks on a <script>, <svg>... are listed, never drawn
    assert (unplaced == 0) if kind == "pruned" else (unplaced > 0)
    assert page.locator(".full [data-b]").count() == len(result.blocks) - unplaced
    assert "the answer is 42" in page.inner_text("#docs")

    # Move over, click and double-click everything the page drew, links first.
    links = page.locator(".full .p-a")
    assert links.count() == (0 if kind == "pruned" else 3)
    for k in range(links.count()):
        links.nth(k).click()
    for handle in page.query_selector_all(".page *"):
        if handle.is_visible():
            handle.hover()
            handle.click()
            handle.dblclick()
    page.evaluate(
        """() => document.querySelectorAll('.page *').forEach(e => {
          for (const t of ['mouseover', 'mouseenter', 'click', 'focus', 'load', 'error'])
            e.dispatchEvent(new Event(t, {bubbles: true}));
        })"""
    )
    page.click("label.switch")
    for k in range(page.locator("#rank li").count()):
        page.locator("#rank li button").nth(k).click()
    page.wait_for_timeout(200)

    state = page.evaluate(NOTHING_RAN)
    assert state["pwned"] is None
    assert state["title"] == "Pruning report: <img src=x onerror=alert(1)>"
    assert state["handlers"] == 0
    assert state["links"] == 0
    assert state["scripts"] == ["application/json", "js"]
    assert state["embedded"] == 0
    assert page.url == url and len(page.frames) == 1
    assert tab.dialogs == [] and tab.errors == []
    assert tab.csp_violations() == []


def test_notebook_frame_renders_the_report(tab: Tab, real: PruneResult, tmp_path: Path) -> None:
    path = tmp_path / "notebook.html"
    path.write_text(f"<!DOCTYPE html><body>{real._repr_html_()}</body>", encoding="utf-8")
    tab.page.goto(path.as_uri())
    frame = tab.page.frame_locator("iframe")
    frame.locator("body[data-ready]").wait_for(state="attached")
    assert frame.locator(".full [data-b]").count() == len(real.blocks)
    assert frame.locator(".full .hb.kept").count() == len(real.kept_blocks)
    assert tab.errors == []


def _big_page(target_bytes: int) -> str:
    rng = random.Random(7)
    parts = ["<html><head><title>Season results</title></head><body><h1>Season results</h1>"]
    size = 0
    i = 0
    while size < target_bytes:
        rows = "".join(
            f"<tr><td>{i}-{r}</td><td>Team {rng.randint(1, 999)}</td>"
            f"<td>{rng.randint(0, 99)}</td><td>{rng.randint(0, 99)}</td></tr>"
            for r in range(20)
        )
        chunk = (
            f"<h2>Section {i}</h2><p>Paragraph {i} is about team number {i} and the weather in "
            f"city {i % 97}, which was mild during the season of {1900 + i % 120}.</p>"
            f"<table><tr><th>Id</th><th>Team</th><th>Wins</th><th>Losses</th></tr>{rows}</table>"
        )
        parts.append(chunk)
        size += len(chunk)
        i += 1
    parts.append("</body></html>")
    return "".join(parts)


@pytest.mark.slow
def test_report_of_a_5mb_page_opens_and_stays_responsive(
    tab: Tab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page_html = _big_page(5_000_000)
    start = time.perf_counter()
    result = HtmlPruner(scorer="bm25").prune(page_html, "how many wins did team 512 have?", 1024)
    prune_s = time.perf_counter() - start
    start = time.perf_counter()
    report = result.to_html(title="5 MB page")
    report_s = time.perf_counter() - start
    path = tmp_path / "big-report.html"
    path.write_text(report, encoding="utf-8")

    start = time.perf_counter()
    tab.open(path)
    tab.page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    open_s = time.perf_counter() - start
    timing = tab.page.evaluate(
        """() => {
          const nav = performance.getEntriesByType('navigation')[0];
          const fcp = performance.getEntriesByName('first-contentful-paint')[0];
          return {load: nav.loadEventEnd, fcp: fcp ? fcp.startTime : null};
        }"""
    )
    frame = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    toggle_ms = tab.page.evaluate(
        f"""async () => {{ const t = performance.now();
          document.getElementById('only-kept').click(); await {frame};
          const on = performance.now() - t; const t2 = performance.now();
          document.getElementById('only-kept').click(); await {frame};
          return [on, performance.now() - t2]; }}"""
    )
    # Hover: from the event to the second frame after it, once the scrolled-to part is drawn.
    hover_ms = tab.page.evaluate(
        f"""async () => {{ const e = document.querySelectorAll('.full .hb')[40000] ||
            document.querySelector('.full .hb'); e.scrollIntoView(); await {frame};
          await {frame}; const r = e.getBoundingClientRect(); const t = performance.now();
          e.dispatchEvent(new MouseEvent('mousemove', {{bubbles: true, clientX: r.x + 2,
            clientY: r.y + 2}})); await {frame}; return performance.now() - t; }}"""
    )
    # The ranked list: a click scrolls far down the page to the block and draws it.
    jump_ms = tab.page.evaluate(
        f"""async () => {{ const b = document.querySelector('#rank li:nth-child(150) button');
          const t = performance.now(); b.click(); await {frame};
          return performance.now() - t; }}"""
    )
    assert tab.page.locator(".full .hb.sel").count() == 1
    assert tab.page.evaluate(ALL_MARKED) == len(result.blocks)
    assert tab.errors == []
    # For comparison: the same page's cleaned HTML opened as it is.
    plain = tmp_path / "cleaned.html"
    plain.write_text(result.cleaned[0], encoding="utf-8")
    start = time.perf_counter()
    tab.page.goto(plain.as_uri())
    tab.page.evaluate(frame)
    plain_s = time.perf_counter() - start
    numbers = {
        "page_mb": round(len(page_html.encode()) / 1e6, 2),
        "blocks": len(result.blocks),
        "kept": len(result.kept_blocks),
        "prune_s": round(prune_s, 1),
        "report_s": round(report_s, 2),
        "report_mb": round(path.stat().st_size / 1e6, 2),
        "open_to_first_frame_s": round(open_s, 2),
        "load_event_ms": round(timing["load"]),
        "first_contentful_paint_ms": timing["fcp"] and round(timing["fcp"]),
        "switch_on_off_ms": [round(x) for x in toggle_ms],
        "hover_ms": round(hover_ms),
        "list_jump_ms": round(jump_ms),
        "cleaned_page_alone_open_s": round(plain_s, 2),
    }
    with capsys.disabled():
        print(f"\n5 MB report: {json.dumps(numbers)}")


def test_report_of_200k_blocks_opens_and_answers(tab: Tab, tmp_path: Path) -> None:
    """A page of 200,000 blocks: drawn part by part, first blocks at once, the list, a jump
    far down the page, the switch and scrolling to the end all answer (timings: docs/report.md)."""
    result = many_blocks_result(200_000)
    n = len(result.blocks)
    path = tmp_path / "huge-report.html"
    path.write_text(result.to_html(title="200,000 blocks"), encoding="utf-8")
    tab.open(path)
    page = tab.page
    assert "drawn in" in page.inner_text("#doc-0 .doc-h")
    # The first blocks are on screen; most of the page waits, inert, in its parts.
    assert page.locator('.full [data-b="0"]').is_visible()
    assert page.locator('.full [data-b="1"]').is_visible()
    drawn = page.locator(".full [data-b]").count()
    assert 0 < drawn < n // 10
    assert page.evaluate(ALL_MARKED) == n
    assert page.locator("#rank li").count() == 200
    assert page.text_content("#list-n") == f"{n} blocks"

    # Hover a block: the inspector shows it.
    page.hover('.full [data-b="1"]')
    assert page.inner_text("#insp .path") == result.blocks[1].tag_path

    # A click in the ranked list draws the block's part far down the page and scrolls to it.
    deep = page.evaluate(
        """() => [...document.querySelectorAll('#rank li button')].map(b => +b.dataset.i)
          .filter(i => !document.querySelector(`.full [data-b="${i}"]`))"""
    )
    assert deep  # ranked blocks whose parts are not drawn yet
    target = deep[0]
    assert target > 5_000
    page.click(f'#rank button[data-i="{target}"]')
    page.wait_for_function(
        f"""() => {{ const e = document.querySelector('.full [data-b="{target}"]');
          if (!e || !e.classList.contains('sel')) return false;
          const r = e.getBoundingClientRect(); return r.top > 150 && r.bottom < 900; }}""",
        timeout=20_000,
    )
    assert page.inner_text("#insp .path") == result.blocks[target].tag_path

    # The switch shows the kept blocks only, and back.
    page.click("label.switch")
    assert page.locator(".kept-view .hb.kept").count() == len(result.kept_blocks)
    assert page.text_content("#list-n") == f"{len(result.kept_blocks)} kept"
    page.click("label.switch")

    # Scrolling to the end draws the last parts.
    page.wait_for_function(
        f"""() => {{ const d = document.getElementById('docs'); d.scrollTop = d.scrollHeight;
          const e = document.querySelector('.full [data-b="{n - 1}"]');
          return !!e && e.getBoundingClientRect().top < 900; }}""",
        polling=200,
        timeout=30_000,
    )
    assert page.locator(".full [data-b]").count() < n // 2
    assert tab.errors == [] and tab.dialogs == []
    assert tab.csp_violations() == []


@pytest.mark.slow
def test_report_of_200k_blocks_timings(
    tab: Tab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Prints the numbers of docs/report.md for the synthetic 200,000-block page; asserts none."""
    result = many_blocks_result(200_000)
    start = time.perf_counter()
    report = result.to_html(title="200,000 blocks")
    report_s = time.perf_counter() - start
    path = tmp_path / "huge-report.html"
    path.write_text(report, encoding="utf-8")
    frame = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    start = time.perf_counter()
    tab.open(path)
    tab.page.evaluate(frame)
    open_s = time.perf_counter() - start

    def timed(action: str) -> int:
        return round(
            tab.page.evaluate(
                f"async () => {{ const t = performance.now(); {action}; await {frame};"
                " return performance.now() - t; }"
            )
        )

    hover = (
        "const e = {}; const r = e.getBoundingClientRect(); e.dispatchEvent(new MouseEvent("
        "'mousemove', {{bubbles: true, clientX: r.x + 2, clientY: r.y + 2}}))"
    )
    ms = {
        "hover": timed(hover.format("document.querySelector('.full [data-b]')")),
        "list_jump": timed("document.querySelectorAll('#rank li button')[149].click()"),
        "hover_there": timed(hover.format("document.querySelector('.full .hb.sel')")),
        "switch_on": timed("document.getElementById('only-kept').click()"),
        "switch_off": timed("document.getElementById('only-kept').click()"),
        "show_more": timed("document.getElementById('more').click()"),
    }
    assert tab.errors == []
    numbers = {
        "blocks": len(result.blocks),
        "report_s": round(report_s, 2),
        "report_mb": round(path.stat().st_size / 1e6, 2),
        "open_to_first_frame_s": round(open_s, 2),
        "ms": ms,
    }
    with capsys.disabled():
        print(f"\n200,000-block report: {json.dumps(numbers)}")
