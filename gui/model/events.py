"""A tiny Qt-free event emitter: the document's change events, which the Qt layer turns into signals.

Invariant: ``emit`` calls every connected callback once, in the order they
were connected, with the emitted arguments; a callback connected twice is
called once; ``disconnect`` of a callback that is not connected does nothing.
"""

from __future__ import annotations

from collections.abc import Callable


class EventEmitter:
    """One kind of change (napari's ``EventEmitter``, reduced to what the document needs).

    Examples
    --------
    >>> seen = []
    >>> changed = EventEmitter("changed")
    >>> changed.connect(seen.append)
    >>> changed.emit("naive")
    >>> changed.disconnect(seen.append)
    >>> changed.emit("dsatur")
    >>> seen
    ['naive']
    """

    def __init__(self, name: str):
        self.name = name
        self._callbacks: list[Callable] = []

    def connect(self, callback: Callable) -> None:
        """Call ``callback(*args)`` on every later ``emit``."""
        if callback not in self._callbacks:
            self._callbacks.append(callback)

    def disconnect(self, callback: Callable) -> None:
        """Stop calling ``callback``."""
        if callback in self._callbacks:
            self._callbacks.remove(callback)

    def emit(self, *args) -> None:
        """Call every connected callback with ``args``, in connection order."""
        for callback in list(self._callbacks):
            callback(*args)

    def __len__(self) -> int:
        return len(self._callbacks)

    def __repr__(self) -> str:
        return f"EventEmitter({self.name!r}, {len(self)} connected)"


class DocumentEvents:
    """The document's change events, one emitter each.

    ``plans()`` the list of plans; ``plan(name)`` one plan's contents;
    ``current()`` which plan is current; ``workload()`` workload and options;
    ``selection(value or None)``; ``instruction(index or None)``;
    ``measurements(name)``.

    Examples
    --------
    >>> events = DocumentEvents()
    >>> sorted(events.names)[:3]
    ['current', 'instruction', 'measurements']
    """

    names = ("plans", "plan", "current", "workload", "selection", "instruction", "measurements")

    def __init__(self):
        for name in self.names:
            setattr(self, name, EventEmitter(name))
