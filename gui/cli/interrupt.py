"""Ctrl+C and SIGTERM for every regtune command: one line, the workers stopped, exit 130 or 143.

Invariant: imports only the standard library, so gui.entry can install the
handler before the heavy modules load.
"""

from __future__ import annotations

import sys

INTERRUPTED = "regtune: interrupted (Ctrl+C); files already written are complete and kept"
TERMINATED = "regtune: terminated (SIGTERM); files already written are complete and kept"


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, an IDE's stop button, a closed session), unwound like Ctrl+C."""


def interrupted(exc: KeyboardInterrupt) -> int:
    """Stop the kernel workers still running, say why in one line; the exit status (130, or 143 for SIGTERM)."""
    run = sys.modules.get("kernels.run")
    if run is not None:
        run.stop_workers()
    terminated = isinstance(exc, Terminated)
    print(TERMINATED if terminated else INTERRUPTED, file=sys.stderr)
    return 143 if terminated else 130
