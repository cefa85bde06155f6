"""ModelGate: many threads share one model whose state (adapter, attention kernel) is global.

A PEFT model has one active adapter and one attention kernel for every caller: switching either
while another thread's forward pass is half way makes that pass finish its layers in a state it
did not ask for. The gate admits passes in arrival order. Passes that need the state the model is
in run side by side; a pass that needs another state waits until the running passes finish, then
the gate switches the model for it; a pass that needs the model alone (an attention capture that
swaps the kernel) runs with nothing beside it. Nobody starves: a waiting pass keeps every later
arrival out, whatever state that one needs.

Plain threading, no torch: the switch itself is a callable the owner gives.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager

__all__ = ["UNKNOWN", "ModelGate"]


class _Marker:
    """A named sentinel that equals only itself."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: The model's state is not known (before the first switch, after one failed or after a change
#: made under :meth:`ModelGate.exclusive`): the next pass switches, whatever state it needs.
UNKNOWN: Hashable = _Marker("UNKNOWN")
_KEEP: Hashable = _Marker("KEEP")  # an exclusive pass: no switch on entry


class _Ticket:
    __slots__ = ("alone", "state")

    def __init__(self, state: Hashable, alone: bool) -> None:
        self.state = state
        self.alone = alone


class ModelGate:
    """Admit passes over a shared model so that each runs in the model state it declares.

    Parameters
    ----------
    switch:
        Puts the model in a given state; called with no pass running, under the gate's lock
        (other threads wait, none runs the model). If it raises, the state becomes
        :data:`UNKNOWN` and the error reaches the pass that asked for the switch.
    state:
        The state the model is in now; :data:`UNKNOWN` makes the first pass switch.
    rest:
        A state the model is put back in whenever no pass runs and none waits (an embedder's
        own read limit); by default it stays in the last pass's state.

    Notes
    -----
    Passes do not nest: a thread that holds the gate and asks for it again waits for itself as
    soon as another thread waits for a different state.
    """

    def __init__(
        self,
        switch: Callable[[Hashable], None],
        state: Hashable = UNKNOWN,
        *,
        rest: Hashable = _KEEP,
    ) -> None:
        self._switch = switch
        self._cond = threading.Condition()
        self._state = state
        self._rest = rest
        self._running = 0
        self._alone = False
        self._queue: deque[_Ticket] = deque()

    @property
    def state(self) -> Hashable:
        """The state the model was last switched to (:data:`UNKNOWN` when not known)."""
        return self._state

    @property
    def running(self) -> int:
        """Number of passes inside the gate now."""
        return self._running

    @property
    def waiting(self) -> int:
        """Number of passes waiting for the gate now."""
        return len(self._queue)

    @contextmanager
    def hold(self, state: Hashable, *, alone: bool = False) -> Iterator[None]:
        """Run the block as one pass over the model in ``state``.

        Parameters
        ----------
        state:
            The model state the pass needs (e.g. an adapter name, ``None`` for the base model).
        alone:
            The pass changes something else that every pass shares (the attention kernel), so
            no other pass may run beside it.
        """
        with self._pass(_Ticket(state, alone), forget=False):
            yield

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Run the block with no pass beside it, then forget the model's state.

        For changes to the model itself (wrapping it in a ``PeftModel``, loading an adapter):
        the next pass switches the model to its state again.
        """
        with self._pass(_Ticket(_KEEP, True), forget=True):
            yield

    @contextmanager
    def _pass(self, ticket: _Ticket, *, forget: bool) -> Iterator[None]:
        self._enter(ticket)
        try:
            yield
        finally:
            self._leave(ticket, forget=forget)

    def _may_enter(self, ticket: _Ticket) -> bool:
        if self._queue[0] is not ticket or self._alone:
            return False
        if not self._running:
            return True
        return not ticket.alone and ticket.state == self._state

    def _enter(self, ticket: _Ticket) -> None:
        with self._cond:
            self._queue.append(ticket)
            try:
                while not self._may_enter(ticket):
                    self._cond.wait()
            finally:
                self._queue.remove(ticket)
                # The next in line may be able to run beside this pass (or, on an error here,
                # instead of it).
                self._cond.notify_all()
            if ticket.state is not _KEEP and ticket.state != self._state:
                try:
                    self._switch(ticket.state)
                except BaseException:
                    self._state = UNKNOWN
                    raise
                self._state = ticket.state
            self._running += 1
            self._alone = ticket.alone

    def _leave(self, ticket: _Ticket, *, forget: bool) -> None:
        with self._cond:
            self._running -= 1
            if ticket.alone:
                self._alone = False
            if forget:
                self._state = UNKNOWN
            idle = not self._running and not self._queue
            try:
                if idle and self._rest is not _KEEP and self._state != self._rest:
                    self._state = UNKNOWN  # until the switch is done: a failed one is retried
                    self._switch(self._rest)
                    self._state = self._rest
            finally:
                self._cond.notify_all()
