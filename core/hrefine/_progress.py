"""Progress lines of the long builds (RAPTOR trees, GARLIC graphs), one rule for both.

``progress=True`` writes each line to stderr at once, timed from the start of the build, with no
logging set-up needed (a logger's INFO lines are dropped until one is configured, so a user who
asked for progress saw nothing); a callable receives the bare lines instead (the CLI, a UI);
False or None shows nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

__all__ = ["Progress", "reporter"]

#: What a build's ``progress`` argument takes.
Progress = Callable[[str], None] | bool | None


def reporter(progress: Progress, name: str) -> Callable[[str], None]:
    """The function a build calls with each progress line.

    Parameters
    ----------
    progress:
        True: lines go to stderr as ``hrefine <name>  12.3 s  <line>``; a callable: it gets
        each line; False or None: nothing.
    name:
        The build's name in stderr lines (``"raptor"``, ``"garlic"``).
    """
    if callable(progress):
        return progress
    if not progress:
        return _quiet
    started = time.perf_counter()

    def write(line: str) -> None:
        took = time.perf_counter() - started
        print(f"hrefine {name} {took:7.1f} s  {line}", file=sys.stderr, flush=True)

    return write


def _quiet(line: str) -> None:
    """Shows nothing."""
