"""The environment and settings of an evaluation run: versions, platform, tokenizer, time.

:func:`run_meta` is what the report writer (:mod:`hrefine.eval.report`) records beside the
results. It lives here, apart from the runner, so that the runner can write a report without the
report importing the runner; it is still importable from :mod:`hrefine.eval.runner`.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hrefine.eval.results import EvalResult

__all__ = ["run_meta"]


def run_meta(results: Sequence[EvalResult]) -> dict[str, Any]:
    """Environment and settings of a run: versions, platform, tokenizer, time.

    Parameters
    ----------
    results:
        The results the meta describes.

    Returns
    -------
    dict[str, Any]
        JSON-ready metadata.
    """
    import hrefine

    tokenizers = sorted({str(r.meta.get("tokenizer")) for r in results})
    return {
        "hrefine_version": hrefine.__version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "tokenizer": tokenizers[0] if len(tokenizers) == 1 else tokenizers,
    }
