"""Deterministic large programs for the benchmarks.

``straight_line``: one block of ``n`` instructions whose pressure rises to
about ``peak`` 32-bit values and falls again, like a fully unrolled GEMM
tile; ``loop_shaped``: the same amount of code, most of it in a counted loop
that carries ``peak // 2`` accumulators around the back edge.
"""

from __future__ import annotations

import random


def _body(rng, lines, pool, n, target, fresh, store_base="%p0"):
    stored = 0
    for i in range(n):
        want = target(i)
        if len(pool) < want or len(pool) < 3:
            v = fresh()
            lines.append(f"  %{v}:f32 = ld.global %p1, {4 * rng.randrange(4096)}")
            pool.append(v)
        elif len(pool) > want:
            a = pool.pop(rng.randrange(len(pool)))
            if rng.random() < 0.5:
                lines.append(f"  st.global {store_base}, {4 * stored}, %{a}")
                stored += 1
            else:
                b = pool.pop(rng.randrange(len(pool)))
                v = fresh()
                lines.append(f"  %{v}:f32 = add %{a}, %{b}")
                pool.append(v)
        else:
            a, b = rng.sample(pool, 2)
            c = pool.pop(rng.randrange(len(pool)))
            v = fresh()
            lines.append(f"  %{v}:f32 = fma %{a}, %{b}, %{c}")
            pool.append(v)
    return stored


def straight_line(n: int = 5000, peak: int = 300, seed: int = 1) -> str:
    """Program text: a single block of ``n`` instructions whose pressure peaks near ``peak``."""
    rng = random.Random(seed)
    count = iter(range(1, 10**9))
    lines = [".kernel straight", ".block entry", "  %p0:u64 = param C", "  %p1:u64 = param A"]
    pool: list[str] = []
    # Grow for the first ~40%, hold, then shrink; the drain stores what is left.
    body = n - 3 - peak // 2
    target = lambda i: int(peak * min(1.0, i / (0.4 * body), (body - i) / (0.4 * body)))
    stored = _body(rng, lines, pool, body, target, lambda: f"v{next(count)}")
    for k, v in enumerate(pool):
        lines.append(f"  st.global %p0, {4 * (stored + k)}, %{v}")
    while len(lines) < n - 1:  # pad with short load/store pairs up to n instructions
        lines.append(f"  %w{len(lines)}:f32 = ld.global %p1, 0")
        lines.append(f"  st.global %p0, 0, %w{len(lines) - 1}")
    lines.append("  exit")
    return "\n".join(lines) + "\n"


def loop_shaped(n: int = 5000, peak: int = 300, trips: int = 3, seed: int = 2) -> str:
    """Program text: prologue, a counted loop carrying accumulators, epilogue."""
    rng = random.Random(seed)
    count = iter(range(1, 10**9))
    carried = peak // 2
    lines = [".kernel looped", ".block entry", "  %p0:u64 = param C", "  %p1:u64 = param A"]
    accs = [f"acc{k}" for k in range(carried)]
    lines += [f"  %{a}:f32 = ld.global %p1, {4 * k}" for k, a in enumerate(accs)]
    lines += ["  %i:i32 = mov 0", ".block loop"]
    body = n - len(lines) - 3 - carried - 2
    pool: list[str] = []
    wave = peak - carried
    target = lambda i: int(wave * (0.5 + 0.5 * ((i // 200) % 2)))
    _body(rng, lines, pool, body - carried - len(pool), target, lambda: f"t{next(count)}")
    for k, a in enumerate(accs):
        src = pool.pop() if pool else a
        lines.append(f"  %{a}:f32 = fma %{src}, %{src}, %{a}")
    for k, v in enumerate(pool):
        lines.append(f"  st.global %p0, {4 * k}, %{v}")
    lines += ["  %i:i32 = add %i, 1", "  %c:pred = setp.lt %i, " + str(trips), "  cbr %c, loop, done", ".block done"]
    lines += [f"  st.global %p0, {4 * (4096 + k)}, %{a}" for k, a in enumerate(accs)]
    lines.append("  exit")
    return "\n".join(lines) + "\n"


def sliding_window(values: int, live: int) -> str:
    """Program text: one block where each of ``values`` values lives until ``live`` values later.

    About ``live`` values are live at once and the segments overlap in about
    ``values * live`` pairs (the interference graph's edges), from a file of
    about 38 bytes a value: 190,000 values and 2,000 live make 7.3 MB and
    3.8e8 pairs.
    """
    lines = [".kernel window", ".block entry", "  %p:u64 = param C"]
    lines += [f"  %v{i}:f32 = mov {i}" for i in range(min(live, values))]
    lines += [f"  %v{i}:f32 = add %v{i - live}, %v{i - 1}" for i in range(live, values)]
    lines += [f"  st.global %p, 0, %v{i}" for i in range(max(values - live, 0), values)]
    lines.append("  exit")
    return "\n".join(lines) + "\n"


#: a program of 198,042 instructions (under the 200,000 limit) and MAXLIVE 2,042 (under 2,048) whose graph
#: would have 3.95e8 edges: about 25 GB to build
HUGE_GRAPH = {"values": 196_000, "live": 2_040}


def long_loop(trips: int) -> str:
    """Program text: one counted loop of ``trips`` trips of 4 instructions."""
    return "\n".join([".kernel spin", ".block entry", "  %pc:u64 = param C", "  %x:f32 = mov 0", "  %i:i32 = mov 0",
                      ".block loop", "  %x:f32 = add %x, 1", "  %i:i32 = add %i, 1", f"  %p:pred = setp.lt %i, {trips}",
                      "  cbr %p, loop, done", ".block done", "  st.global %pc, 0, %x", "  exit"]) + "\n"


def many_loops(loops: int, trips: int) -> str:
    """Program text: ``loops`` counted loops one after the other, each ``trips`` trips of 4 instructions (their
    counters all set in the entry block); 1,022 of them make the 1,024 blocks of RegTune's limit."""
    lines = [".kernel many", ".block entry", "  %pc:u64 = param C", "  %x:f32 = mov 0"]
    lines += [f"  %i{k}:i32 = mov 0" for k in range(loops)]
    for k in range(loops):
        after = f"loop{k + 1}" if k + 1 < loops else "done"
        lines += [f".block loop{k}", "  %x:f32 = add %x, 1", f"  %i{k}:i32 = add %i{k}, 1",
                  f"  %p{k}:pred = setp.lt %i{k}, {trips}", f"  cbr %p{k}, loop{k}, {after}"]
    lines += [".block done", "  st.global %pc, 0, %x", "  exit"]
    return "\n".join(lines) + "\n"


def nested_loops(depth: int, trips: int) -> str:
    """Program text: ``depth`` counted loops nested in one another, each of ``trips`` trips; loop k's header
    ``head{k}`` sets the counter of loop k+1, its latch ``latch{k}`` counts its own."""
    lines = [".kernel nest", ".block entry", "  %pc:u64 = param C", "  %x:f32 = mov 0", "  %i0:i32 = mov 0"]
    lines += [line for k in range(depth - 1) for line in (f".block head{k}", f"  %i{k + 1}:i32 = mov 0")]
    last = depth - 1
    lines += [f".block head{last}", "  %x:f32 = add %x, 1"]
    for k in range(last, -1, -1):
        after = f"latch{k - 1}" if k else "done"
        lines += [f".block latch{k}"] if k < last else []
        lines += [f"  %i{k}:i32 = add %i{k}, 1", f"  %p{k}:pred = setp.lt %i{k}, {trips}",
                  f"  cbr %p{k}, head{k}, {after}"]
    lines += [".block done", "  st.global %pc, 0, %x", "  exit"]
    return "\n".join(lines) + "\n"
