"""The sizes RegTune accepts from a file, so that a small file cannot take the machine.

Each limit is checked once, before the work it bounds starts, and a
program or plan beyond it is refused with one line that names the limit
(README, "Limits"). The figures: a program costs about 40 bytes of memory
per byte of text; the interference graph has about (values live at once)
x (values) edges and takes 64 bytes an edge while it is built (8,000 live
values needed 2 GB); the interpreter's work per step grows with an instruction's operands.

Invariant: every number here is a documented, user-visible limit; none is
a tuning knob that changes results below it.
"""

#: 32-bit registers per thread: NVIDIA's limit, the highest budget and the default one
MAX_REGISTERS = 255
#: bytes of a plan, session or program file (the program text of a plan included)
MAX_FILE_BYTES = 16 * 1024 * 1024
#: instructions of one program (the benchmark programs have 5,000; naive's spill code makes 22,000 of them)
MAX_INSTRUCTIONS = 200_000
#: blocks of one program (generated GEMM and MHA programs have under 10; loop analysis grows with the square)
MAX_BLOCKS = 1024
#: operands of one instruction (PTX's widest instructions have a handful)
MAX_OPERANDS = 16
#: results of one instruction (ld.global.v4 has four)
MAX_DEFS = 8
#: characters of an IR name (value, block, kernel) and of an immediate, symbol or label
MAX_NAME = 128
MAX_IMMEDIATE = 64
#: the highest local-memory slot a plan may name: 512 KiB of local memory per thread (CUDA's limit) in 4-byte slots
MAX_SPILL_SLOT = (512 * 1024) // 4 - 1
#: loops and ifs nested in one another (generated programs nest 3 deep; each walk of the structure tree
#: recurses up to 4 Python frames a level, and Python stops at 1,000: 1,024 blocks could nest 512 deep)
MAX_NESTING = 64
#: registers live at once (MAXLIVE) for which the interference graph is built (the largest GEMM program
#: of the config space, load-all-first with a 16x16 tile, has under 1,000)
MAX_LIVE = 2048
#: overlapping pairs of live segments (about the interference edges) of one program. Building the graph
#: takes 64 bytes a pair at its peak (16 kept in the CSR arrays) and 200-300 ns a pair, and its single numpy
#: calls, which no signal handler interrupts, take up to 5e-8 s a pair (writing fresh memory), so Ctrl+C
#: and SIGTERM wait that long (measured: up to 0.8 s at 1e7 pairs, 1.1 s at 1.9e7, 8 s at 8e7). 1e7 pairs
#: is 640 MB and ~3 s to build, a signal seen within 2 s on a loaded machine, and 25 times the largest
#: generated program (GEMM 16x16x16 load-all-first, tile 16x16: 361,717 edges)
MAX_INTERFERENCE_EDGES = 10_000_000
#: instructions one run of the interpreter may execute (an execution check's run; the ILP model's path)
MAX_STEPS = 2_000_000
#: seconds the execution check may run on one plan before it stops with a message
CHECK_SECONDS = 120.0
#: seconds the optimal allocator's solver may run by default (engine.alloc.optimal, `allocate --time-limit`)
OPTIMAL_SECONDS = 10.0
