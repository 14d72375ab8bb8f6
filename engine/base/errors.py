"""One exception family for everything RegTune reports to a user.

Invariant: every message is a single line that names what is wrong and
where (file, line, value, instruction or register), so the CLI can print it
as is and the window can show it in a dialog without losing the session.
"""


class RegtuneError(Exception):
    """Base class of every error RegTune reports to a user."""


class ParseError(RegtuneError):
    """The IR text could not be parsed (the message names the line)."""


class PlanError(RegtuneError):
    """A plan file or plan object is malformed or invalid."""


class LimitError(RegtuneError):
    """A program or plan asks for more work than one of :mod:`engine.base.limits` allows (names it and the figure)."""


class AllocationError(RegtuneError):
    """An allocator could not produce a plan (unknown name, budget too small)."""


class VerificationError(RegtuneError):
    """Executing the allocated program did not reproduce the original."""


class InterpreterError(RegtuneError):
    """The IR interpreter could not run a program (undefined value, step limit)."""


class TimeLimitError(InterpreterError):
    """A run went past its time limit (the execution check of a plan that runs too long)."""


class WriteError(RegtuneError, OSError):
    """A file could not be written (a full disk, a read-only folder); what was there is as it was. Also an
    OSError, so a caller that can do without the file (the build cache, the autosave) keeps catching it."""
