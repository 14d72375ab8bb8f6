"""The ``regtune`` console script's entry point: Ctrl+C during start-up is one line too.

Invariant: this module imports nothing but the standard library before
:func:`gui.cli.main` takes over, so an interrupt while the heavy modules
(numpy, networkx) load is caught here and reported like any other.
"""

from __future__ import annotations

import sys

INTERRUPTED = "regtune: interrupted (Ctrl+C); files already written are complete and kept"


def main() -> int:
    """Import the command and run it; exit 130 with one line on Ctrl+C at any point."""
    try:
        from gui.cli import main as command

        return command()
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
