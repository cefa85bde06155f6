"""No import cycles between the modules of hrefine (issue #56).

The import graph is built with ``ast`` from every module under ``core/hrefine``: imports
anywhere in a module count (also those inside functions), except those in
``if TYPE_CHECKING:`` blocks. Packages count too: a module that imports ``from hrefine.pkg
import name`` while ``hrefine/pkg/__init__.py`` imports that module is a cycle (import the name
from the module that defines it). Importing a submodule runs its package's ``__init__`` first,
but that edge is Python's, not the code's, and is left out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core" / "hrefine"


def _module_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module under ``root`` (packages by name)."""
    files: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        files[".".join(parts)] = path
    return files


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _import_nodes(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under ``node``, at any depth, outside ``if TYPE_CHECKING:`` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                if isinstance(other, (ast.Import, ast.ImportFrom)):
                    yield other
                yield from _import_nodes(other)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from _import_nodes(child)


def _imported_names(name: str, path: Path) -> set[str]:
    """Dotted names a module imports: modules, and ``module.name`` for each from-import."""
    return names_imported(name, path, _import_nodes(ast.parse(path.read_text(encoding="utf-8"))))


def names_imported(name: str, path: Path, nodes: Iterable[ast.Import | ast.ImportFrom]) -> set[str]:
    """Dotted names the import ``nodes`` of module ``name`` (file ``path``) bring in: modules,
    and ``module.name`` for each from-import (relative ones resolved)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - (node.level - 1)])
            module = f"{base}.{node.module}" if node.module else base
        else:
            module = node.module or ""
        names.add(module)
        names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def import_graph(root: Path = CORE, *, packages: bool = True) -> dict[str, set[str]]:
    """Module -> the modules it imports; packages (``__init__``) are nodes too unless
    ``packages`` is False."""
    files = _module_files(root)
    modules = {name for name, path in files.items() if packages or path.name != "__init__.py"}
    return {
        name: (_imported_names(name, files[name]) & modules) - {name} for name in sorted(modules)
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(graph: dict[str, set[str]], cycles: Iterable[list[str]]) -> str:
    lines = []
    for cycle in cycles:
        members = set(cycle)
        edges = [f"{a} -> {b}" for a in cycle for b in sorted(graph[a] & members)]
        lines.append(" <-> ".join(cycle) + ": " + "; ".join(edges))
    return "\n".join(lines)


def test_the_graph_sees_imports_inside_functions_but_not_type_checking_blocks(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg.c import C\n"
        "class A:\n    def f(self):\n        from .b import g\n        return g()\n"
    )
    (pkg / "b.py").write_text("from pkg import a\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    graph = import_graph(pkg, packages=False)
    assert graph == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.c": {"pkg.a"}}
    assert _cycles(graph) == [["pkg.a", "pkg.b"]]


def test_a_module_importing_from_its_package_init_is_a_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("from pkg import b\nA = 1\n")
    (pkg / "b.py").write_text("import pkg.c as c\n")
    (pkg / "c.py").write_text("")
    graph = import_graph(pkg)
    assert graph["pkg"] == {"pkg.a"} and graph["pkg.b"] == {"pkg.c"}
    assert _cycles(graph) == [["pkg", "pkg.a"]]


def test_hrefine_has_no_import_cycles() -> None:
    graph = import_graph()
    assert len(graph) > 50 and "hrefine.raptor" in graph
    cycles = _cycles(graph)
    assert not cycles, "import cycles between hrefine modules:\n" + _describe(graph, cycles)
