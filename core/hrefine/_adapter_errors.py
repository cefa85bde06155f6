"""A framework component's bad setting, told on the first line of pydantic's error.

The LangChain and LlamaIndex components are pydantic models: a value of the wrong type or out of
a field's range, and a core check that refuses a setting when the component is made, come back
as pydantic's ``ValidationError``, whose first line only says ``1 validation error for
HtmlRagCompressor``. :class:`OneLineSettingErrors`, mixed into every class that
:func:`~hrefine.options.adapter_model` makes, raises it again with a first line that names the
field and the rule (``... for HtmlRagCompressor: max_words must be >= 1, got -1``); the lines
after it are pydantic's, and ``except ValidationError`` (or ``ValueError``) still catches it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OneLineSettingErrors", "first_problem", "titled"]

# Longest shown value of a refused setting (a whole document pasted by mistake stays short).
_SHOWN = 80


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def first_problem(owner: str, errors: list[Any]) -> str:
    """One line for pydantic's ``errors()`` of ``owner``: the first field, its rule, the value."""
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ())) or "a setting"
    cause = (first.get("ctx") or {}).get("error")
    if first.get("type") in ("value_error", "assertion_error") and isinstance(cause, Exception):
        text = str(cause)  # the core's own message names the setting and what it takes
    elif first.get("type") == "extra_forbidden":
        text = f"{where} is not a setting of {owner}"
    else:
        rule = str(first.get("msg", "is refused"))
        text = f"{where}: {rule[:1].lower()}{rule[1:]}, got {_shown(first.get('input'))}"
    more = len(errors) - 1
    text = " ".join(text.split())
    return text + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")


def titled(owner: str, exc: Any) -> Any:
    """``exc`` (a ``ValidationError``) made again with ``owner: <first problem>`` as its title,
    so its first line says what to change; ``exc`` itself when pydantic cannot rebuild it."""
    from pydantic import ValidationError

    errors = exc.errors()
    if not errors:
        return exc
    details: list[Any] = []  # pydantic's InitErrorDetails
    for e in errors:
        detail = {"type": e["type"], "loc": e["loc"], "input": e["input"]}
        if "ctx" in e:
            detail["ctx"] = e["ctx"]
        details.append(detail)
    try:
        return ValidationError.from_exception_data(
            f"{owner}: {first_problem(owner, errors)}", details
        )
    except (KeyError, TypeError, ValueError):  # an error type pydantic cannot make by name
        return exc


class OneLineSettingErrors:
    """Mixin of the adapters' pydantic components: a ``ValidationError`` raised while one is
    made says on its first line which field is wrong and what it takes (see the module)."""

    def __init__(self, /, **data: Any) -> None:
        from pydantic import ValidationError

        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise titled(type(self).__name__, exc) from None
