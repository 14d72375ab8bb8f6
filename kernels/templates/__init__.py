"""The generic parts of every generated kernel module, kept as real Python files.

Each template module is importable, linted and tested like any other; the
text after its ``# -- template --`` line is what a generated module
embeds, byte for byte (:func:`template_text`).

Invariant: the template text of a module is its file's text after the
marker line, unchanged; the code above the marker only makes the file a
module of its own and never reaches generated source.
"""

from __future__ import annotations

from pathlib import Path

MARKER = "# -- template --\n"


def template_text(name: str) -> str:
    """The embedded text of template module ``name`` (``helpers`` or ``main``): its file after the marker.

    Examples
    --------
    >>> template_text("helpers").startswith("\\nif config.ENABLE_CUDASIM:")
    True
    """
    text = (Path(__file__).with_name(f"{name}.py")).read_text(encoding="utf-8")
    if text.count(MARKER) != 1:
        raise ValueError(f"kernels/templates/{name}.py must hold the line {MARKER.strip()!r} exactly once")
    return text.split(MARKER, 1)[1]
