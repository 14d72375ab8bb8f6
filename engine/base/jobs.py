"""Long jobs report progress and can be cancelled through one small protocol.

Invariant: a job calls ``progress.advance(done, total)`` as it goes and
stops soon after ``progress.cancelled()`` turns true, raising
:class:`Cancelled`; the GUI supplies an object that forwards to its thread,
the CLI and tests a :class:`NullProgress` or a :class:`PrintProgress`.
"""

from __future__ import annotations

import sys
from typing import Protocol

from engine.base.errors import RegtuneError


class Cancelled(RegtuneError):
    """The user cancelled the job."""


class Progress(Protocol):
    def advance(self, done: int, total: int) -> None: ...

    def cancelled(self) -> bool: ...


class NullProgress:
    """Reports nothing and never cancels."""

    def advance(self, done: int, total: int) -> None:
        pass

    def cancelled(self) -> bool:
        return False


class PrintProgress(NullProgress):
    """Prints 'done/total' on stderr every ``every`` items."""

    def __init__(self, label: str, every: int = 250):
        self.label, self.every = label, every

    def advance(self, done: int, total: int) -> None:
        if done == total or done % self.every == 0:
            print(f"{self.label}: {done}/{total}", file=sys.stderr, flush=True)
