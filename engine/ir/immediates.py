"""The bits an immediate stands for, and the 64-bit mixing hash both interpreters and the symbolic checker
use for values that are not integers (a symbol, a float written as text).

Examples
--------
>>> immediate("0x10"), immediate("-1") == MASK64
(16, True)
"""

from __future__ import annotations

import functools
import zlib

MASK32 = 0xFFFFFFFF
MASK64 = (1 << 64) - 1


def mix(*words: int) -> int:
    """A 64-bit mixing hash of integers (FNV-style, then xorshift)."""
    h = 0xCBF29CE484222325
    for w in words:
        h = ((h ^ (w & MASK64)) * 0x100000001B3) & MASK64
        h ^= h >> 29
    return h


@functools.lru_cache(maxsize=1024)
def text_tag(text: str) -> int:
    return zlib.crc32(text.encode())


def immediate(text: str) -> int:
    """The bits of an immediate: integers as written, anything else hashed."""
    try:
        return int(text, 0) & MASK64
    except ValueError:
        return mix(text_tag(text))
