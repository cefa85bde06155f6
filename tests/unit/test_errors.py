"""Every error a user can get is an HrefineError, and also the built-in it refines."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import hrefine.errors as errors
import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("core/hrefine", "langchain_hrefine", "llamaindex_hrefine")
# Built-in exceptions a library function must not raise bare (each has an hrefine subclass).
BARE = {
    "Exception",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "RuntimeError",
    "FileNotFoundError",
    "ImportError",
    "HrefineError",
}


def test_every_error_class_is_an_hrefine_error_and_refines_a_builtin() -> None:
    classes = [getattr(errors, name) for name in errors.__all__]
    assert all(inspect.isclass(c) and issubclass(c, errors.HrefineError) for c in classes)
    for cls in classes:
        if cls is errors.HrefineError:
            continue
        builtins = [b for b in cls.__mro__ if b.__module__ == "builtins" and b is not object]
        assert builtins[0] not in (Exception, BaseException), f"{cls.__name__} refines nothing"


def _bare_raises(path: Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            call = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(call, ast.Name) and call.id in BARE:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} raises {call.id}")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_library_code_raises_no_bare_builtin_error(package: str) -> None:
    files = sorted((REPO / package).rglob("*.py"))
    assert files
    assert [hit for f in files for hit in _bare_raises(f)] == []
