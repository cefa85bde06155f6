"""A result type does not import the renderer that draws it; the renderer imports the result
(issue #56). Each report module registers its drawing functions in :mod:`hrefine._renderers`
when imported, and each method's package imports its report module, so ``to_html`` works
whenever the result can exist, with the same page as the report's own function."""

from __future__ import annotations

import ast
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hrefine import _renderers
from hrefine.errors import HrefineError, RendererNotFoundError
from hrefine.garlic import SearchResult, SearchStep, VisitedNode
from hrefine.html import HtmlPruner, PruneResult
from hrefine.longrefiner import LongRefiner, RefineResult
from test_no_import_cycles import names_imported

CORE = Path(__file__).resolve().parents[2] / "core" / "hrefine"
# The result types' modules (docs/design.md's reader's map); classes with to_html/_repr_html_
# are found too.
RESULT_MODULES = {
    "hrefine.html.result",
    "hrefine.longrefiner.result",
    "hrefine.garlic.search_result",
    "hrefine.raptor.retrieve",
    "hrefine.results",
}
# A report module: ``<pkg>.report`` or any ``_report*`` module (page, document, frame).
REPORT = re.compile(r"(^|\.)(report|_report\w*)$")
DRAWN_BY = ("to_html", "_repr_html_")


def _module_name(path: Path) -> str:
    parts = path.relative_to(CORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(name: str, path: Path, tree: ast.AST) -> set[str]:
    """Every module a source names in an import anywhere (functions and TYPE_CHECKING too), and
    every string constant shaped like an hrefine module (``importlib.import_module``)."""
    nodes = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found = names_imported(name, path, nodes)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(re.findall(r"^hrefine(?:\.\w+)+$", node.value))
    return found


def _draws_itself(tree: ast.AST) -> bool:
    return any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in DRAWN_BY
        for cls in ast.walk(tree)
        if isinstance(cls, ast.ClassDef)
        for item in cls.body
    )


def test_no_result_module_imports_a_report_module() -> None:
    checked: dict[str, list[str]] = {}
    drawing = set()
    for path in sorted(CORE.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if _draws_itself(tree):
            drawing.add(name)
        if name in RESULT_MODULES or name in drawing or name == "hrefine._renderers":
            checked[name] = sorted(m for m in _imports(name, path, tree) if REPORT.search(m))
    assert {
        "hrefine.html.result",
        "hrefine.longrefiner.result",
        "hrefine.garlic.search_result",
    } <= drawing
    assert checked.keys() >= RESULT_MODULES
    bad = {name: found for name, found in checked.items() if found}
    assert not bad, f"result modules import their renderer (register it instead): {bad}"


def test_the_scan_sees_imports_inside_functions_and_type_checking(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from hrefine.x._report_page import P\n"
        "class R:\n    def to_html(self):\n        from .report import draw\n"
        "        return __import__('importlib').import_module('hrefine.y.report')\n"
    )
    path = CORE / "x" / "result.py"  # only named, never written
    tree = ast.parse(source)
    found = {m for m in _imports("hrefine.x.result", path, tree) if REPORT.search(m)}
    assert found == {"hrefine.x._report_page", "hrefine.x.report", "hrefine.y.report"}
    assert _draws_itself(tree)


def test_render_without_a_renderer_names_the_package_to_import() -> None:
    class Orphan:
        pass

    with pytest.raises(RendererNotFoundError, match=r"no page renderer .*Orphan; import") as err:
        _renderers.render(Orphan())
    assert isinstance(err.value, HrefineError) and isinstance(err.value, LookupError)
    with pytest.raises(RendererNotFoundError, match="no notebook renderer"):
        _renderers.render(Orphan(), kind=_renderers.NOTEBOOK)


PAGE = (
    "<html><head><title>Films</title></head><body><h1>Films</h1>"
    "<p>The film was directed by Jane Roe in 1999.</p><p>It won two awards.</p>"
    "<table><tr><th>Year</th><th>Award</th></tr><tr><td>2000</td><td>Best film</td></tr></table>"
    "</body></html>"
)
DOCUMENT = (
    "# Terms\n\nThe initial term ends on 31 December 2030.\n\n"
    "# Payment\n\nFees are due within thirty days of the invoice.\n"
)


@pytest.fixture(scope="module")
def prune_result() -> PruneResult:
    return HtmlPruner(scorer="bm25").prune(PAGE, "who directed the film?", 64)


@pytest.fixture(scope="module")
def refine_result() -> RefineResult:
    return LongRefiner(scorer="bm25").refine("when does the term end?", DOCUMENT, 40)


@pytest.fixture(scope="module")
def search_result() -> SearchResult:
    node = VisitedNode(0, "The term ends in 2030.", 0, 0, None, 0.5, 0.9, {"source": "c"}, 0.7)
    step = SearchStep(0, None, 0.9, 0.1, True, 12, 0.01)
    return SearchResult("when?", [node], [step], 12, 12, "exhausted", 0.01, "prompt", [], [0])


def test_each_result_draws_the_page_of_its_report_function(
    prune_result: PruneResult, refine_result: RefineResult, search_result: SearchResult
) -> None:
    from hrefine.garlic.report import render_report as garlic_report
    from hrefine.html.report import render_notebook, render_report
    from hrefine.longrefiner.report import render_report as longrefiner_report

    assert prune_result.to_html() == render_report(prune_result)
    assert prune_result.to_html(title="t") == render_report(prune_result, title="t")
    assert prune_result._repr_html_() == render_notebook(prune_result)
    assert refine_result.to_html() == longrefiner_report(refine_result)
    assert search_result.to_html() == garlic_report(search_result)


@pytest.mark.parametrize(
    ("package", "fixture", "method"),
    [
        ("hrefine.html", "prune_result", "to_html"),
        ("hrefine.html", "prune_result", "_repr_html_"),
        ("hrefine.longrefiner", "refine_result", "to_html"),
        ("hrefine.garlic", "search_result", "to_html"),
    ],
)
def test_to_html_works_in_a_fresh_interpreter_after_importing_only_the_package(
    package: str, fixture: str, method: str, request: pytest.FixtureRequest
) -> None:
    result = request.getfixturevalue(fixture)
    code = (
        f"import pickle, sys, {package}\n"
        "result = pickle.loads(sys.stdin.buffer.read())\n"
        f"sys.stdout.buffer.write(result.{method}().encode('utf-8'))\n"
    )
    page = subprocess.run(
        [sys.executable, "-c", code], input=pickle.dumps(result), capture_output=True, check=True
    ).stdout.decode("utf-8")
    assert page == getattr(result, method)()
