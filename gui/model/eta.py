"""Time left from a moving window of recent progress, Qt-free (the commands' progress lines and the window's).

Invariant: the rate is measured over the last :data:`WINDOW` reports (the
items done between the oldest and the newest of them, over the time between
them), so a slow first item (a cold compile, a first import) stops skewing
the estimate once a few more are done; no estimate before two reports with
progress between them.

Examples
--------
>>> rate = MovingRate(window=3)
>>> for t, done in [(0, 0), (40, 1), (41, 2), (42, 3), (43, 4)]:   # a 40 s first item, then 1 s each
...     rate.report(done, t)
>>> rate.per_second(), rate.left(4, 10)
(1.0, 6.0)
>>> MovingRate().left(0, 10) is None
True
"""

from __future__ import annotations

from collections import deque

#: how many recent reports the rate is measured over
WINDOW = 8


class MovingRate:
    """Items per second over the last ``window`` reports of (items done, time)."""

    def __init__(self, window: int = WINDOW):
        self.samples: deque = deque(maxlen=max(window, 2))

    def report(self, done: int, now: float) -> None:
        if self.samples and done < self.samples[-1][0]:      # a new count started: forget the old one
            self.samples.clear()
        if self.samples and done == self.samples[-1][0]:
            return                                            # no progress: the rate is from the last change
        self.samples.append((done, now))

    def per_second(self) -> float | None:
        if len(self.samples) < 2:
            return None
        (d0, t0), (d1, t1) = self.samples[0], self.samples[-1]
        return (d1 - d0) / (t1 - t0) if t1 > t0 and d1 > d0 else None

    def left(self, done: int, total: int) -> float | None:
        """Seconds left for ``total - done`` more items at the recent rate (None: no rate yet)."""
        rate = self.per_second()
        return None if rate is None else max(total - done, 0) / rate


def left_words(rate: MovingRate, done: int, total: int) -> str:
    """', about N s left' from the recent rate, '' before there is one.

    Examples
    --------
    >>> r = MovingRate()
    >>> r.report(0, 0.0); r.report(2, 4.0)
    >>> left_words(r, 2, 10)
    ', about 16 s left'
    """
    left = rate.left(done, total)
    if left is None:
        return ""
    return f", about {left:.0f} s left" if left < 120 else f", about {left / 60:.0f} min left"
