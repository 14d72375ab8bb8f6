"""The IR's parser: DESIGN.md's text form to a :class:`engine.ir.core.Program`, and the rules every parsed
instruction keeps (:mod:`engine.ir.rules`).

Invariant: ``parse(print_program(p)) == p`` for every program, and ``print_program(parse(text)) == text`` for
every text in canonical form; whatever parses can be allocated, checked and written as a kernel. A bad text
is one :class:`ParseError` naming the source, the line and what was expected.

Examples
--------
>>> p = parse(".kernel k\\n.block entry\\n  %pa:u64 = param A\\n  exit\\n")
>>> p.values["pa"].width
2
"""

from __future__ import annotations

from engine.base.errors import ParseError
from engine.base.fields import excerpt
from engine.base.limits import (
    MAX_BLOCKS,
    MAX_DEFS,
    MAX_FILE_BYTES,
    MAX_INSTRUCTIONS,
    MAX_OPERANDS,
)
from engine.ir.core import (
    _DEF_RE,
    _GUARD_RE,
    _NAME_RE,
    _OPCODE_RE,
    WIDTHS,
    Block,
    Imm,
    Instruction,
    Operand,
    Program,
    Use,
    Value,
)
from engine.ir.rules import (
    COMPARISONS,
    LETTER_KINDS,
    PARAM_TYPES,
    immediate_error,
    shape_of,
)


def _split_operands(text: str) -> list[str]:
    return [t.strip() for t in text.split(",")] if text.strip() else []



def parse_instruction(text: str, where: str = "instruction", phase: str | None = None) -> Instruction:
    """Parse one instruction line (without the block structure).

    Examples
    --------
    >>> str(parse_instruction("@!%p st.global %pc, 0, %x"))
    '@!%p st.global %pc, 0, %x'
    """
    return Parser(where).instruction_text(text, where, phase)


def check_instruction(ins: Instruction, where: str, types: dict | None = None) -> bool:
    """Refuse, in one :class:`ParseError` naming ``where``, an instruction that breaks the rules of
    :mod:`engine.ir.rules`: a known opcode's shape (operand count, values and immediates, results, guard),
    the kind of each immediate it reads, and for any other ``ld.*`` / ``st.*`` an address and (a store) a
    value. ``types`` (value name -> type) gives a ``setp``'s first operand its type, which says what its
    immediate is read as; without it that immediate waits: the result is False when one did.

    Examples
    --------
    >>> check_instruction(parse_instruction("st.local 7, %x"), "k.txt line 3")
    True
    >>> check_instruction(Instruction("st.global", (), (Use("pc"), Imm("0"))), "k.txt line 3")
    Traceback (most recent call last):
    ...
    engine.base.errors.ParseError: k.txt line 3: expected 'st.global %ADDRESS, OFFSET, VALUE' (st.global takes 3 \
operands, got 2)
    """
    shape = shape_of(ins.opcode)
    if shape is None:
        _check_opaque(ins, where)
        return True
    if len(ins.operands) != len(shape.operands) or len(ins.defs) != shape.defs:
        raise ParseError(f"{where}: expected '{_written(shape)}' ({_counts(ins, shape)})")
    if ins.guard is not None and not shape.guard:
        raise ParseError(f"{where}: {ins.opcode} cannot be guarded (a parameter is always read)")
    if shape.result is not None and ins.defs[0].type != shape.result:
        raise ParseError(f"{where}: {ins.opcode} defines a value of type {shape.result}, got "
                         f"%{ins.defs[0].name}:{ins.defs[0].type}")
    if shape.opcode == "param" and ins.defs[0].type not in PARAM_TYPES:
        raise ParseError(f"{where}: parameter %{ins.defs[0].name} has type {ins.defs[0].type}, which a kernel "
                         f"cannot take (known: {', '.join(PARAM_TYPES)})")
    kind = _number_kind(ins, types)
    for k, (letter, op) in enumerate(zip(shape.operands, ins.operands), start=1):
        _check_operand(ins, shape, k, letter, op, kind, where)
    return kind != _WAITING


#: the kind of a setp's immediate whose first operand's type is not known yet
_WAITING = "waiting"


def _written(shape) -> str:
    return f"%X:T = {shape.form}" if shape.defs else shape.form


def _counts(ins: Instruction, shape) -> str:
    if len(ins.operands) != len(shape.operands):
        return f"{ins.opcode} takes {len(shape.operands)} operand{'s' * (len(shape.operands) != 1)}, got {len(ins.operands)}"
    return f"{ins.opcode} defines {shape.defs} value{'s' * (shape.defs != 1)}, got {len(ins.defs)}"


def _number_kind(ins: Instruction, types: dict | None) -> str:
    """What an ``x`` operand's immediate is read as: the result's type, or for ``setp`` its first operand's."""
    if not ins.opcode.startswith("setp."):
        return ins.defs[0].type if ins.defs else "i32"
    first = ins.operands[0]
    if first.__class__ is not Use:
        return "i32"
    return (types or {}).get(first.name, _WAITING)


def _check_operand(ins: Instruction, shape, k: int, letter: str, op, kind: str, where: str) -> None:
    is_value = op.__class__ is Use
    if letter == "%" or (letter in "xf" and is_value):
        if not is_value:
            raise ParseError(f"{where}: expected '{_written(shape)}': operand {k} of {ins.opcode} must be a value, "
                             f"got {excerpt(op.text)}")
        return
    if is_value:
        raise ParseError(f"{where}: expected '{_written(shape)}': operand {k} of {ins.opcode} must be an "
                         f"immediate, got %{op.name}")
    read_as = kind if letter == "x" else LETTER_KINDS[letter]
    if read_as == _WAITING:
        return
    error = immediate_error(op.text, read_as) or (letter == "i" and immediate_error(op.text, kind))
    if error:
        raise ParseError(f"{where}: operand {k} of {ins.opcode}: {error}")


def _check_opaque(ins: Instruction, where: str) -> None:
    """Any other load or store reads an address (and a store a value) and a load defines: the interpreter
    treats every ``ld.*`` and ``st.*`` as memory. Local memory is spill slots only (a kernel holds nothing
    else there, and the checker tells spill code from the program's own accesses by slot). A ``setp`` needs
    a comparison the kernel knows."""
    base = ins.opcode.split(".", 1)[0]
    if base == "setp":
        raise ParseError(f"{where}: unknown comparison {excerpt(ins.opcode)} (known: "
                         f"{', '.join('setp.' + c for c in COMPARISONS)})")
    if ins.opcode.startswith(("ld.local.", "st.local.")):
        raise ParseError(f"{where}: {excerpt(ins.opcode)}: local memory holds spill slots only, read with "
                         "'ld.local SLOT' and written with 'st.local SLOT, %VALUE'")
    if base == "st" and (len(ins.operands) < 2 or ins.defs):
        raise ParseError(f"{where}: expected '{ins.opcode} ADDRESS, OFFSET, %VALUE' (a store reads an address "
                         "and a value and defines nothing)")
    if base == "ld" and (not ins.operands or not ins.defs):
        raise ParseError(f"{where}: expected '%X:T = {ins.opcode} ADDRESS, OFFSET' (a load reads an address "
                         "and defines a value)")


class Parser:
    """One parse: the blocks so far, the structure checked line by line, and the memos of operand and
    definition texts already read (a program repeats the same operand texts many times). The memos live as
    long as the parser, so nothing of one parse stays in the process after it."""

    def __init__(self, source: str):
        self.source = source
        #: operand text -> operand, definition text -> values, opcodes already checked against the pattern
        self.operands: dict[str, Operand] = {}
        self.defs: dict[str, tuple[Value, ...]] = {}
        self.opcodes: set[str] = set()
        self.name: str | None = None
        self.blocks: list[tuple[str, list[Instruction], int]] = []
        self.types: dict[str, tuple[str, int]] = {}
        self.uses: list[tuple[str, int]] = []
        self.branches: list[tuple[str, int]] = []
        self.guards: list[tuple[str, int]] = []
        self.phase: str | None = None
        self.count = 0
        self.labels: set[str] = set()
        #: parameter symbol -> the line declaring it
        self.params: dict[str, tuple[int, str]] = {}  # parameter -> (line of its first read, its type)
        #: setp instructions whose immediate is read as the type of their first operand, known at the end
        self.comparisons: list[tuple[Instruction, int]] = []

    def where(self, lineno: int) -> str:
        return f"{self.source} line {lineno}"

    def directive(self, line: str, lineno: int) -> None:
        word, _, arg = line.partition(" ")
        arg = arg.strip()
        if word == ".phase" and (arg == "-" or _NAME_RE.match(arg)):
            if not self.blocks:
                raise ParseError(f"{self.where(lineno)}: '.phase' before the first '.block'")
            self.phase = None if arg == "-" else arg
            return
        if word not in (".kernel", ".block") or not _NAME_RE.match(arg):
            raise ParseError(f"{self.where(lineno)}: expected '.kernel NAME', '.block NAME' or '.phase NAME', got {excerpt(line)}")
        self.phase = None
        if word == ".kernel":
            if self.name is not None:
                raise ParseError(f"{self.where(lineno)}: a second '.kernel' line")
            self.name = arg
            return
        if self.name is None:
            raise ParseError(f"{self.where(lineno)}: expected '.kernel NAME' before the first block")
        if arg in self.labels:
            raise ParseError(f"{self.where(lineno)}: block {excerpt(arg)} is defined twice")
        if len(self.blocks) >= MAX_BLOCKS:
            raise ParseError(f"{self.where(lineno)}: more than {MAX_BLOCKS} blocks (RegTune's limit for one program)")
        self.labels.add(arg)
        self.blocks.append((arg, [], lineno))

    def instruction(self, line: str, lineno: int) -> None:
        where = self.where(lineno)
        if not self.blocks:
            raise ParseError(f"{where}: instruction before the first '.block'")
        body = self.blocks[-1][1]
        if body and body[-1].is_terminator:
            raise ParseError(f"{where}: instruction after the terminator '{body[-1].opcode}' of block {excerpt(self.blocks[-1][0])}")
        self.count += 1
        if self.count > MAX_INSTRUCTIONS:
            raise ParseError(f"{where}: more than {MAX_INSTRUCTIONS} instructions (RegTune's limit for one program)")
        ins = self.instruction_text(line, where, self.phase)
        for d in ins.defs:
            known = self.types.setdefault(d.name, (d.type, lineno))
            if known[0] != d.type:
                raise ParseError(f"{where}: %{d.name} is defined as {d.type} here but as {known[0]} on line {known[1]}")
        if ins.uses:
            self.uses.append((ins.uses, lineno))
        if ins.opcode in ("br", "cbr"):
            self.branches.extend((t, lineno) for t in ins.targets)
        if ins.guard is not None:
            self.guards.append((ins.guard, lineno))
        if ins.opcode == "cbr":
            self.guards.append((ins.operands[0].name, lineno))
        self.note(ins, lineno)
        body.append(ins)

    def note(self, ins: Instruction, lineno: int) -> None:
        """Remember what the rules of the whole program need: parameters (each of one type, however often it
        is read: a rematerialised value reads its parameter again), comparisons."""
        if ins.opcode == "param":
            symbol, type_ = ins.operands[0].text, ins.defs[0].type if ins.defs else None
            first, known = self.params.setdefault(symbol, (lineno, type_))
            if first != lineno and known != type_:
                raise ParseError(f"{self.where(lineno)}: parameter {symbol} is read as {type_} here but as {known} "
                                 f"on line {first} (a kernel parameter has one type)")
        elif ins.opcode.startswith("setp.") and ins.operands[0].__class__ is Use:
            self.comparisons.append((ins, lineno))


    def operand(self, token: str, where: str) -> Operand:
        known = self.operands.get(token)
        if known is not None:
            return known
        if token.startswith("%"):
            if not _NAME_RE.match(token[1:]):
                raise ParseError(f"{where}: bad value name {excerpt(token)}")
            operand = Use(token[1:])
        elif not token:
            raise ParseError(f"{where}: expected an operand, got {excerpt(token)}")
        elif immediate_error(token, None):
            raise ParseError(f"{where}: {immediate_error(token, None)}")
        else:
            operand = Imm(token)
        if len(self.operands) < 1 << 16:
            self.operands[token] = operand
        return operand


    def operand_token(self, raw: str, where: str) -> Operand:
        """The operand of a token as it stands between commas (spaces included), remembered under that text."""
        operand = self.operand(raw.strip(), where)
        if len(self.operands) < 1 << 16:
            self.operands[raw] = operand
        return operand


    def definitions(self, text: str, where: str) -> tuple[Value, ...]:
        known = self.defs.get(text)
        if known is not None:
            return known
        defs = []
        tokens = _split_operands(text)
        if len(tokens) > MAX_DEFS:
            raise ParseError(f"{where}: {len(tokens)} results in one instruction (the limit is {MAX_DEFS})")
        for token in tokens:
            m = _DEF_RE.match(token)
            if not m:
                raise ParseError(f"{where}: expected a definition '%name:type', got {excerpt(token)}")
            if m.group(2) not in WIDTHS:
                known = ", ".join(sorted(WIDTHS))
                raise ParseError(f"{where}: unknown type {excerpt(m.group(2))} of %{m.group(1)} (known: {known})")
            defs.append(Value(m.group(1), m.group(2)))
        names = [d.name for d in defs]
        if len(set(names)) != len(names):
            raise ParseError(f"{where}: a value is defined twice in one instruction")
        if not defs:
            raise ParseError(f"{where}: expected definitions before '='")
        if len(self.defs) < 1 << 16:
            self.defs[text] = tuple(defs)
        return tuple(defs)


    def instruction_text(self, text: str, where: str, phase: str | None = None) -> Instruction:
        """One instruction line, checked (:func:`check_instruction`)."""
        text = text.strip()
        defs: tuple[Value, ...] = ()
        if "=" in text:
            lhs, text = text.split("=", 1)
            defs = self.definitions(lhs, where)
        parts = text.split(None, 1)
        if not parts:
            raise ParseError(f"{where}: expected an opcode")
        guard, negated = None, False
        if parts[0].startswith("@"):
            m = _GUARD_RE.match(parts[0])
            if not m:
                raise ParseError(f"{where}: bad guard {excerpt(parts[0])}, expected '@%p' or '@!%p'")
            negated, guard = m.group(1) == "!", m.group(2)
            parts = parts[1].split(None, 1) if len(parts) > 1 else []
            if not parts:
                raise ParseError(f"{where}: expected an opcode after the guard")
        opcode = parts[0]
        if opcode not in self.opcodes:
            if not _OPCODE_RE.match(opcode):
                raise ParseError(f"{where}: bad opcode {excerpt(opcode)}")
            if len(self.opcodes) < 1 << 12:
                self.opcodes.add(opcode)
        known = self.operands.get
        tokens = parts[1].split(",") if len(parts) > 1 and parts[1].strip() else ()
        if len(tokens) > MAX_OPERANDS:
            raise ParseError(f"{where}: {len(tokens)} operands in one instruction (the limit is {MAX_OPERANDS})")
        operands = tuple([known(t) or self.operand_token(t, where) for t in tokens])
        ins = Instruction(opcode, defs, operands, guard, negated, phase)
        check_instruction(ins, where)
        return ins

    def finish(self) -> Program:
        if self.name is None:
            raise ParseError(f"{self.source}: empty program, expected '.kernel NAME'")
        if not self.blocks:
            raise ParseError(f"{self.source}: program {excerpt(self.name)} has no '.block'")
        labels = {b[0] for b in self.blocks}
        for names, lineno in self.uses:
            for name in names:
                if name not in self.types:
                    raise ParseError(f"{self.where(lineno)}: %{name} is used but never defined")
        types = {name: type_ for name, (type_, _) in self.types.items()}
        for ins, lineno in self.comparisons:
            check_instruction(ins, self.where(lineno), types)
        for name, lineno in self.guards:
            if self.types[name][0] != "pred":
                raise ParseError(f"{self.where(lineno)}: %{name} is {self.types[name][0]}, a predicate (pred) is needed here")
        for label, lineno in self.branches:
            if label not in labels:
                raise ParseError(f"{self.where(lineno)}: branch to unknown block {excerpt(label)}")
        return Program(self.name, tuple(Block(n, tuple(body)) for n, body, _ in self.blocks))


def parse(text: str, source: str = "<program>") -> Program:
    """Parse the text form of a program.

    Blank lines and lines starting with ``//`` are ignored.

    Raises
    ------
    ParseError
        naming ``source``, the line and what was expected.

    Examples
    --------
    >>> parse(".kernel k\\n.block b\\n  %x:f33 = mov 1\\n", "k.txt")
    Traceback (most recent call last):
    ...
    engine.base.errors.ParseError: k.txt line 3: unknown type 'f33' of %x (known: f16x2, f32, f64, i32, pred, u64)
    """
    if len(text) > MAX_FILE_BYTES:
        raise ParseError(f"{source}: {len(text)} characters of program text (RegTune's limit is {MAX_FILE_BYTES})")
    builder = Parser(source)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("//"):
            continue
        if line.startswith("."):
            builder.directive(line, lineno)
        else:
            builder.instruction(line, lineno)
    return builder.finish()
