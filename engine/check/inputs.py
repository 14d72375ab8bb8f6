"""The input model: what a run of the interpreter reads for each ``param`` and special register.

Invariant: an input's value is a pure function of the seed, the input's
name, its kind and the :class:`InputModel`, never of the order in which a
run reads it, so every run of one program on one seed (virtual or physical
registers, spill code or not) sees the same inputs; and the value lies in
the range the model names for it, else in the generic default of its kind:

- a 64-bit (``u64``) parameter is a pointer: the k-th such parameter of a
  program (k = 0, 1, ... in the order of the parameters' names, so a program
  reordered within its dependences draws the same inputs) gets the base
  ``(k + 1) << 40`` plus a seed-dependent offset, a multiple of 256 below
  2**32, so buffers are distinct, 256-byte aligned and 1 TiB apart;
- any other parameter is a small size, 1..1024;
- ``%tid.x`` is 0..127, ``%tid.y`` and ``%tid.z`` 0 (a block of 128 threads:
  ``%ntid.x`` 128, ``%ntid.y``, ``%ntid.z`` 1); ``%ctaid.*`` is 0..15 (a grid
  of 16: ``%nctaid.*`` 16); ``%laneid`` 0..31, ``%warpid`` 0..3;
- any other special register is any 32-bit word.

A workload knows its inputs best and names their ranges (GEMM: its batch,
grid and ``beta``; MHA: its grid) through :func:`engine.workloads.input_model`;
a program read from an IR file gets :data:`GENERIC`.

A model may also name *cases*: inputs chosen, not drawn, to take each of the
workload's guards both ways at its edge (GEMM: the first thread past the
batch's end, the last matrix inside it, ``beta`` zero and not). Case k is
run as seed ``-(k + 1)`` (:attr:`InputModel.case_seeds`); the inputs it names
take exactly its values, every other input is drawn as for any seed.

Examples
--------
>>> model = InputModel.of({"batch": (64, 128), "%tid.x": (0, 31)})
>>> all(64 <= model.value(Input("batch"), seed) <= 128 for seed in range(100))
True
>>> model.value(Input("%tid.y"), 5), model.value(Input("%ntid.x"), 5)
(0, 128)
>>> a, b = (model.value(Input(p, pointer=k), 0) for k, p in enumerate("AB"))
>>> a % 256, b - a >= 1 << 39
(0, True)
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from engine.base.errors import RegtuneError

MASK64 = (1 << 64) - 1
#: the generic default of a non-pointer parameter
SIZE_RANGE = (1, 1024)
#: the generic default of the special registers (inclusive ranges)
SPECIAL_RANGES = {
    "%tid.x": (0, 127), "%tid.y": (0, 0), "%tid.z": (0, 0),
    "%ntid.x": (128, 128), "%ntid.y": (1, 1), "%ntid.z": (1, 1),
    "%ctaid.x": (0, 15), "%ctaid.y": (0, 15), "%ctaid.z": (0, 15),
    "%nctaid.x": (16, 16), "%nctaid.y": (16, 16), "%nctaid.z": (16, 16),
    "%laneid": (0, 31), "%warpid": (0, 3),
}
#: pointer bases are this far apart
POINTER_SPACING = 1 << 40
POINTER_ALIGN = 256


@dataclass(frozen=True)
class Input:
    """One input a program reads: a parameter by its symbol (``batch``) or a special register (``%tid.x``).

    ``pointer`` is k for the program's k-th 64-bit parameter, None for any other input.
    """

    name: str
    pointer: int | None = None


def _word(seed: int, name: str) -> int:
    """A 64-bit word mixed from the seed and the input's name (splitmix64's finaliser)."""
    x = (seed * 0x9E3779B97F4A7C15 + zlib.crc32(name.encode()) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


@dataclass(frozen=True)
class InputModel:
    """Inclusive ranges (name, lo, hi) of named inputs, sorted by name; every other input takes its default.

    Frozen and hashable: runs are memoized per model.
    """

    ranges: tuple[tuple[str, int, int], ...] = ()
    #: (what the case is, ((input, value), ...)) for each chosen input
    cases: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()

    @classmethod
    def of(cls, ranges: Mapping[str, tuple[int, int]], cases: Mapping[str, Mapping[str, int]] | None = None
           ) -> "InputModel":
        """A model from ``name -> (lo, hi)``, each range checked (lo <= hi, both within 64 bits), and the
        cases ``description -> {name: value}`` in the order given."""
        for name, (lo, hi) in sorted(ranges.items()):
            if not 0 <= lo <= hi <= MASK64:
                raise RegtuneError(f"input {name}: range {lo}..{hi} is empty or outside 0..2**64-1")
        chosen = tuple((what, tuple(sorted((n, int(v) & MASK64) for n, v in values.items())))
                       for what, values in (cases or {}).items())
        return cls(tuple((name, int(lo), int(hi)) for name, (lo, hi) in sorted(ranges.items())), chosen)

    @property
    def case_seeds(self) -> tuple[int, ...]:
        """The seeds the cases run as: -1, -2, ..."""
        return tuple(-(k + 1) for k in range(len(self.cases)))

    def describe(self, seed: int) -> str:
        """A seed in words: ``seed 3``, or a case's own description."""
        return self.cases[-seed - 1][0] if seed < 0 else f"seed {seed}"

    def range_of(self, item: Input) -> tuple[int, int] | None:
        """The inclusive range ``item`` is drawn from; None for a pointer or an unconstrained register."""
        for name, lo, hi in self.ranges:
            if name == item.name:
                return lo, hi
        if item.pointer is not None:
            return None
        return SPECIAL_RANGES.get(item.name) if item.name.startswith("%") else SIZE_RANGE

    def value(self, item: Input, seed: int) -> int:
        """The value of ``item`` on ``seed`` (see the module's invariant)."""
        if seed < 0:
            for name, value in self.cases[-seed - 1][1]:
                if name == item.name:
                    return value
        word = _word(seed, item.name)
        bounds = self.range_of(item)
        if bounds is not None:
            return bounds[0] + word % (bounds[1] - bounds[0] + 1)
        if item.pointer is not None:
            return (item.pointer + 1) * POINTER_SPACING + (word >> 32) // POINTER_ALIGN * POINTER_ALIGN
        return word & 0xFFFFFFFF


#: the model of a program with no workload: every input at its default
GENERIC = InputModel()
