"""Generated kernels of a constraint system and its plan: Phi, Phi_q, Phi_t, gamma, the
kinematic inputs, and three position solvers with the same interface --

* ``position_triangular``: the plan (closed forms; Newton only on blocks the plan iterates),
* ``position_blocks``: Newton block by block (the thesis's "separate Newton", per loop/leg),
* ``position_newton``: Newton on all dependent coordinates at once ("single Newton"),

each ``f(q, t, tol, max_iter) -> iterations`` (-1: failed) updating q in place, plus ``run``:
a whole kinematic simulation in one compiled call (position, velocity, acceleration).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from .blocksolve import block_solve_source
from .codegen import Kernel, build_module
from .equations import T, ConstraintSystem
from .triangular import Plan


def coordinate_symbols(system: ConstraintSystem):
    """q{i}, qd{i} symbols and the substitution from the system's symbols to them."""
    q = [sp.Symbol(f"q{i}", real=True) for i in range(system.n_q)]
    qd = [sp.Symbol(f"qd{i}", real=True) for i in range(system.n_q)]
    sub = {c.symbol: q[i] for i, c in enumerate(system.coordinates)}
    for i, c in enumerate(system.coordinates):
        if c.angle:
            s_, c_ = sp.Symbol(f"s_{c.symbol.name}", real=True), sp.Symbol(f"c_{c.symbol.name}", real=True)
            sub[s_], sub[c_] = sp.sin(q[i]), sp.cos(q[i])
            sub[sp.Symbol(f"ref_{s_.name}", real=True)] = sp.sin(q[i])
            sub[sp.Symbol(f"ref_{c_.name}", real=True)] = sp.cos(q[i])
        else:
            sub[sp.Symbol(f"ref_{c.symbol.name}", real=True)] = q[i]
    return q, qd, sub


def _reads(q, qd=None):
    out = {s: f"q[{i}]" for i, s in enumerate(q)}
    if qd is not None:
        out.update({s: f"qd[{i}]" for i, s in enumerate(qd)})
    return out


def _triangular_outputs(system, block, sub, trig_pairs=False):
    """Inline the block's steps into one expression per unknown coordinate; with
    ``trig_pairs`` also each unknown angle's sine and cosine into ``sc`` (as ``trig``
    would), from the solved pair (s, c) that its atan2 reads: s / r, c / r with
    r = sqrt(s^2 + c^2) -- a square root and a division instead of a sine and a cosine."""
    val = {}
    for var, expr in block.assignments(system):
        val[var] = expr.xreplace(val)
    out = []
    for i in block.unknowns:
        c = system.coordinates[i]
        out.append((f"q[{i}]", val[c.symbol].xreplace(sub)))
        if trig_pairs and c.angle:
            s_, c_ = (val[v].xreplace(sub) for v in block.poly.trig[c.symbol])
            inv = 1 / sp.sqrt(s_ ** 2 + c_ ** 2)
            out += [(f"sc[{2 * i}]", s_ * inv), (f"sc[{2 * i + 1}]", c_ * inv)]
    return out


def _torn_kernels(system, k, block, sub, q, every) -> list:
    """The kernels of torn block ``k`` (:class:`~.triangular.TornBlock`), which read sines and
    cosines instead of computing them (thesis Fig. 4.7: each secant iteration computes only
    what the tear coordinate changes):

    * ``tri_k_j(q, t, sc, G)``: inner block j's closed forms. They write their angles'
      normalised (s, c) pairs into ``sc``, as a fully triangular plan's closed forms do (the
      angles themselves only once the secant has converged, :func:`_secant_source`), and
      read from ``sc`` every other angle's pair: the tear's (computed once per evaluation by
      the secant), the earlier inner blocks' (just written) and the block's knowns'. The guess
      values their roots are tracked against (the reference pair of each unknown not yet
      solved but the tear, whose reference is its current value) come from ``G``.
    * ``tres_k(q, sc, t, r)``: the residual equation, every sine and cosine from ``sc``.
    * ``pres_k(q, sc, t, r)``: the whole block's equations from ``sc``: the check at the guess
      and after the secant has converged (where ``sc`` holds the last evaluation's pairs).
    * ``tcall_k(q, sc, G)``: once per call, the pairs of every angle these kernels read into
      ``sc`` (the guess's for the unknowns) and the unknowns' guess pairs into ``G``.

    Before, each evaluation of the beta1-driven Stephenson-III took 20 sines and cosines
    (its tear's three times, the driven angle's twice, each guess's once, each inner angle's
    again after its atan2) and three atan2 and each check 10; now an evaluation takes two
    sines and cosines, a call ten and three atan2."""
    S, sc_reads = trig_symbols(system, q)
    sc_of = {i: (S[sp.sin(q[i])], S[sp.cos(q[i])])      # coordinate index -> (S_i, C_i)
             for i, c in enumerate(system.coordinates) if c.angle}
    reads = {**_reads(q), **sc_reads}
    guess = {i: (sp.Symbol(f"G{i}s", real=True), sp.Symbol(f"G{i}c", real=True))
             for i in block.unknowns if i in sc_of and i != block.tear}
    reads.update({v: f"G[{2 * i + a}]" for i, p in guess.items() for a, v in enumerate(p)})
    coords = system.coordinates
    angle_targets = {f"q[{i}]" for i in block.unknowns if i in sc_of}
    solved, kernels, used = set(), [], set()
    for j, b in enumerate(block.inner):
        local = dict(sub)               # s_, c_ -> sc; a not yet solved unknown's ref_ -> G
        for i, (si, ci) in sc_of.items():
            s_name, c_name = f"s_{coords[i].symbol.name}", f"c_{coords[i].symbol.name}"
            ref = guess[i] if i in guess and i not in solved else (si, ci)
            for name, value in ((s_name, si), (c_name, ci), (f"ref_{s_name}", ref[0]),
                                (f"ref_{c_name}", ref[1])):
                local[sp.Symbol(name, real=True)] = value
        outs = [(target, e.xreplace(S)) for target, e in
                _triangular_outputs(system, b, local, trig_pairs=True)
                if target not in angle_targets]      # the angles: atan2 once, at the end
        used |= set().union(*(e.free_symbols for _, e in outs))
        kernels.append(Kernel(f"tri_{k}_{j}", ("q", "t", "sc", "G"), reads, outs))
        solved |= set(b.unknowns)
    res = every[block.residual].xreplace(S)
    kernels.append(Kernel(f"tres_{k}", ("q", "sc", "t", "r"), reads, [("r[0]", res)]))
    whole = [every[i].xreplace(S) for i in block.equations]
    kernels.append(Kernel(f"pres_{k}", ("q", "sc", "t", "r"), reads,
                          [(f"r[{a}]", e) for a, e in enumerate(whole)]))
    used |= set().union(res.free_symbols, *(e.free_symbols for e in whole))
    kernels.append(Kernel(f"tcall_{k}", ("q", "sc", "G"), _reads(q),
                          [(f"sc[{2 * i + a}]", f(q[i])) for i in sc_of if set(sc_of[i]) & used
                           for a, f in enumerate((sp.sin, sp.cos))]
                          + [(f"G[{2 * i + a}]", f(q[i])) for i in guess
                             if set(guess[i]) & used for a, f in enumerate((sp.sin, sp.cos))]))
    return kernels


def trig_symbols(system, qs):
    """{sin(q_i): S_i, cos(q_i): C_i} for the angle coordinates, and their reads from ``sc``:
    the kernels past the position solution read each sine and cosine that ``trig`` computed
    once per state instead of calling them again (a six-bar's Phi, Phi_q, gamma and the
    residual check called the same 10 sines and cosines four times per step)."""
    repl, reads = {}, {}
    for i, c in enumerate(system.coordinates):
        if c.angle:
            s, co = sp.Symbol(f"S{i}", real=True), sp.Symbol(f"C{i}", real=True)
            repl[sp.sin(qs[i])], repl[sp.cos(qs[i])] = s, co
            reads[s], reads[co] = f"sc[{2 * i}]", f"sc[{2 * i + 1}]"
    return repl, reads


def trig_kernel(system, qs, name="trig", skip=()) -> Kernel:
    """``trig(q, sc)``: sc[2 i], sc[2 i + 1] = sin q_i, cos q_i of every angle coordinate
    (but those in ``skip``)."""
    angles = [i for i, c in enumerate(system.coordinates) if c.angle and i not in skip]
    return Kernel(name, ("q", "sc"), _reads(qs),
                  [(f"sc[{2 * i}]", sp.sin(qs[i])) for i in angles]
                  + [(f"sc[{2 * i + 1}]", sp.cos(qs[i])) for i in angles])


def sines_cosines(module, q) -> np.ndarray:
    """``sc`` of ``q`` by the module's ``trig``: the argument its Phi, Phi_q, Phi_t, gamma,
    mass and forces kernels read sines and cosines from (for calls from Python)."""
    q = np.asarray(q, float)
    sc = np.zeros(2 * len(q))
    module.trig(q, sc)
    return sc


@dataclass
class GeneratedKinematics:
    module: object
    operations: dict
    dependent: np.ndarray
    independent: np.ndarray


def generate(system: ConstraintSystem, plan: Plan, name: str | None = None,
             with_gamma: bool = True, extra_kernels=(), extra_source: str = "",
             backend: str = "numba") -> GeneratedKinematics:
    """Kernels of ``system`` and ``plan`` (plus ``extra_kernels``) in one module; ``backend``
    ``"c"`` compiles the expression kernels as C (:func:`~.codegen.build_module`)."""
    q, qd, sub = coordinate_symbols(system)
    every = [e.xreplace(sub).xreplace({T: sp.Symbol("t")}) for e in plan.equations]
    phi = every[:system.n_c]                     # Phi; then the plan's derived equations
    tt = sp.Symbol("t")
    Jall = sp.Matrix(every).jacobian(q)
    Jq = Jall[:system.n_c, :]
    trig, rs = trig_symbols(system, q)
    rs.update(_reads(q))
    kernels = [trig_kernel(system, q),
               Kernel("phi", ("q", "sc", "t", "out"), rs,
                      [(f"out[{i}]", e.xreplace(trig)) for i, e in enumerate(phi)]),
               Kernel("phi_q", ("q", "sc", "t", "J"), rs,
                      [(f"J[{i}, {j}]", Jq[i, j].xreplace(trig)) for i in range(Jq.rows)
                       for j in range(Jq.cols) if Jq[i, j] != 0]),
               Kernel("phi_t", ("q", "sc", "t", "out"), rs,
                      [(f"out[{i}]", sp.diff(e, tt).xreplace(trig)) for i, e in enumerate(phi)])]
    if with_gamma:
        qdv = sp.Matrix(qd)
        Jqd = Jq * qdv
        gam = -(Jqd.jacobian(q) * qdv) - 2 * sp.diff(Jq, tt) * qdv - sp.Matrix(phi).diff(tt, 2)
        kernels.append(Kernel("gamma", ("q", "qd", "sc", "t", "out"), {**rs, **_reads(q, qd)},
                              [(f"out[{i}]", sp.expand(e).xreplace(trig))
                               for i, e in enumerate(gam)]))
    inputs = []
    for i, f in system.inputs.items():
        f = f.xreplace({T: tt})
        inputs += [(f"q[{i}]", f), (f"qd[{i}]", sp.diff(f, tt)), (f"qdd[{i}]", sp.diff(f, tt, 2))]
    kernels.append(Kernel("inputs", ("t", "q", "qd", "qdd"), {}, inputs))
    extra = []
    calls_tri, calls_blk = [], []
    n_torn = 0
    dep_set = set(int(i) for i in system.dependent)
    fused = plan.fully_triangular and all(   # no block reads another block's unknowns
        Jq[r, c] == 0 for b in plan.blocks for r in b.equations for c in dep_set - set(b.unknowns))
    if fused:   # one kernel, one CSE: what the blocks share (a pose's sines, ...) is computed once
        kernels.append(Kernel("tri_all", ("q", "t", "sc"), _reads(q),
                              [o for b in plan.blocks
                               for o in _triangular_outputs(system, b, sub, trig_pairs=True)]))
    if plan.fully_triangular:   # the closed forms write the solved angles' sines and cosines:
        kernels.append(trig_kernel(system, q, "trig_free", dep_set))   # the others after them
    else:
        extra.append("\ntrig_free = trig\n")
    for k, block in enumerate(plan.blocks):
        eqs, unk = list(block.equations), list(block.unknowns)
        sub_J = Jall.extract(eqs, unk)
        kernels.append(Kernel(f"res_{k}", ("q", "t", "r"), _reads(q),
                              [(f"r[{a}]", every[i]) for a, i in enumerate(eqs)]))
        kernels.append(Kernel(f"jac_{k}", ("q", "t", "J"), _reads(q),
                              [(f"J[{a}, {b}]", sub_J[a, b]) for a in range(len(eqs))
                               for b in range(len(unk)) if sub_J[a, b] != 0]))
        extra.append(_newton_source(f"newton_{k}", f"res_{k}", f"jac_{k}", unk, n_eq=len(eqs)))
        calls_blk.append(f"newton_{k}")
        if fused:
            calls_tri = ["tri_all"]
        elif block.kind == "triangular":   # sc: only where trig_free relies on it
            outs = _triangular_outputs(system, block, sub, trig_pairs=plan.fully_triangular)
            if plan.fully_triangular:   # the earlier blocks' angles: their normalised (s, c)
                early = {f(q[i]): trig[f(q[i])] for b in plan.blocks[:k] for i in b.unknowns
                         if system.coordinates[i].angle for f in (sp.sin, sp.cos)}
                outs = [(target, e.xreplace(early)) for target, e in outs]
            kernels.append(Kernel(f"tri_{k}", ("q", "t", "sc"), {**_reads(q), **rs}, outs))
            calls_tri.append(f"tri_{k}")
        elif block.kind == "torn":
            inner = [f"tri_{k}_{j}" for j in range(len(block.inner))]
            kernels += _torn_kernels(system, k, block, sub, q, every)
            extra.append(_secant_source(f"torn_{k}", inner, f"tres_{k}", f"tcall_{k}", block,
                                        f"pres_{k}", f"newton_{k}", n_torn,
                                        [i for i in block.unknowns
                                         if system.coordinates[i].angle]))
            n_torn += 1
            if _RESET not in extra:
                extra.append(_RESET)
            calls_tri.append(f"torn_{k}")
        else:
            calls_tri.append(f"newton_{k}")
    dep = np.array(system.dependent, np.int64)
    ind = np.array(system.independent, np.int64)
    extra.append(_position_source("position_triangular", calls_tri, plan))
    extra.append(_position_source("position_blocks", calls_blk, plan, newton=True))
    extra.append(_newton_source("position_newton", "phi", "phi_q", list(dep), full=True))
    lu = plan.lu                  # Phi_d's diagonal blocks (velocity / acceleration level)
    rows = [int(i) for eqs, _ in lu for i in eqs]
    cols = [int(i) for _, unk in lu for i in unk]
    ptr = np.cumsum([0] + [len(unk) for _, unk in lu]).tolist()
    rod = rod_reduction(system, plan, Jq)
    extra.append(_RUN + (_ROD_LU if rod else block_solve_source(
        rows, cols, ptr, lambda r, c: Jq[r, c] != 0) or _BLOCK_LU))
    extra.append(extra_source)
    kernels += list(extra_kernels)
    coupling, cptr = [], [0]     # per block row: positions of earlier unknowns it involves
    for k in range(len(lu)):
        for a in range(ptr[k], ptr[k + 1]):
            coupling += [c for c in range(ptr[k]) if Jq[rows[a], cols[c]] != 0]
            cptr.append(len(coupling))
    header = "\n".join(["from kinedyn.linalg.small import lu_factor_block, lu_solve",
                        f"DEP = np.array({list(map(int, dep))}, dtype=np.int64)",
                        f"IND = np.array({list(map(int, ind))}, dtype=np.int64)",
                        f"BROW = np.array({rows}, dtype=np.int64)",   # Phi_d in plan block order
                        f"BCOL = np.array({cols}, dtype=np.int64)",
                        f"BPTR = np.array({ptr}, dtype=np.int64)",
                        f"CPTR = np.array({cptr}, dtype=np.int64)",
                        f"CPL = np.array({coupling}, dtype=np.int64)",
                        f"NQ_ = {system.n_q}", f"NC_ = {system.n_c}",
                        # position_workspace()'s rows: Phi's, or a block's with derived equations
                        f"PROWS_ = {max([system.n_c] + [len(b.equations) for b in plan.blocks])}",
                        f"NTORN_ = {n_torn}"])
    if rod:                      # Phi_d through the rod reduction (_ROD_LU)
        core_rows, core_cols, rod_rows, rod_cols = rod
        header += "\n" + "\n".join([
            f"RCORE_ROW = np.array({core_rows}, dtype=np.int64)",
            f"RCORE_COL = np.array({core_cols}, dtype=np.int64)",
            f"ROD_ROW = np.array({rod_rows}, dtype=np.int64).reshape(({len(rod_rows)}, 3))",
            f"ROD_COL = np.array({rod_cols}, dtype=np.int64).reshape(({len(rod_cols)}, 2))",
            f"MCORE_ = {len(core_rows)}", f"NRC_ = {len(core_cols)}", f"NROD_ = {len(rod_rows)}"])
    module, ops = build_module(name or system.name, kernels, "\n".join(extra), header, backend)
    # closed forms once (a torn block's inner ones: per secant evaluation)
    tri_ops = ops["tri_all"] if fused else _sum_ops(
        [ops[f"tri_{k}"] for k, b in enumerate(plan.blocks) if b.kind == "triangular"]
        + [ops[f"tri_{k}_{j}"] for k, b in enumerate(plan.blocks) if b.kind == "torn"
           for j in range(len(b.inner))])
    ops["position_triangular"] = tri_ops
    return GeneratedKinematics(module, ops, dep, ind)


def _sum_ops(items):
    out = {}
    for d in items:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


def _newton_source(name, res, jac, unknowns, full=False, n_eq=None):
    """Newton-Raphson on ``unknowns`` with generated residual and Jacobian; with more equations
    than unknowns (a rod's three joint equations in its two angles), Gauss-Newton on the normal
    equations (the equations are consistent: quadratic convergence). The step is solved in
    place (``kinedyn.linalg.small``: LU with partial pivoting): ``np.linalg.solve`` took 335 /
    500 / 660 ns for 2 x 2 / 3 x 3 / 5 x 5 systems from compiled code, these 80 / 145 / 140 ns.
    Its arrays are the caller's (``S``, :func:`position_workspace`, shared by every block): the
    six arrays a call allocated for itself cost 200-260 ns, two thirds of a landing gear's
    step (0.37 us) when its tracked guess needs no iteration. A singular step matrix fails the
    call (-1)."""
    n = len(unknowns)
    n_eq = n if n_eq is None else n_eq
    cols = "DEP" if full else f"COLS_{name}"
    rows = "NC_" if full else str(n_eq)
    jcols = "NQ_" if full else str(n)
    square = n_eq == n or full
    col = "cols[b]" if full else "b"
    if square:        # A = Phi_d (the unknowns' columns), x = r
        system = f"""for a in range(n):
            x[a] = r[a]
            for b in range(n):
                A[a, b] = J[a, {col}]"""
    else:             # the normal equations: A = J^T J, x = J^T r
        system = f"""for a in range(n):
            v = 0.0
            for i in range({n_eq}):
                v += J[i, a] * r[i]
            x[a] = v
            for b in range(n):
                v = 0.0
                for i in range({n_eq}):
                    v += J[i, a] * J[i, b]
                A[a, b] = v"""
    # over-determined: the equations are consistent only as far as the earlier blocks'
    # tolerance allows, so a Gauss-Newton step below tol also ends the iteration
    stop = "" if square else """
        if largest(x[:n]) <= tol:
            return it + 1"""
    # on all coordinates: the global Phi and Phi_q, which read the sines and cosines of trig
    args = "q, sc, t" if full else "q, t"
    trig = "\n        trig(q, sc)" if full else ""
    const = "" if full else f"COLS_{name} = np.array({[int(u) for u in unknowns]}, dtype=np.int64)\n\n"
    return f'''
{const}
@njit(cache=True)
def {name}(q, t, tol, max_iter, S):
    r, J, A, x, piv, sc = S[:6]
    cols = {cols}
    n = cols.shape[0]
    for a in range({rows}):     # the Jacobian kernel writes only the nonzeros
        for b in range({jcols}):
            J[a, b] = 0.0
    for it in range(max_iter + 1):{trig}
        {res}({args}, r)
        if largest(r[:{rows}]) <= tol:
            return it
        if it == max_iter:
            break
        {jac}({args}, J)
        {system}
        if not lu_factor_block(A, 0, n, piv, 0.0):
            return -1
        lu_solve(A, n, piv, x)
        for a in range(n):
            q[cols[a]] -= x[a]{stop}
    return -1
'''


def _secant_source(name, inner, res, setup, block, block_res, fallback, index, angles):
    """The secant method on a torn block's tear coordinate (:class:`~.triangular.TornBlock`):
    first the whole block's residual (``block_res``, from the sines and cosines ``setup``
    computes) at the guess, as Newton checks it (a
    tracked guess often satisfies a loose tolerance already); else each secant evaluation
    runs the ``inner`` closed forms from the tear value and the ``res`` equation, and a
    converged secant is checked on the whole block again (an inner square root clamped at a
    negative discriminant leaves its own equation unsatisfied). If the secant stalls, meets a
    NaN or fails that check, Newton on the whole block (``fallback``) from the values the call
    started with. Returns the number of closed-form evaluations (or Newton's iterations), -1
    on failure. Works in the caller's arrays ``S`` as the Newton blocks do. ``setup``: the
    kernel that puts the knowns' and the guess's sines and cosines into ``S[5]`` and ``S[8]``
    once per call (:func:`_torn_kernels`); ``angles``: the block's angle unknowns. The tear's
    sine and cosine are computed at each evaluation; the other angles are taken by atan2 from
    their pairs in ``S[5]`` once the secant has converged, not at every evaluation.

    The secant's second point: a Newton step with the slope at the solution predicted from
    the block's last two converged secants (their final slopes, ``S[7][2 index:2 index + 2]``,
    kept for the run; linear extrapolation, or the last slope alone after one), else the plain
    x0 + SECANT_STEP (1 + |x0|) of the Python twin (``Plan._torn_block``). From a tracked
    guess that step converges at once: two closed-form evaluations per step instead of three
    (the last slope alone: one step in two on the Stephenson-III beta1, as the tear's slope
    changes by about h relative per step)."""
    from .triangular import INNER_CHECK, SECANT_STEP
    tear = int(block.tear)
    others = [int(u) for u in block.unknowns if int(u) != tear]
    m = len(block.equations)
    # every evaluation starts from the guess: the inner closed forms keep the roots nearest
    # the guess (the angles' pairs in G, other unknowns' values in q, reset here), not the last
    # secant iterate's (the free Stephenson-III near its limit position: an iterate's roots on
    # the other assembly mode led the next evaluations there, and the secant converged on
    # that mode); then the tear's sine and cosine, which the inner closed forms and the
    # residual read from sc
    trig = (f"sc[{2 * tear}] = math.sin(q[{tear}]); sc[{2 * tear + 1}] = math.cos(q[{tear}]); "
            if tear in angles else "")
    finish = "".join(f"\n                q[{i}] = math.atan2(sc[{2 * i}], sc[{2 * i + 1}])"
                     for i in others if i in angles)
    evaluate = f"reset(q, cols, start); {trig}" + "; ".join(f"{f}(q, t, sc, G)" for f in inner)
    return f'''
OTHERS_{name} = np.array({others}, dtype=np.int64)


@njit(cache=True)
def {name}(q, t, tol, max_iter, S):
    r, sc, start, slope, G = S[0], S[5], S[6], S[7], S[8]
    {setup}(q, sc, G)
    {block_res}(q, sc, t, r)
    if largest(r[:{m}]) <= tol:
        return 0
    cols = OTHERS_{name}
    for a in range(cols.shape[0]):
        start[a] = q[cols[a]]
    x0 = q[{tear}]
    tear0 = x0
    {evaluate}
    {res}(q, sc, t, r)
    f = r[0]
    s1, s = slope[{2 * index}], slope[{2 * index + 1}]
    if s1 != 0.0:
        s = 2.0 * s - s1
    if s != 0.0 and abs(s) < np.inf:
        x = x0 - f / s
    else:
        x = x0 + {SECANT_STEP!r} * (1.0 + abs(x0))
    for it in range(1, max_iter + 1):
        if abs(f) <= tol:   # the inner equations too (not so where a root was clamped)
            {block_res}(q, sc, t, r)
            if largest(r[:{m}]) <= max(tol, {INNER_CHECK!r}):
                if it > 1:      # a new slope at the solution
                    slope[{2 * index}] = slope[{2 * index + 1}]
                    slope[{2 * index + 1}] = s{finish}
                return it
            break
        f0 = f
        q[{tear}] = x
        {evaluate}
        {res}(q, sc, t, r)
        f = r[0]
        if f == f0 or f != f:
            break
        s = (f - f0) / (x - x0)
        x, x0 = x - f * (x - x0) / (f - f0), x
    slope[{2 * index}] = 0.0
    slope[{2 * index + 1}] = 0.0
    q[{tear}] = tear0
    reset(q, cols, start)
    return {fallback}(q, t, tol, max_iter, S)
'''


_RESET = '''
@njit(cache=True)
def reset(q, cols, values):
    for a in range(cols.shape[0]):
        q[cols[a]] = values[a]
'''


def _position_source(name, calls, plan, newton=False):
    body = []
    for k, fn in enumerate(calls):
        if fn.startswith("tri_"):      # S[5]: the caller's sc (trig_after)
            body.append(f"    {fn}(q, t, S[5])")
        else:
            body += [f"    it = {fn}(q, t, tol, max_iter, S)", "    if it < 0:", "        return -1",
                     "    total += it"]
    # inlined, as position(): a call would pass S's array descriptors by value (the four-bar's
    # closed forms, which never read S, 163 -> 185 ns per step)
    return "\n@inlined\ndef " + name + "(q, t, tol, max_iter, S):\n    total = 0\n" + \
        "\n".join(body) + "\n    return total\n"


_RUN = '''

@njit(cache=True)
def largest(r):
    """max |r_i|; NaN if an entry is NaN (Python's max(worst, nan) keeps worst: a lost root
    would pass as converged)."""
    worst = 0.0
    for i in range(r.shape[0]):
        v = abs(r[i])
        if v != v:
            return v
        worst = max(worst, v)
    return worst


@inlined
def position(mode, q, t, tol, max_iter, S):
    """The position solver ``mode`` (0 triangular, 1 blocks, 2 Newton) at time t, in the
    arrays S of position_workspace(); its iterations, -1 on failure."""
    if mode == 0:
        return position_triangular(q, t, tol, max_iter, S)
    if mode == 1:
        return position_blocks(q, t, tol, max_iter, S)
    return position_newton(q, t, tol, max_iter, S)


@inlined
def trig_after(mode, q, sc):
    """trig(q, sc) after position(mode, ..., S) with sc = S[5]: a fully triangular plan's
    closed forms (tri_all or tri_k) have already written their angles' sines and cosines
    there, and trig_free does the rest (a sine and a cosine: 19 ns; the normalised pair the
    closed forms have: 8 ns)."""
    if mode == 0:
        trig_free(q, sc)
    else:
        trig(q, sc)


@njit(cache=True)
def position_workspace():
    """The arrays every iterated block of the position solvers works in, one after the other:
    residual, Jacobian, step matrix, step, pivots, sines and cosines, a torn block's saved
    values (sized for the largest block, Newton on all dependent coordinates included),
    each torn block's last two secant slopes (0: none yet), and a torn block's guess pairs
    (the sines and cosines of its unknowns at the call's start, :func:`_torn_kernels`)."""
    nd = DEP.shape[0]
    return (np.zeros(PROWS_), np.zeros((PROWS_, NQ_)), np.zeros((nd, nd)), np.zeros(nd),
            np.zeros(nd, dtype=np.int64), np.zeros(2 * NQ_), np.zeros(nd), np.zeros(2 * NTORN_),
            np.zeros(2 * NQ_))


@inlined
def velocity(q, qd, sc, t, J, pt, W):
    """qd_d = -Phi_d^-1 (Phi_i qd_i + Phi_t) (thesis eq. 2.26) at q, whose sines and cosines
    trig(q, sc) has computed; leaves Phi_q in J and its block LU in W. False if Phi_d is
    singular."""
    J[:, :] = 0.0
    phi_q(q, sc, t, J)
    phi_t(q, sc, t, pt)
    for r in range(NC_):
        v = -pt[r]
        for a in range(IND.shape[0]):
            v -= J[r, IND[a]] * qd[IND[a]]
        pt[r] = v
    if not factor_d(J, W):
        return False
    # columns as views by indexing: reshape took 40 ns per call, most of a six-bar's solve
    solve_d(J, W, pt[:, np.newaxis], qd[:, np.newaxis])
    return True


@inlined
def acceleration(q, qd, qdd, sc, t, J, g, W):
    """Phi_d qdd_d = gamma - Phi_i qdd_i (J, W from velocity at q)."""
    gamma(q, qd, sc, t, g)
    for r in range(NC_):
        for a in range(IND.shape[0]):
            g[r] -= J[r, IND[a]] * qdd[IND[a]]
    solve_d(J, W, g[:, np.newaxis], qdd[:, np.newaxis])


@njit(cache=True)
def kinematic_workspace():
    """(Phi_q, Phi_t, gamma, Phi, qd, qdd, position_workspace()) for run."""
    return (np.zeros((NC_, NQ_)), np.zeros(NC_), np.zeros(NC_), np.zeros(NC_), np.zeros(NQ_),
            np.zeros(NQ_), position_workspace())


@njit(cache=True)
def run(mode, times, q_, Q, QD, QDD, RES, ITER, tol, max_iter, extrapolate, ws_, W_):
    """Kinematic simulation; returns -1 or the index of the failed step. ws_, W_: the owners
    (kinematic_workspace(), dep_workspace()) of the unmanaged views the steps work on, which
    spare every call below the reference counting of its array arguments (kinedyn._unmanaged:
    a six-bar's solve_d 92 -> 64 ns with the loops)."""
    J, pt, g, r, qd, qdd, P = unmanaged(ws_)
    sc = P[5]                     # the sines and cosines (trig_after)
    W, q = unmanaged(W_), unmanaged(q_)
    for k in range(times.shape[0]):
        t = times[k]
        if extrapolate and k > 0:
            h = t - times[k - 1]
            for a in range(DEP.shape[0]):
                q[DEP[a]] += h * qd[DEP[a]] + 0.5 * h * h * qdd[DEP[a]]
        inputs(t, q, qd, qdd)
        it = position(mode, q, t, tol, max_iter, P)
        if it < 0:
            return k
        trig_after(mode, q, sc)
        if not velocity(q, qd, sc, t, J, pt, W):
            return k
        acceleration(q, qd, qdd, sc, t, J, g, W)
        phi(q, sc, t, r)
        RES[k] = largest(r)
        ITER[k] = it
        Q[k] = q
        QD[k] = qd
        QDD[k] = qdd
    return -1
'''

_BLOCK_LU = '''
@njit(cache=True)
def dep_workspace():
    """(LU of Phi_d's diagonal blocks, pivots, scratch) for factor_d / solve_d."""
    return np.zeros((NC_, NC_)), np.zeros(NC_, dtype=np.int64), np.zeros(NC_)


@njit(cache=True)
def factor_d(J, W):
    """LU with partial pivoting of each diagonal block of Phi_d (the plan's blocks: per loop /
    per leg), in place in W; False if a block is singular."""
    LU, piv, tmp = W
    for k in range(BPTR.shape[0] - 1):
        s0, s1 = BPTR[k], BPTR[k + 1]
        for a in range(s0, s1):
            for b in range(s0, s1):
                LU[a, b] = J[BROW[a], BCOL[b]]
        if not lu_factor_block(LU, s0, s1, piv, 0.0):
            return False
    return True


@njit(cache=True)
def solve_d(J, W, R, X):
    """Phi_d X_d = R for the columns of R (by constraint; X by coordinate, only the rows DEP
    written) by block forward substitution over the plan's blocks (block lower-triangular;
    factor_d first). Only the structural couplings CPL to earlier blocks are visited."""
    LU, piv, tmp = W
    for m in range(R.shape[1]):
        for k in range(BPTR.shape[0] - 1):
            s0, s1 = BPTR[k], BPTR[k + 1]
            for a in range(s0, s1):
                v = R[BROW[a], m]
                for e in range(CPTR[a], CPTR[a + 1]):
                    c = CPL[e]
                    v -= J[BROW[a], BCOL[c]] * X[BCOL[c], m]
                tmp[a] = v
            for c in range(s0, s1):
                p = piv[c]
                if p != c:
                    v = tmp[c]
                    tmp[c] = tmp[p]
                    tmp[p] = v
            for a in range(s0, s1):
                for c in range(s0, a):
                    tmp[a] -= LU[a, c] * tmp[c]
            for a in range(s1 - 1, s0 - 1, -1):
                for c in range(a + 1, s1):
                    tmp[a] -= LU[a, c] * tmp[c]
                tmp[a] /= LU[a, a]
            for a in range(s0, s1):
                X[BCOL[a], m] = tmp[a]
'''

_ROD_LU = '''
@njit(cache=True)
def dep_workspace():
    """Phi_d through the rod reduction (see factor_d): rows [:NRC_] the LU of the reduced core
    matrix; row NRC_ + k: rod k's unit left null vector (0:3) and (D_k^T D_k)^-1 (3:6), upper
    triangle; pivots; scratch."""
    return (np.zeros((NRC_ + NROD_, max(NRC_, 6))), np.zeros(max(NRC_, 1), dtype=np.int64),
            np.zeros(NC_))


@njit(cache=True)
def factor_d(J, W):
    """Phi_d = [[C_c, 0], [P_k, D_k]] by the rod reduction (thesis section 5.1): rod k's three
    joint equations have the 3 x 2 block D_k in its own two angles and P_k in the core unknowns
    (a carrier's pose); its left null vector n_k = (d_1 x d_2)/|d_1 x d_2| (n_k^T D_k = 0: the
    differentiated constant-distance constraint (5.2)) gives one reduced row n_k^T P_k. The
    reduced square core matrix [C_c; n_k^T P_k] (5 x 5 for the five-link) is LU-factorised
    with partial pivoting, and per rod the 2 x 2 normal matrix D_k^T D_k is inverted. False if
    a rod's D_k loses rank or the core matrix is singular."""
    LU, piv, tmp = W
    for i in range(MCORE_):
        for c in range(NRC_):
            LU[i, c] = J[RCORE_ROW[i], RCORE_COL[c]]
    for k in range(NROD_):
        r0, r1, r2 = ROD_ROW[k, 0], ROD_ROW[k, 1], ROD_ROW[k, 2]
        a, b = ROD_COL[k, 0], ROD_COL[k, 1]
        a0, a1, a2 = J[r0, a], J[r1, a], J[r2, a]
        b0, b1, b2 = J[r0, b], J[r1, b], J[r2, b]
        n0, n1, n2 = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0
        g00, g01, g11 = a0 * a0 + a1 * a1 + a2 * a2, a0 * b0 + a1 * b1 + a2 * b2, \\
            b0 * b0 + b1 * b1 + b2 * b2
        det = g00 * g11 - g01 * g01          # = |n|^2
        if not det > 1e-300:
            return False
        s = 1.0 / math.sqrt(det)
        n0, n1, n2 = n0 * s, n1 * s, n2 * s
        row = NRC_ + k
        LU[row, 0], LU[row, 1], LU[row, 2] = n0, n1, n2
        LU[row, 3], LU[row, 4], LU[row, 5] = g11 / det, -g01 / det, g00 / det
        for c in range(NRC_):
            col = RCORE_COL[c]
            LU[MCORE_ + k, c] = n0 * J[r0, col] + n1 * J[r1, col] + n2 * J[r2, col]
    return lu_factor_block(LU, 0, NRC_, piv, 0.0)


@njit(cache=True)
def solve_d(J, W, R, X):
    """Phi_d X_d = R for the columns of R (by constraint; X by coordinate, only the rows DEP
    written) through the rod reduction (factor_d first): the core unknowns from the reduced
    system [C_c; n_k^T P_k] x_c = [r_c; n_k^T r_k], then each rod's two angles from its
    consistent 3 x 2 system D_k x_k = r_k - P_k x_c by the normal equations."""
    LU, piv, tmp = W
    for m in range(R.shape[1]):
        for i in range(MCORE_):
            tmp[i] = R[RCORE_ROW[i], m]
        for k in range(NROD_):
            row = NRC_ + k
            tmp[MCORE_ + k] = LU[row, 0] * R[ROD_ROW[k, 0], m] + LU[row, 1] * R[ROD_ROW[k, 1], m] \\
                + LU[row, 2] * R[ROD_ROW[k, 2], m]
        for c in range(NRC_):
            p = piv[c]
            if p != c:
                v = tmp[c]
                tmp[c] = tmp[p]
                tmp[p] = v
        for a in range(NRC_):
            for c in range(a):
                tmp[a] -= LU[a, c] * tmp[c]
        for a in range(NRC_ - 1, -1, -1):
            for c in range(a + 1, NRC_):
                tmp[a] -= LU[a, c] * tmp[c]
            tmp[a] /= LU[a, a]
        for c in range(NRC_):
            X[RCORE_COL[c], m] = tmp[c]
        for k in range(NROD_):
            a, b = ROD_COL[k, 0], ROD_COL[k, 1]
            u = 0.0
            v = 0.0
            for e in range(3):
                r = ROD_ROW[k, e]
                s = R[r, m]
                for c in range(NRC_):
                    s -= J[r, RCORE_COL[c]] * tmp[c]
                u += J[r, a] * s
                v += J[r, b] * s
            row = NRC_ + k
            X[a, m] = LU[row, 3] * u + LU[row, 4] * v
            X[b, m] = LU[row, 4] * u + LU[row, 5] * v
'''


def rod_reduction(system, plan, Jq):
    """(core rows, core columns, rod rows (n_rod x 3), rod columns (n_rod x 2)) when Phi_d is
    bordered by the plan's rods -- each rod's two coordinates appear only in its three joint
    equations, and the other equations plus one reduced row per rod determine the other
    dependent coordinates (square) -- else None (the block LU over the plan's blocks)."""
    rods = getattr(plan, "rods", ())
    if not rods or any(len(r.equations) != 3 or len(r.coordinates) != 2 for r in rods):
        return None
    rod_rows = [list(map(int, r.equations)) for r in rods]
    rod_cols = [list(map(int, r.coordinates)) for r in rods]
    taken_rows = {i for rr in rod_rows for i in rr}
    taken_cols = {i for rc in rod_cols for i in rc}
    core_rows = [i for i in range(system.n_c) if i not in taken_rows]
    core_cols = [int(i) for i in system.dependent if i not in taken_cols]
    if len(core_rows) + len(rods) != len(core_cols):
        return None
    for rr, rc in zip(rod_rows, rod_cols):
        if any(Jq[r, c] != 0 for r in range(system.n_c) if r not in rr for c in rc):
            return None
    return core_rows, core_cols, rod_rows, rod_cols
