"""One Qt-free notification point for errors from workers and uncaught exceptions; dialogs subscribe.

Invariant: ``notify`` never raises; every subscriber gets every notification
in order; with no subscriber the message goes to stderr, so nothing is lost.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass


@dataclass(frozen=True)
class Notification:
    """A one-line message and optional details (a traceback, a tool's output)."""

    message: str
    details: str = ""
    severity: str = "error"


_subscribers: list = []


def subscribe(callback) -> None:
    _subscribers.append(callback)


def unsubscribe(callback) -> None:
    if callback in _subscribers:
        _subscribers.remove(callback)


def notify(message: str, details: str = "", severity: str = "error") -> None:
    note = Notification(message.strip().splitlines()[0] if message.strip() else "error", details, severity)
    if not _subscribers:
        print(f"regtune: {note.severity}: {note.message}", file=sys.stderr)
    for callback in list(_subscribers):
        try:
            callback(note)
        except Exception:  # noqa: BLE001 - a broken subscriber must not hide the notification
            traceback.print_exc()


def notify_exception(exc: BaseException) -> None:
    notify(f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc),
           "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
