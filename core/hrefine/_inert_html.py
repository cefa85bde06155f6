"""Pieces every HTML report shares: escaping, the content policy that lets nothing load, and
cut texts. Reports are inert pages (no script, nothing fetched), whatever the text they show."""

from __future__ import annotations

import base64
import hashlib
import html as html_lib

__all__ = ["csp", "esc", "first_words"]


def esc(text: object) -> str:
    """``text`` escaped for element content and double-quoted attribute values."""
    return html_lib.escape(str(text), quote=True)


def csp(style: str) -> str:
    """A Content-Security-Policy that allows only the page's own ``style`` (by its hash)."""
    digest = hashlib.sha256(style.encode("utf-8")).digest()
    return (
        "default-src 'none'; script-src 'none'; "
        f"style-src 'sha256-{base64.b64encode(digest).decode('ascii')}'; img-src 'none'; "
        "font-src 'none'; connect-src 'none'; object-src 'none'; frame-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


def first_words(text: str, n: int) -> tuple[str, bool]:
    """The first ``n`` words of ``text`` (joined by single spaces), and whether it had more."""
    words = text.split()
    return " ".join(words[:n]), len(words) > n
