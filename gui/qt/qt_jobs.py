"""Background jobs for the window: plain engine/kernels functions run on a QThreadPool.

Each job gets a progress-and-cancel object (engine.base.jobs.Progress); results
and errors come back on the GUI thread through Qt signals. Starting a job
under a key that is still running cancels the old one (its result is
dropped).
"""

from __future__ import annotations

import threading
import traceback

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from engine.base.jobs import Cancelled


class _Signals(QObject):
    progress = Signal(int, int)
    partial = Signal(object)
    finished = Signal(object)
    failed = Signal(str, str)


class QtJob(QRunnable):
    """One background call of ``fn(progress, *args)``."""

    def __init__(self, fn, args=()):
        super().__init__()
        self.fn, self.args = fn, args
        self.signals = _Signals()
        self._cancel = threading.Event()
        self.setAutoDelete(False)

    # engine.base.jobs.Progress
    def advance(self, done: int, total: int) -> None:
        if not self.cancelled():         # a cancelled job's window may be gone, and its signals with it
            self.signals.progress.emit(done, total)

    def partial(self, value) -> None:
        """Part of the result, before the rest (shown by ``on_partial``; dropped once cancelled)."""
        if not self.cancelled():
            self.signals.partial.emit(value)

    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def run(self) -> None:
        try:
            result = self.fn(self, *self.args)
        except Cancelled:
            return
        except Exception as e:  # noqa: BLE001 - reported on the GUI thread
            if not self.cancelled():
                self.signals.failed.emit(str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__,
                                         traceback.format_exc())
            return
        if not self.cancelled():
            self.signals.finished.emit(result)


class QtJobRunner(QObject):
    """Owns the thread pool; one running job per key."""

    started = Signal(str)
    stopped = Signal(str)
    progress = Signal(str, int, int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        self.jobs: dict[str, QtJob] = {}

    def start(self, key: str, fn, args=(), on_done=None, on_error=None, on_partial=None) -> QtJob:
        self.cancel(key)
        job = QtJob(fn, args)
        self.jobs[key] = job

        def done(result, job=job):
            if self.jobs.get(key) is job:
                del self.jobs[key]
                self.stopped.emit(key)
                if on_done:
                    on_done(result)

        def failed(message, details, job=job):
            if self.jobs.get(key) is job:
                del self.jobs[key]
                self.stopped.emit(key)
                if on_error:
                    on_error(message, details)

        if on_partial is not None:
            job.signals.partial.connect(lambda value, job=job: on_partial(value) if self.jobs.get(key) is job else None)
        job.signals.finished.connect(done)
        job.signals.failed.connect(failed)
        job.signals.progress.connect(lambda d, t, key=key: self.progress.emit(key, d, t))
        self.started.emit(key)
        self.pool.start(job)
        return job

    def cancel(self, key: str) -> None:
        job = self.jobs.pop(key, None)
        if job is not None:
            job.cancel()
            self.stopped.emit(key)

    def cancel_all(self) -> None:
        for key in list(self.jobs):
            self.cancel(key)

    def busy(self) -> bool:
        return bool(self.jobs)

    def wait(self, msecs: int = 60000) -> bool:
        return self.pool.waitForDone(msecs)
