"""Progress of the command's long work on stderr: a rich progress bar on a terminal, plain lines otherwise.

Invariant: nothing here writes to stdout, so a command's output stays what
a tool reads; every line or bar names the stage it counts, and a rate and a
time left are shown only once items have been done to compute them from,
measured over the last few items (gui.model.eta), so a slow first item does
not skew them; a stage whose total is not known yet says so (never "0/0")
and shows its total as soon as it is known.
A :class:`Stage` satisfies :class:`engine.base.jobs.Progress`, so the engine and
kernels pipelines report to it as they report to the window's workers.

Examples
--------
>>> import io
>>> stream = io.StringIO()
>>> with CommandProgress("demo", stream=stream, interval=0) as progress:
...     stage = progress.stage("counting", 2)
...     stage.advance(1, 2)
...     stage.advance(2, 2)
>>> stream.getvalue().splitlines()[0]
'regtune demo: counting: 0/2'
"""

from __future__ import annotations

import sys
import time
from typing import Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from gui.model.eta import MovingRate


class _RateColumn(ProgressColumn):
    """Items per second, once rich has measured a speed."""

    def render(self, task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{_rate(speed)}", style="progress.data.speed")


def _rate(per_second: float) -> str:
    """A rate in words that reads at any speed.

    Examples
    --------
    >>> _rate(12.5), _rate(0.25)
    ('12.5/s', '4.0 s each')
    """
    return f"{per_second:.1f}/s" if per_second >= 1 else f"{1 / per_second:.1f} s each"


class Stage:
    """One stage of a command's work, counted in items (a :class:`engine.base.jobs.Progress`)."""

    def __init__(self, owner: CommandProgress, name: str, total: int):
        self.owner, self.name, self.total = owner, name, total
        self.done, self.started = 0, time.monotonic()
        self.rate = MovingRate()
        self.rate.report(0, self.started)

    def advance(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        self.rate.report(done, time.monotonic())
        self.owner.show(self)

    def cancelled(self) -> bool:
        return False

    def rename(self, name: str) -> None:
        """The stage's name from now on (the plan or step it works on)."""
        self.name = name
        self.owner.show(self, force=True)

    def left(self) -> str:
        """Rate and time left in words, from the last few items (gui.model.eta; '' before there is a rate)."""
        rate = self.rate.per_second()
        if not self.done or rate is None or not self.total:
            return ""
        return f" ({_rate(rate)}, about {max(self.total - self.done, 0) / rate:.0f} s left)"

    def count(self) -> str:
        """'done/total', or, while the total is not known, how many are done so far."""
        return f"{self.done}/{self.total}" if self.total else f"{self.done} done (total not known yet)"


class CommandProgress:
    """The progress display of one command (a context manager): a bar on a terminal, else plain lines at
    most every ``interval`` seconds per stage, and whenever a stage starts, ends, names another step or has
    done ``every`` more items since its last line (so a fast sweep still shows its count often)."""

    def __init__(self, command: str, stream=None, interval: float = 5.0, terminal: bool | None = None,
                 every: int = 250):
        self.command, self.stream, self.interval, self.every = command, stream or sys.stderr, interval, every
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.terminal = isatty() if terminal is None else terminal
        self.bar, self.tasks, self.last = None, {}, {}

    def __enter__(self) -> Self:
        if self.terminal:
            self.bar = Progress(TextColumn(f"regtune {self.command}: " + "{task.description}"), BarColumn(),
                                MofNCompleteColumn(), _RateColumn(), TimeRemainingColumn(),
                                console=Console(file=self.stream), transient=False)
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def stage(self, name: str, total: int) -> Stage:
        """A new stage of ``total`` items, shown at once."""
        stage = Stage(self, name, total)
        if self.bar is not None:
            self.tasks[id(stage)] = self.bar.add_task(name, total=total or None)    # None: rich pulses
        self.show(stage, force=True)
        return stage

    def show(self, stage: Stage, force: bool = False) -> None:
        if self.bar is not None:
            self.bar.update(self.tasks[id(stage)], description=stage.name, completed=stage.done,
                            total=stage.total or None)
            return
        now = time.monotonic()
        last_time, last_name, last_done, last_total = self.last.get(id(stage), (0.0, None, 0, 0))
        if (force or stage.name != last_name or (stage.total and stage.done >= stage.total)
                or stage.total != last_total or now - last_time >= self.interval
                or stage.done - last_done >= self.every):
            self.last[id(stage)] = (now, stage.name, stage.done, stage.total)
            print(f"regtune {self.command}: {stage.name}: {stage.count()}{stage.left()}",
                  file=self.stream, flush=True)


class Steps:
    """A :class:`engine.base.jobs.Progress` for one job of several inside a stage: the job's own steps (named in
    ``names``) count as items of the stage, from ``base`` on."""

    def __init__(self, stage: Stage, base: int, label: str, names: tuple[str, ...]):
        self.stage, self.base, self.label, self.names = stage, base, label, names

    def advance(self, done: int, total: int) -> None:
        step = self.names[min(done, len(self.names) - 1)]
        self.stage.name = f"{self.label}: {step}" if done < total else f"{self.label}: done"
        self.stage.advance(self.base + done, self.stage.total)

    def cancelled(self) -> bool:
        return False
