"""One line of a JSON Lines file read as a JSON object, for every reader of such files.

The evaluation's dataset readers, the training examples and the Ray pipelines' datasource all
read JSON Lines; a line that is not JSON, or is JSON but not an object, is the same error in
each, naming the file and the line.
"""

from __future__ import annotations

import json
from typing import Any

from hrefine.errors import ConfigError

__all__ = ["json_object"]


def json_object(line: str | bytes, where: str) -> dict[str, Any]:
    """The JSON object on ``line``; ``where`` names the file and line in the error.

    Raises
    ------
    ConfigError
        The line is not JSON (or, as bytes, not UTF-8), or holds JSON that is not an object.
    """
    try:
        row = json.loads(line)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        msg = f"{where}: not JSON ({exc})"
        raise ConfigError(msg) from exc
    if not isinstance(row, dict):
        msg = f"{where}: a JSON {type(row).__name__}, expected an object"
        raise ConfigError(msg)
    return row
