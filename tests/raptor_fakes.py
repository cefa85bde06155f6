"""Fakes for the RAPTOR tests (imported as ``raptor_fakes``)."""

from __future__ import annotations

import hashlib
import threading
import time


class Summariser:
    """A deterministic, instant LLM: the first words of the texts plus a digest of the prompt.

    It records every prompt and the most calls it saw in flight at once; ``delay`` makes each
    call take that long (to see concurrency), ``fail`` makes every call raise, ``empty`` answer
    with whitespace the first ``empty`` times.
    """

    def __init__(self, *, delay: float = 0.0, fail: bool = False, empty: int = 0) -> None:
        self.delay = delay
        self.fail = fail
        self.empty = empty
        self.prompts: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self._lock:
            self.prompts.append(prompt)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            blank = self.empty > 0
            self.empty -= 1
        try:
            if self.delay:
                time.sleep(self.delay)
            if self.fail:
                msg = "the service is down"
                raise ConnectionError(msg)
            if blank:
                return "  \n"
            return summary_of(prompt)
        finally:
            with self._lock:
                self.in_flight -= 1


def summary_of(prompt: str) -> str:
    """What :class:`Summariser` answers to ``prompt``."""
    context = prompt.split(": ", 1)[1] if ": " in prompt else prompt
    digest = hashlib.sha1(prompt.encode()).hexdigest()[:8]
    return " ".join(context.split()[:40]) + f" [{digest}]"


#: Four short documents on unrelated topics, one question answered by the last.
TOPICS = {
    "volcano": "Mount Etna is an active volcano in Sicily. Its eruptions send lava down the "
    "slopes and ash over the city of Catania.",
    "bread": "Sourdough bread rises with wild yeast and lactic bacteria. Bakers feed the "
    "starter with flour and water every day.",
    "chess": "In chess the king castles with a rook. The Sicilian Defence answers 1.e4 with c5 "
    "and leads to sharp games.",
    "comet": "Halley's Comet returns to the inner Solar System every 76 years. Its icy nucleus "
    "sheds a tail of gas and dust near the Sun.",
}
