"""A method factory that fails is an error naming the method, unless a package is missing.

Was: a registered factory (or a class given to the evaluation) raising TypeError or ValueError,
from a bug in it or an option passed on to something that does not take it, was skipped as
"method unavailable" as if an optional package were missing, and ``hrefine eval`` exited 0
with the other methods' results.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hrefine.eval.methods as methods
import pytest
from hrefine.cli import main
from hrefine.errors import ConfigError, InputTypeError, MissingDependencyError
from hrefine.eval import get_method, run_eval, run_many


def _buggy(tokenizer: Any = None, **options: Any) -> Any:
    """A factory with a bug of its own."""
    parts: Any = None
    return parts + 1


def _passes_on(tokenizer: Any = None, **options: Any) -> Any:
    """A factory that hands its options to a function that takes none of them."""

    def make() -> Any:
        return lambda document, query, max_tokens: document

    return make(**options)


def _needs_a_package(tokenizer: Any = None, **options: Any) -> Any:
    raise MissingDependencyError("some_optional_module", "models")


def _refuses_its_tokenizer(tokenizer: Any = None, **options: Any) -> Any:
    raise InputTypeError("a counter of this kind cannot be used here")


class _BrokenConstructor:
    name = "broken"

    def __init__(self, tokenizer: Any = None) -> None:
        raise ValueError("the constructor fails")

    def compress(self, document: str, query: str, max_tokens: int) -> str:
        return document


@pytest.fixture(autouse=True)
def _registered(monkeypatch: pytest.MonkeyPatch) -> None:
    # Registered for each test only: the registry is shared with every other test.
    for name, factory in {
        "t-buggy": _buggy,
        "t-passes-on": _passes_on,
        "t-needs-a-package": _needs_a_package,
        "t-refuses-tokenizer": _refuses_its_tokenizer,
    }.items():
        monkeypatch.setitem(methods._REGISTRY, name, factory)


def test_a_factory_bug_is_a_config_error_naming_the_method() -> None:
    with pytest.raises(ConfigError, match=r"method 't-buggy'.*TypeError: unsupported") as info:
        get_method("t-buggy", tokenizer="regex")
    assert isinstance(info.value.__cause__, TypeError)  # chained: the traceback shows the bug


def test_an_option_a_factory_passes_on_wrongly_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"'t-passes-on'.*unexpected keyword argument 'width'"):
        get_method("t-passes-on", tokenizer="regex", width=3)


def test_a_class_whose_constructor_fails_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"_BrokenConstructor.*ValueError: the constructor"):
        get_method(_BrokenConstructor, tokenizer="regex")


def test_hrefines_own_error_from_a_factory_passes_as_it_is() -> None:
    with pytest.raises(InputTypeError, match="cannot be used here"):
        get_method("t-refuses-tokenizer", tokenizer="regex")


def _keep_all(document: str, query: str, max_tokens: int) -> str:
    return document


def test_a_bad_chunk_tokens_is_a_config_error() -> None:
    # Was a raw ValueError from int(), which a run also skipped as "method unavailable".
    with pytest.raises(ConfigError, match="chunk_tokens must be a whole number"):
        get_method(_keep_all, tokenizer="regex", chunk_tokens="many")


def test_a_run_raises_a_factory_bug_instead_of_skipping_it(shared_data: Path) -> None:
    with pytest.raises(ConfigError, match="'t-buggy'"):
        run_many(["lead-text", "t-buggy"], ["leval-nq"], [64], 1, data_dir=shared_data)
    with pytest.raises(InputTypeError):
        run_eval("t-refuses-tokenizer", "leval-nq", budgets=[64], data_dir=shared_data)


def test_a_missing_package_still_skips_only_that_method(shared_data: Path) -> None:
    lead, missing = run_many(
        ["lead-text", "t-needs-a-package"], ["leval-nq"], [64], 1, data_dir=shared_data
    )
    assert lead.skipped is None and lead.n_items == 1
    assert missing.skipped is not None
    assert missing.skipped.startswith("method unavailable: MissingDependencyError")
    assert "hrefine[models]" in missing.skipped


def test_the_command_line_exits_2_naming_the_method(
    capsys: pytest.CaptureFixture[str], shared_data: Path, tmp_path: Path
) -> None:
    argv = ["eval", "-m", "lead-text,t-buggy", "-d", "leval-nq", "-b", "64", "-n", "1"]
    argv += ["--data-dir", str(shared_data), "--out", str(tmp_path / "out"), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "hrefine: error: method 't-buggy' could not be built" in err
    assert not (tmp_path / "out").exists()  # no report of the other method alone
