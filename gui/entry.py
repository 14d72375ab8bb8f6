"""The ``regtune`` console script's entry point: Ctrl+C during start-up is one line too.

Invariant: this module imports nothing but the standard library before
:func:`gui.cli.main` takes over, so an interrupt while the heavy modules
(numpy, networkx) load is caught here and reported like any other.
"""

from __future__ import annotations

import signal
import sys

INTERRUPTED = "regtune: interrupted (Ctrl+C); files already written are complete and kept"
TERMINATED = "regtune: terminated (SIGTERM); files already written are complete and kept"


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, an IDE's stop button, a closed session), unwound like Ctrl+C."""


def _terminate(signum, frame):
    raise Terminated()


def interrupted(exc: KeyboardInterrupt) -> int:
    """Stop the kernel workers still running, say why in one line; the exit status (130, or 143 for SIGTERM)."""
    run = sys.modules.get("kernels.run")
    if run is not None:
        run.stop_workers()
    terminated = isinstance(exc, Terminated)
    print(TERMINATED if terminated else INTERRUPTED, file=sys.stderr)
    return 143 if terminated else 130


def main() -> int:
    """Import the command and run it; one line and exit 130 on Ctrl+C (143 on SIGTERM) at any point."""
    signal.signal(signal.SIGTERM, _terminate)      # once, where the process starts
    try:
        from gui.cli import main as command

        return command()
    except KeyboardInterrupt as exc:
        return interrupted(exc)


if __name__ == "__main__":
    sys.exit(main())
