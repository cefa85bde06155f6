"""Pathological pages: time and peak memory of cleaning and pruning against a bare lxml parse.

Issue #41 item 7: cleaning and pruning must be linear in the page, every page below within
10x a bare ``lxml.html`` parse of the same bytes. Pages (generated, deterministic):

- ``table-<N>``: one table of N columns x 20 rows (a header row of ``<th>``, then ``<td>``);
- ``spans-<MB>``: MB megabytes of ``<span class="...">`` with varied classes;
- ``paras-<N>``: N ``<p>`` paragraphs;
- ``wiki-<MB>``: the bodies of the WTQ Wikipedia pages, repeated in one page of MB megabytes.

Each (page, stage, code) runs in a fresh process (its peak resident memory is its own): the
bare parse (``lxml.html.document_fromstring``), ``clean_document``, ``clean_document`` then
``build_forest`` (the block tree), and ``HtmlPruner(scorer="bm25").prune`` to 1024 tokens.
"before" is the code at commit 23c8bc3 (``git worktree add /tmp/hrefine-before 23c8bc3``),
"after" this checkout; a run past 300 s is stopped and shown as "> 300 s". The "before"
figures are measured once (``--before``) and kept in the JSON; the suite re-measures "after".
Quick mode measures the smaller pages (table-2000, spans-1, paras-100000, wiki-5); the full
mode all of them.

Run: ``python -m benchmarks.hostile_pages [--full] [--before /tmp/hrefine-before]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
STAGES = ("parse", "clean", "tree", "prune")
QUICK_PAGES = ("table-2000", "spans-1", "paras-100000", "wiki-5")
FULL_PAGES = (
    "table-500",
    "table-2000",
    "table-10000",
    "spans-4.6",
    "paras-1000000",
    "wiki-50",
)
LIMIT_S = 300
QUERY = "Col 17 value of paragraph 42"
BUDGET = 1024
BEFORE_COMMIT = "23c8bc3"


# -- pages (the worker builds its own: no page crosses a process boundary) ---------------------
def wide_table(cols: int, rows: int = 20) -> str:
    """A table of ``cols`` columns: a header row, then ``rows`` rows of short values."""
    head = "<tr>" + "".join(f"<th>Col {c}</th>" for c in range(cols)) + "</tr>"
    body = "".join(
        "<tr>" + "".join(f"<td>v{r}x{c}</td>" for c in range(cols)) + "</tr>" for r in range(rows)
    )
    return f"<html><body><h1>Wide</h1><table>{head}{body}</table></body></html>"


def spans(megabytes: float) -> str:
    """``megabytes`` of ``<span class>`` runs, a few class names each repeated many times."""
    rnd = random.Random(0)
    parts: list[str] = []
    size = i = 0
    while size < megabytes * 1_000_000:
        part = f'<span class="c{i % 50} x{rnd.randrange(1000)}">word{i} </span>'
        parts.append(part)
        size += len(part)
        i += 1
    return "<html><body><div>" + "".join(parts) + "</div></body></html>"


def paragraphs(n: int) -> str:
    """``n`` short ``<p>`` paragraphs."""
    return (
        "<html><body>" + "".join(f"<p>Paragraph {i} text.</p>" for i in range(n)) + "</body></html>"
    )


def wiki(megabytes: float) -> str:
    """The WTQ pages (article bodies), in turn, until the page has ``megabytes``."""
    data = Path(os.environ.get("HREFINE_DATA", HERE.parent.parent / "shared" / "data"))
    # The pages are MediaWiki's rendered article bodies (no <html> or <body> of their own).
    bodies = [
        path.read_text(encoding="utf-8", errors="replace")
        for path in sorted((data / "wtq" / "pages").glob("*.html"))
    ]
    parts: list[str] = []
    size = 0
    while size < megabytes * 1_000_000:
        body = bodies[len(parts) % len(bodies)]
        parts.append(body)
        size += len(body)
    return "<html><head><title>Many pages</title></head><body>" + "".join(parts) + "</body></html>"


def make_page(name: str) -> bytes:
    """The page called ``name`` (``table-500``, ``spans-4.6``...), as UTF-8 bytes."""
    kind, _, size = name.partition("-")
    if kind == "table":
        return wide_table(int(size)).encode("utf-8")
    if kind == "paras":
        return paragraphs(int(size)).encode("utf-8")
    return (spans if kind == "spans" else wiki)(float(size)).encode("utf-8")


# -- one measurement, in this process -----------------------------------------------------------
def _best(call: Any, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def _one_pass(page: bytes) -> None:
    """A bare parse and one Python pass reading every node's tag, text and tail: the least
    a cleaner written in Python over lxml does."""
    import lxml.html

    for el in lxml.html.document_fromstring(page).iter():
        _ = el.tag, el.text, el.tail


def _spread(ratios: list[float]) -> dict[str, Any]:
    ratios = sorted(ratios)
    n = len(ratios)
    return {
        "pages": n,
        "p10": round(ratios[n // 10], 2),
        "median": round(ratios[n // 2], 2),
        "p90": round(ratios[(9 * n) // 10], 2),
        "under_3x": round(sum(r <= 3 for r in ratios) / n, 2),
    }


def ordinary() -> dict[str, Any]:
    """Clean + block tree over a bare parse, per ordinary page (every WTQ page and L-Eval NQ
    page, best of 5 each): the spread of the ratio per dataset; ``one_pass``: the same of a
    parse and one Python pass over the page (:func:`_one_pass`)."""
    import lxml.html
    from hrefine.html.blocks import build_forest
    from hrefine.html.clean import clean_document

    data = Path(os.environ.get("HREFINE_DATA", HERE.parent.parent / "shared" / "data"))
    out: dict[str, Any] = {}
    for label, folder in (("wtq", data / "wtq" / "pages"), ("nq", data / "leval" / "nq" / "docs")):
        ratios, floor = [], []
        for path in sorted(folder.glob("*.html")):
            page = path.read_bytes()
            bare = _best(lambda page=page: lxml.html.document_fromstring(page))
            ours = _best(lambda page=page: build_forest([clean_document(page)]))
            ratios.append(ours / bare)
            floor.append(_best(lambda page=page: _one_pass(page)) / bare)
        out[label] = {**_spread(ratios), "one_pass": _spread(floor)}
    return out


def measure(name: str, stage: str) -> dict[str, Any]:
    """Seconds and peak memory rise (MiB) of ``stage`` on page ``name``, in this process."""
    import _rss  # by path: this file runs as a script, with the code under test on sys.path
    import lxml.html

    if name == "ordinary":
        return ordinary()
    page = make_page(name)
    if stage == "parse":

        def call() -> Any:
            return lxml.html.document_fromstring(page)
    else:
        from hrefine.html.blocks import build_forest
        from hrefine.html.clean import clean_document
        from hrefine.html.prune import HtmlPruner

        pruner = HtmlPruner(scorer="bm25")
        pruner.prune("<p>warm up the tokenizer</p>", "warm", max_tokens=BUDGET)

        def call() -> Any:
            if stage == "clean":
                return clean_document(page)
            if stage == "tree":
                return build_forest([clean_document(page)])
            return pruner.prune(page, QUERY, max_tokens=BUDGET)

    before = _rss.start()
    started = time.perf_counter()
    out = call()
    seconds = time.perf_counter() - started
    peak = _rss.peak_since(before)
    del out
    return {"s": round(seconds, 4), "mib": None if peak is None else round(peak / 1024, 1)}


def run_one(name: str, stage: str, code: Path) -> dict[str, Any]:
    """:func:`measure` in a fresh process importing ``hrefine`` from ``code`` (a checkout)."""
    env = dict(os.environ, PYTHONPATH=f"{code / 'core'}{os.pathsep}{HERE}")
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", name, stage]
    try:
        done = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=LIMIT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return {"s": None, "over": LIMIT_S}
    if done.returncode != 0:
        return {"s": None, "error": (done.stderr.strip().splitlines() or ["?"])[-1][:200]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def run_pages(pages: tuple[str, ...], code: Path, label: str) -> dict[str, dict[str, Any]]:
    """Every stage of every page with the code in ``code``; a stage after one that ran out of
    time is not run (each includes the one before it) and is shown as over the limit too."""
    out: dict[str, dict[str, Any]] = {}
    for name in pages:
        row: dict[str, Any] = {}
        for stage in STAGES:
            if stage in ("tree", "prune") and row.get("clean", {}).get("over"):
                row[stage] = {"s": None, "over": LIMIT_S}
                continue
            row[stage] = run_one(name, stage, code)
            print(f"{label} {name} {stage}: {row[stage]}", file=sys.stderr, flush=True)
        out[name] = row
    return out


# -- results --------------------------------------------------------------------------------------
def _cell(entry: dict[str, Any] | None, parse: dict[str, Any] | None) -> str:
    if not entry:
        return "—"
    if entry.get("over"):
        return f"> {entry['over']} s"
    if entry.get("s") is None:
        return "error"
    text = f"{entry['s']:.2f} s"
    if parse and parse.get("s"):
        text += f" ({entry['s'] / parse['s']:.0f}x)"
    if entry.get("mib") is not None:
        text += f", {entry['mib']:.0f} MiB"
    return text


def render(result: dict[str, Any]) -> str:
    """The markdown table of ``result``."""
    lines = [
        "## hostile_pages",
        "",
        "Pathological pages (issue #41 item 7): seconds (and times a bare `lxml.html` parse of "
        "the same bytes, measured in the same run), and the peak rise of resident memory, each "
        "in a fresh process. `tree` is cleaning plus the block tree; `prune` is "
        f'`HtmlPruner(scorer="bm25")` to {BUDGET} tokens. *before*: commit {BEFORE_COMMIT}, '
        f"measured once ({result.get('before_created', '?')}) and kept in the JSON; *after*: "
        f"this run ({result.get('created', '?')}, {result.get('mode', '?')} mode; the pages "
        "it does not measure are from the last run that did). "
        f'Stopped after {LIMIT_S} s: "> {LIMIT_S} s".',
        "",
        "| page | MB | code | parse | clean | tree | prune |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    sizes = result.get("sizes_mb", {})
    names = [*FULL_PAGES, *QUICK_PAGES]
    names += [n for side in ("before", "after") for n in result.get(side, {}) if n not in names]
    for name in dict.fromkeys(names):
        for side in ("before", "after"):
            row = result.get(side, {}).get(name)
            if row is None:
                continue
            parse = row.get("parse")
            cells = [_cell(row.get(s), parse if s != "parse" else None) for s in STAGES]
            lines.append(
                f"| {name} | {sizes.get(name, '?')} | {side} | " + " | ".join(cells) + " |"
            )
    lines += [
        "",
        "Ordinary pages (every WTQ page and L-Eval NQ page): clean + block tree over a bare parse "
        "of the same bytes, per page (best of 5 each), in one process:",
        "",
        "| pages | code | p10 | median | p90 | share within 3x |",
        "|---|---|---:|---:|---:|---:|",
    ]
    floors = []
    for side in ("before", "after"):
        for label, row in (result.get("ordinary", {}).get(side) or {}).items():
            if isinstance(row, dict) and "median" in row:
                lines.append(_ordinary_row(label, side, row))
                if side == "after" and "one_pass" in row:
                    floors.append(_ordinary_row(label, "parse + one Python pass", row["one_pass"]))
    if floors:
        lines += [
            *floors,
            "",
            "*parse + one Python pass*: the bare parse, then a loop reading every node's tag, "
            "text and tail once, with nothing done to them: the least any cleaner written in "
            "Python over lxml costs. Within 3x a parse, it leaves the cleaning and the block "
            "tree about one more parse's time.",
        ]
    return "\n".join(lines) + "\n"


def _ordinary_row(label: str, side: str, row: dict[str, Any]) -> str:
    return (
        f"| {label} ({row['pages']}) | {side} | {row['p10']}x | {row['median']}x "
        f"| {row['p90']}x | {row['under_3x']:.0%} |"
    )


def plot(result: dict[str, Any], path: Path) -> None:
    """Prune time over parse time per page, before and after (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(result.get("after", {}))
    fig, ax = plt.subplots(figsize=(8, 4))
    for k, side in enumerate(("before", "after")):
        ratios = []
        for name in names:
            row = result.get(side, {}).get(name, {})
            parse = (row.get("parse") or {}).get("s")
            prune = row.get("prune") or {}
            seconds = prune.get("s") or prune.get("over")
            ratios.append(seconds / parse if seconds and parse else 0.0)
        ax.bar([i + 0.4 * k for i in range(len(names))], ratios, width=0.4, label=side)
    ax.axhline(10, color="grey", linestyle="--", label="10x parse")
    ax.set_yscale("log")
    ax.set_xticks([i + 0.2 for i in range(len(names))], names, rotation=20)
    ax.set_ylabel("prune time / bare parse time")
    ax.set_title(f"Pruning pathological pages (a run stopped at {LIMIT_S} s drawn at {LIMIT_S} s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(quick: bool = True, before: Path | None = None) -> dict[str, Any]:
    """Measure "after" (and "before" when ``before`` is a checkout of it) and save the results."""
    from benchmarks._common import REPO, RESULTS_DIR, hardware

    pages = QUICK_PAGES if quick else FULL_PAGES
    json_path = RESULTS_DIR / "hostile_pages.json"
    old = json.loads(json_path.read_text(encoding="utf-8")) if json_path.is_file() else {}
    started = time.perf_counter()
    result: dict[str, Any] = {
        "schema": "hrefine-hostile/1",
        "mode": "quick" if quick else "full",
        "created": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "hardware": hardware(),
        "limit_s": LIMIT_S,
        "before_commit": BEFORE_COMMIT,
        "before_created": old.get("before_created"),
        # Rows of pages this mode does not measure are kept from the run that measured them.
        "sizes_mb": {
            **old.get("sizes_mb", {}),
            **{n: round(len(make_page(n)) / 1e6, 1) for n in pages},
        },
        "before": dict(old.get("before", {})),
    }
    result["ordinary"] = {"before": old.get("ordinary", {}).get("before")}
    if before is not None:
        result["before"].update(run_pages(pages, before, "before"))
        result["before_created"] = result["created"]
        result["ordinary"]["before"] = run_one("ordinary", "tree", before)
    result["after"] = {**old.get("after", {}), **run_pages(pages, REPO, "after")}
    result["ordinary"]["after"] = run_one("ordinary", "tree", REPO)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    (RESULTS_DIR / "hostile_pages.md").write_text(render(result), encoding="utf-8")
    plot(result, RESULTS_DIR / "hostile_pages.png")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("PAGE", "STAGE"), help=argparse.SUPPRESS)
    parser.add_argument("--full", action="store_true", help="every page size")
    parser.add_argument("--before", type=Path, help="a checkout of the code before (23c8bc3)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(*args.worker)))
    else:
        sys.path.insert(0, str(HERE.parent))
        main(quick=not args.full, before=args.before)
