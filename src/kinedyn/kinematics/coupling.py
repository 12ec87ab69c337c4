"""Straight-line machine code for a plan's coupling product ``out -= Phi_h x`` (Group Equations
paper eqs 2-3: the known coordinates' rates and accelerations in the right-hand sides of a
structural group; also the independent coordinates' in coordinate partitioning).

The loop of :func:`.kernels.couple` reads three index arrays per entry (Jacobian position,
column, local row). For a plan they are fixed, so the code unrolls them: each entry is a
multiplication and a subtraction with immediate offsets, each output loaded and stored once.
The entries are subtracted in the loop's order, so the results are bit for bit the loop's.
Measured on the paper's Stewart platform (the legs' level: 90 entries, two products per step;
runs of 4000 paper steps, nine rounds, idle AMD EPYC): the products cost the groups' step
0.20 us with the loop (2.56 against 2.36 us per step without them), about 0.09 us with the code.
"""
from __future__ import annotations

import os

from .._llvm import compile_or_warn, in_parts, part

ARGS = ("%values", "%x", "%out")
CHUNK = 1024   # entries per generated function (LLVM's time grows faster than a function)
LIMIT = 200_000  # the most entries a plan gets code for
SWITCH = "KINEDYN_COUPLING_CODEGEN"  # "0": plans made from now on use the loop


def module_ir(pos, col, row) -> str:
    """IR of ``@couple(values, x, out)``: ``out[row[k]] -= values[pos[k]] * x[col[k]]`` for
    every k in order, in parts of ``CHUNK`` entries (:func:`kinedyn._llvm.in_parts`)."""
    texts = []
    starts = range(0, len(pos), CHUNK)
    for k, s in enumerate(starts):
        f = part("couple", ARGS, k, len(starts))
        acc: dict[int, str] = {}  # local row -> its running value
        for e in range(s, min(s + CHUNK, len(pos))):
            r = int(row[e])
            if r not in acc:
                acc[r] = f.load("%out", r)
            acc[r] = f.sub_product(acc[r], f.read("%values", pos[e]), f.read("%x", col[e]))
        for r, v in acc.items():
            f.store("%out", r, v)
        texts.append(f.end())
    texts.append(in_parts("couple", ARGS, len(starts)))
    return "\n".join(texts)


def compile_coupling(pos, col, row) -> int:
    """The address of the coupling product's code, or 0 (use the loop) when there is nothing
    to couple, more than ``LIMIT`` entries, ``KINEDYN_COUPLING_CODEGEN=0``, or LLVM refuses
    the IR."""
    if len(pos) == 0 or len(pos) > LIMIT or os.environ.get(SWITCH, "1") == "0":
        return 0
    code = compile_or_warn(module_ir(pos, col, row), ("couple",), "coupling",
                           f"a coupling product of {len(pos)} entries")
    return 0 if code is None else int(code[0])
