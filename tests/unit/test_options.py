"""One options model per method: declared once, checked once, the adapters' fields made from it."""

from __future__ import annotations

import dataclasses
import inspect

import pytest
from hrefine.errors import ConfigError, InputTypeError
from hrefine.html import HtmlPruner, HtmlPrunerOptions
from hrefine.options import Rebuilt, adapter_model


def test_defaults_are_the_pruners_and_the_pruner_takes_either_form() -> None:
    opts = HtmlPrunerOptions()
    assert opts.scorer == "embedding" and opts.max_words == 256 and opts.embed_max_tokens == 128
    a = HtmlPruner(scorer="bm25", max_words=64)
    b = HtmlPruner(HtmlPrunerOptions(scorer="bm25", max_words=64))
    c = HtmlPruner(HtmlPrunerOptions(scorer="bm25"), max_words=64)
    assert a.options == b.options == c.options
    # help() and IDEs see every setting as a keyword of the pruner.
    params = inspect.signature(HtmlPruner.__init__).parameters
    assert set(HtmlPrunerOptions.names()) <= set(params)


def test_options_are_frozen_and_replace_checks_again() -> None:
    opts = HtmlPrunerOptions(read_words=45)
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.read_words = 10  # type: ignore[misc]
    assert opts.replace(read_words=10).read_words == 10
    with pytest.raises(ConfigError, match="read_words must be >= 1"):
        opts.replace(read_words=0)


@pytest.mark.parametrize(
    ("settings", "error", "message"),
    [
        ({"max_word": 10}, ConfigError, "no setting 'max_word'; valid: scorer, embedder"),
        ({"max_words": 0}, ConfigError, "max_words must be >= 1"),
        ({"max_words": "5"}, InputTypeError, "max_words must be an int"),
        ({"max_words": True}, InputTypeError, "max_words must be an int"),
        ({"lexical_weight": float("nan")}, ConfigError, "finite"),
        ({"lexical_weight": -0.1}, ConfigError, "lexical_weight must be >= 0"),
        ({"stage1_max_tokens": 2}, ConfigError, "stage1_max_tokens must be >= 4"),
        ({"narrow_tables": "yes"}, InputTypeError, "narrow_tables must be True or False"),
        ({"scorer": "embeding"}, ConfigError, "unknown scorer"),
        ({"scorer": 3}, InputTypeError, "no score"),
    ],
)
def test_a_bad_setting_fails_when_made_with_a_message_naming_it(
    settings: dict[str, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        HtmlPruner(**settings)


class _LMLike:
    """The LocalLM surface the options check for (chat_prompt, session)."""

    def chat_prompt(self, user: str) -> str:
        return user

    def session(self) -> None:
        return None


def test_key_compares_values_and_models_by_identity() -> None:
    model = _LMLike()
    a = HtmlPrunerOptions(lm=model, max_words=10)
    assert a.key() == HtmlPrunerOptions(lm=model, max_words=10).key()
    assert a.key() != HtmlPrunerOptions(lm=_LMLike(), max_words=10).key()
    assert a.key() != a.replace(max_words=11).key()
    assert "lm" not in a.plain() and a.plain()["max_words"] == 10


def test_adapter_model_has_one_described_field_per_setting() -> None:
    from pydantic import BaseModel

    model = adapter_model(BaseModel, HtmlPrunerOptions, name="Fields")
    names = set(HtmlPrunerOptions.names()) - HtmlPrunerOptions.adapter_excluded
    assert set(model.model_fields) == names
    for name in names:
        field = model.model_fields[name]
        assert field.default == HtmlPrunerOptions.__dataclass_fields__[name].default
        assert field.description == HtmlPrunerOptions.describe(name) != ""


def test_rebuilt_makes_the_object_again_only_when_a_field_changed() -> None:
    class Owner:
        embedder: object = None

        def __init__(self) -> None:
            for name in HtmlPrunerOptions.names():
                setattr(self, name, HtmlPrunerOptions.__dataclass_fields__[name].default)

    owner = Owner()
    built = Rebuilt(HtmlPrunerOptions, HtmlPruner)
    converted: list[object] = []

    def convert(raw: object) -> object:
        converted.append(raw)
        return raw

    first = built.get(owner, {"embedder": (owner.embedder, convert)})
    assert built.get(owner, {"embedder": (owner.embedder, convert)}) is first
    owner.max_words = 32  # type: ignore[attr-defined]
    second = built.get(owner, {"embedder": (owner.embedder, convert)})
    assert second is not first and second.options.max_words == 32
    assert len(converted) == 2  # converted only when made again
    owner.max_words = 0  # type: ignore[attr-defined]
    with pytest.raises(ConfigError, match="max_words"):
        built.get(owner, {"embedder": (owner.embedder, convert)})


def test_options_from_a_save_skip_unknown_names_and_refuse_bad_values() -> None:
    from hrefine.errors import PersistenceError
    from hrefine.garlic import GarlicOptions

    opts = GarlicOptions.from_saved({"chunk_tokens": 128, "from_a_newer_hrefine": 1}, "g")
    assert opts.chunk_tokens == 128 and opts == GarlicOptions(chunk_tokens=128)
    with pytest.raises(PersistenceError, match="g: the saved settings are not valid GarlicOptions"):
        GarlicOptions.from_saved({"chunk_tokens": 3}, "g")
    with pytest.raises(PersistenceError, match="not valid"):
        GarlicOptions.from_saved({"patience": "often"}, "g")
