"""Triangular and block-triangular solution of the position constraints (thesis section 3.3).

Pipeline for one system Phi(q, t) = 0 with independent coordinates qi:

1. the dependent coordinates are split into irreducible blocks by the Dulmage-Mendelsohn
   decomposition (:func:`kinedyn.topology.structure.block_triangular`) -- the per-loop
   decomposition of section 3.3.1 found automatically (3-RRR in mixed coordinates: one block
   per leg); each block is solved after the blocks it depends on;
2. each block is polynomialised (:func:`.groebner.polynomialise`) and its pure-lex basis is
   computed with a time limit, unknowns eliminated in reverse traversal order (section 3.3.1);
3. from the basis, each unknown is taken from the polynomial of *lowest degree* in it among
   those free of the unknowns not yet solved (ties: not the identity s^2 + c^2 - 1, then fewest
   operations; section 3.3.2); degree 1 and 2 have closed forms; angles from atan2(s, c);
4. each +/- of a square root is a branch, chosen once by the initial configuration;
5. a block whose basis does not finish, or has an unknown of degree > 2, is solved by Newton on
   that block's unknowns only (block-triangular plan), and the plan reports why.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import sympy as sp
import sympy.core.random as sympy_random

from ..errors import AssemblyError, ModelError, check_number, coordinates
from ..topology.structure import block_triangular
from .equations import T, ConstraintSystem
from .groebner import BasisResult, Polynomialised, groebner_basis, polynomialise


@dataclass
class Step:
    """``var`` from ``poly`` (degree 1: a v + b = 0; degree 2: a v^2 + b v + c = 0).

    ``alternative``: a second linear polynomial for ``var``; at run time the one with the larger
    normalised leading coefficient is used, so a denominator that vanishes on part of the
    workspace (the specialisation problem of section 3.3.2, e.g. a division by sin(crank))
    is never used there.
    """
    var: sp.Symbol
    poly: sp.Expr
    degree: int
    branch: int = 1
    alternative: sp.Expr | None = None
    track: bool = False
    separation: float = np.inf       # |root+ - root-| at the initial configuration

    @staticmethod
    def _coeffs(poly, var, degree):
        P = sp.Poly(poly, var)
        return [P.coeff_monomial(var ** k) for k in range(degree, -1, -1)]

    @property
    def coefficients(self) -> list[sp.Expr]:
        return self._coeffs(self.poly, self.var, self.degree)

    @property
    def expr(self) -> sp.Expr:
        """Closed-form value of ``var`` on this step's branch."""
        if self.degree == 1:
            a, b = self.coefficients
            if self.alternative is None:
                return sp.cancel(-b / a)
            a2, b2 = self._coeffs(self.alternative, self.var, 1)
            return Nearer(a2, a, sp.cancel(-b / a), sp.cancel(-b2 / a2))   # |a| >= |a2|
        if not self.track:
            return self._root(self.branch)
        rp, rm, ref = self._root(1), self._root(-1), self.reference
        return Nearer(rp - ref, rm - ref, rp, rm)

    @property
    def reference(self) -> sp.Symbol:
        """The previous value of ``var`` (branch tracking)."""
        return sp.Symbol(f"ref_{self.var.name}", real=True)

    def _root(self, sign):
        a, b, c = self.coefficients
        if b == 0:
            return sign * _sqrt(sp.cancel(-c / a))
        a, b, c, d = _quadratic(a, b, c)
        return (-b + sign * _sqrt(d)) / (2 * a)

    def roots(self) -> list[sp.Expr]:
        return [Step(self.var, self.poly, self.degree, s).expr for s in ((1, -1) if self.degree == 2 else (1,))]


def _quadratic(a, b, c) -> tuple:
    """``(a, b, c, b^2 - 4 a c)`` for the closed-form roots, in the cheaper of two forms: the
    coefficients as the basis gives them with the discriminant expanded (terms cancel when
    the coefficients are short: the four-bars' closed forms of Tables 4.1-4.2), or the
    coefficients factored and the discriminant left as b^2 - 4 a c (a basis over reduced
    parameters: the Stephenson-III's five-link loop, coefficients of degree 2-4 in six
    parameters, whose root took 2115 operations expanded)."""
    expanded = sp.expand(b ** 2 - 4 * a * c)
    fa, fb, fc = (_factor(x) for x in (a, b, c))
    factored = fb ** 2 - 4 * fa * fc
    if sp.count_ops(factored) < sp.count_ops(expanded):
        return fa, fb, fc, factored
    return a, b, c, expanded


def _factor(x):
    """``sympy.factor(x)`` with SymPy's random generator seeded for the call (and restored):
    its multivariate factorisation picks random evaluation points, and unseeded, the
    Stephenson-III's L_beta coefficients took 0.1 s in most plans and 13-50 s in others."""
    state = sympy_random.rng.getstate()
    sympy_random.rng.seed(0)
    try:
        return sp.factor(x)
    finally:
        sympy_random.rng.setstate(state)


class Clamp(sp.Function):
    """max(d, 0), never evaluated by SymPy. The guards of the closed forms are opaque
    functions, not ``Max`` / ``Piecewise``: rebuilding those around 100-digit coefficients
    (``xreplace`` while inlining the steps) made SymPy try to decide their signs, which took
    most of the 1589 s the 3-RRR module used to need."""
    nargs = 1
    is_guard = True

    def _pythoncode(self, printer):
        return f"max({printer._print(self.args[0])}, 0.0)"

    def _numpycode(self, printer):
        return f"{printer._module_format('numpy.maximum')}({printer._print(self.args[0])}, 0.0)"

    def _ccode(self, printer):
        return f"fmax({printer._print(self.args[0])}, 0.0)"

    def _eval_evalf(self, prec):
        return sp.Max(self.args[0], 0)._eval_evalf(prec)


class Nearer(sp.Function):
    """``x if |u| <= |v| else y``, never evaluated by SymPy (see :class:`Clamp`): the root
    nearer the previous value (branch tracking) or the linear step with the larger leading
    coefficient."""
    nargs = 4
    is_guard = True

    def _pythoncode(self, printer):
        u, v, x, y = (printer._print(a) for a in self.args)
        return f"(({x}) if abs({u}) <= abs({v}) else ({y}))"

    _numpycode = _lambdacode = _pythoncode

    def _ccode(self, printer):
        u, v, x, y = (printer._print(a) for a in self.args)
        return f"((fabs({u}) <= fabs({v})) ? ({x}) : ({y}))"

    def _eval_evalf(self, prec):
        u, v, x, y = (a._eval_evalf(prec) or a for a in self.args)
        if u.is_number and v.is_number:
            return (x if abs(u) <= abs(v) else y)._eval_evalf(prec)
        return None


def unclamp(e):
    """``e`` without the max(d, 0) guards of its square roots (for exact comparisons)."""
    return e.replace(lambda x: isinstance(x, (Clamp, sp.Max)), lambda x: x.args[0])


def _sqrt(d):
    """sqrt(max(d, 0)): a double root whose discriminant rounds below zero stays real; a
    clearly negative one (no real assembly) shows as a constraint residual, which the
    analyses check."""
    return sp.sqrt(d) if d.is_number else sp.sqrt(Clamp(d))


def _nearest_pair(step: Step, partner: Step) -> tuple[sp.Expr, sp.Expr]:
    """The root of quadratic ``step`` whose pair with ``partner`` (linear in step.var) is
    nearer the previous pair, and that pair's partner value (see
    :meth:`TriangularBlock.assignments`). Both pairs lie on the unit circle, so the nearer
    one has the larger scalar product with the previous pair."""
    roots = (step._root(1), step._root(-1))
    mates = [partner.expr.xreplace({step.var: r}) for r in roots]
    dots = [r * step.reference + m * partner.reference for r, m in zip(roots, mates)]
    # Nearer(u, v, x, y) is x where |u| <= |v|: u = 1 - dot is |pair - previous|^2 / 2
    u, v = 1 - dots[0], 1 - dots[1]
    return Nearer(u, v, *roots), Nearer(u, v, *mates)


def _normalised(g):
    return sp.expand(g / max(abs(c) for c in sp.Poly(g, *sorted(g.free_symbols, key=str)).coeffs()))


def extract_triangular(basis, unknowns) -> list[Step] | str:
    """Triangular steps (solve order) from a lex basis, or the reason why there are none."""
    unknowns = list(unknowns)
    steps: list[Step] = []
    for k in range(len(unknowns) - 1, -1, -1):
        v, later = unknowns[k], set(unknowns[:k])
        cands = [g for g in basis if v in g.free_symbols and not (g.free_symbols & later)]
        if not cands:
            return f"no basis polynomial determines {v} from the later unknowns"
        def rank(g):
            s_or_c = v.name[:2] in ("s_", "c_")
            other = sp.Symbol(("c_" if v.name.startswith("s_") else "s_") + v.name[2:], real=True)
            identity = s_or_c and sp.expand(g - (v ** 2 + other ** 2 - 1)) == 0
            return (sp.degree(g, v), identity, sp.count_ops(g))
        cands.sort(key=rank)
        g = cands[0]
        d = sp.degree(g, v)
        if d > 2:
            return f"{v} needs a polynomial of degree {d} (> 2: no closed form used; iterative)"
        alt = None
        if d == 1 and sp.Poly(g, v).LC().free_symbols:  # leading coefficient may vanish
            others = [h for h in cands[1:] if sp.degree(h, v) == 1 and not rank(h)[1]]
            if others:
                g, alt = _normalised(g), _normalised(others[0])
        steps.append(Step(v, sp.expand(g), int(d), alternative=alt))
    return steps


SECANT_STEP = 1e-7   # the secant's second point: x0 + SECANT_STEP (1 + |x0|)
TEAR_TRIES = 8       # tear candidates (structurally best first) whose bases are tried
TEAR_BUDGET = 30.0   # s: no further candidate is tried after this (bases are cached after)
TEAR_TIME_LIMIT = 10.0  # s: the time limit of each basis in the search
INNER_CHECK = 1e-12  # a converged secant's inner equations: round-off, or a clamped root


@dataclass
class TriangularBlock:
    equations: tuple[int, ...]
    unknowns: tuple[int, ...]          # coordinate indices
    poly: Polynomialised
    basis: BasisResult
    steps: list[Step]
    sine_first: frozenset = frozenset()   # angles whose sine is solved before their cosine
    definitions: list = field(default_factory=list)   # (parameter symbol, expr in knowns)

    kind = "triangular"

    @property
    def separation(self) -> float:
        """Smallest distance between the two roots of a quadratic step at the initial
        configuration (inf without quadratics): how well the solved unknowns tell the
        assembly modes apart there."""
        return min((s.separation for s in self.steps if s.degree == 2), default=np.inf)

    def assignments(self, system: ConstraintSystem) -> list[tuple[sp.Symbol, sp.Expr]]:
        """(target, expression) in evaluation order: reduced-known parameters, steps, then
        angles by atan2.

        A tracked quadratic step in an angle's sine or cosine whose partner follows from a
        linear step keeps the root whose (sine, cosine) pair is nearer the previous one, not
        the root nearer the previous value: where the two assembly modes share the solved
        value (mirror images about a horizontal line share their cosines) the roots merge
        while the pairs stay apart, so a scalar choice can swap modes there (the free
        Stephenson-III embedded in beta3 at t = 0.574 s, whose beta1 cosine roots cross)."""
        partner = {}
        for s_, c_ in self.poly.trig.values():
            partner[s_], partner[c_] = c_, s_
        unsolved = {s.var for s in self.steps}
        paired: dict = {}                  # the partners' values, chosen with their roots
        out = list(self.definitions)
        for k, step in enumerate(self.steps):
            unsolved.discard(step.var)
            expr = paired.get(step.var, step.expr)
            if step.degree == 2 and step.track and step.var in partner:
                later = next((p for p in self.steps[k + 1:] if p.var == partner[step.var]), None)
                if (later is not None and later.degree == 1
                        and not later.expr.free_symbols & (unsolved - {later.var})):
                    expr, paired[later.var] = _nearest_pair(step, later)
            out.append((step.var, expr))
        for i in self.unknowns:
            c = system.coordinates[i]
            if c.angle:
                s_, c_ = self.poly.trig[c.symbol]
                out.append((c.symbol, sp.atan2(s_, c_)))
        return out


@dataclass
class NewtonBlock:
    equations: tuple[int, ...]
    unknowns: tuple[int, ...]
    reason: str
    timed_out: bool = False        # the basis did not finish in its time limit

    kind = "newton"


@dataclass
class TornBlock:
    """A block solved by iterating on one of its coordinates (tearing; the thesis's
    beta1-driven Stephenson-III, Fig. 4.7, iterates on beta2 alone): with ``tear`` taken as
    known, the block's equations but ``residual`` split into ``inner`` triangular blocks that
    give the other unknowns in closed form, and the secant method on ``tear`` drives the
    ``residual`` equation to zero. ``reason``: why the block as a whole is not triangular."""
    equations: tuple[int, ...]
    unknowns: tuple[int, ...]
    tear: int                  # coordinate index iterated on
    residual: int              # equation index left as the residual
    inner: list                # TriangularBlocks in solution order
    reason: str

    kind = "torn"


@dataclass
class Plan:
    """Blocks in solution order for ``system`` (its independent coordinates as inputs).

    derived: (name, expression) of equations implied by the constraints and used by the
    position blocks -- the constant-distance constraints of rods (thesis eq. 5.2); block
    equation indices >= ``system.n_c`` refer to them. lu_blocks: (equations, unknowns) of
    Phi_d's irreducible diagonal blocks, the block structure of the velocity and
    acceleration problems (default: the position blocks, which are then exactly those).
    """
    system: ConstraintSystem
    blocks: list = field(default_factory=list)
    derived: tuple = ()
    lu_blocks: list | None = None
    rods: tuple = ()           # the rods (spatial.Rod) whose distance constraints are derived

    @property
    def fully_triangular(self) -> bool:
        return all(b.kind == "triangular" for b in self.blocks)

    @property
    def equations(self) -> tuple:
        """Phi, then the derived equations."""
        return tuple(self.system.phi) + tuple(e for _, e in self.derived)

    @property
    def equation_names(self) -> tuple:
        return tuple(self.system.constraint_names) + tuple(n for n, _ in self.derived)

    @property
    def lu(self) -> list:
        return self.lu_blocks or [(b.equations, b.unknowns) for b in self.blocks]

    def report(self) -> list[str]:
        names = [c.name for c in self.system.coordinates]
        lines = []
        for k, b in enumerate(self.blocks):
            what = ", ".join(names[i] for i in b.unknowns)
            shape = f"{len(b.equations)} equations" if len(b.equations) != len(b.unknowns) else ""
            extra = [self.equation_names[i] for i in b.equations if i >= self.system.n_c]
            if extra:
                shape = f"{len(extra)} constant-distance constraints"
            shape = f", {shape}" if shape else ""
            if b.kind == "triangular":
                deg = "".join(str(s.degree) for s in b.steps)
                reduced = ", known coefficients reduced" if b.definitions else ""
                lines.append(f"block {k} [{what}]: triangular (basis {b.basis.seconds:.2f} s"
                             f"{', cached' if b.basis.cached else ''}{reduced}; step degrees "
                             f"{deg}{shape})")
            elif b.kind == "torn":
                inner = "; ".join("[" + ", ".join(names[i] for i in ib.unknowns) + "] degrees "
                                  + "".join(str(st.degree) for st in ib.steps) for ib in b.inner)
                lines.append(f"block {k} [{what}]: torn, secant on {names[b.tear]} alone with "
                             f"residual {self.equation_names[b.residual]!r}; triangular inside: "
                             f"{inner} -- as a whole: {b.reason}")
            else:
                lines.append(f"block {k} [{what}]: Newton on {len(b.unknowns)} unknown(s){shape} -- {b.reason}")
        return lines

    @cached_property
    def numeric(self):
        """NumPy callables of all equations (Phi and derived) and their Jacobian."""
        args = (sp.Matrix(self.system.q), T)
        F = sp.Matrix(self.equations)
        return sp.lambdify(args, F, "numpy"), sp.lambdify(args, F.jacobian(self.system.q), "numpy")

    # ---- reference evaluation (NumPy; the compiled kernels are in .codegen) ------------------
    def solve(self, q, t: float = 0.0, tol: float = 1e-13, max_iter: int = 30) -> np.ndarray:
        """Dependent coordinates from the independent ones in ``q`` (others are guesses)."""
        q = coordinates(self.system, q, "q").copy()
        check_number("t", t, -math.inf)
        for b in self.blocks:
            if b.kind == "triangular":
                f = _block_function(self.system, b)
                q[list(b.unknowns)] = f(q, t)
            elif b.kind == "torn":
                self._torn_block(b, q, t, tol, max_iter)
            else:
                self._newton_block(b, q, t, tol, max_iter)
        return q

    def _residuals(self, q, t) -> np.ndarray:
        """All equations (Phi, then the derived ones) at q, t, as a flat array."""
        return np.asarray(self.numeric[0](q, float(t)), float).ravel()

    def _torn_block(self, block, q, t, tol, max_iter):
        """Secant on the tear coordinate, else (it stalls or leaves the inner blocks' real
        roots) Newton on the whole block from where it started; the compiled twin is in
        :mod:`.kernels`. Returns the number of closed-form evaluations, or None when it fell
        back to Newton."""
        unk = list(block.unknowns)
        start = q[unk].copy()
        fns = [(list(b.unknowns), _block_function(self.system, b)) for b in block.inner]
        others = [i for i in unk if i != block.tear]

        def residual(x):   # from the guess each time: the inner roots nearest it (kernels.py)
            q[block.tear] = x
            q[others] = start[[unk.index(i) for i in others]]
            for cols, f in fns:
                q[cols] = f(q, t)
            return float(self._residuals(q, t)[block.residual])
        eqs = list(block.equations)
        x0 = q[block.tear]
        f = residual(x0)
        x = x0 + SECANT_STEP * (1.0 + abs(x0))
        for it in range(1, max_iter + 1):
            if abs(f) <= tol:  # the inner equations too (not so where a root was clamped)
                if np.abs(self._residuals(q, t)[eqs]).max() <= max(tol, INNER_CHECK):
                    return it
                break
            f0, f = f, residual(x)
            if f == f0 or not np.isfinite(f):
                break
            x0, x = x, x - f * (x - x0) / (f - f0)
        q[unk] = start
        self._newton_block(block, q, t, tol, max_iter)
        return None

    def _newton_block(self, block, q, t, tol, max_iter):
        eqs, unk = list(block.equations), list(block.unknowns)
        res = lambda: self._residuals(q, t)[eqs]  # noqa: E731
        for _ in range(max_iter):
            r = res()
            if np.abs(r).max() <= tol:
                return
            J = np.asarray(self.numeric[1](q, float(t)), float)[np.ix_(eqs, unk)]
            q[unk] -= np.linalg.lstsq(J, r, rcond=None)[0]
        if np.abs(res()).max() > 1e3 * tol:
            raise AssemblyError(f"{self.system.name}: Newton on the block did not converge",
                                time=t, constraints=[self.equation_names[i] for i in eqs])


def _block_function(system, block):
    if getattr(block, "_fn", None) is None:
        assign = block.assignments(system)
        known = sorted({s for _, e in assign for s in e.free_symbols} - {a for a, _ in assign},
                       key=lambda s: s.name)
        qsym = sp.IndexedBase("q")
        base = {}
        for i, c in enumerate(system.coordinates):
            base[c.symbol] = qsym[i]
            if c.angle:
                s_, c_ = sp.Symbol(f"s_{c.symbol.name}", real=True), sp.Symbol(f"c_{c.symbol.name}", real=True)
                base[s_], base[c_] = sp.sin(qsym[i]), sp.cos(qsym[i])
        for s in known:
            if s.name.startswith("ref_"):
                base[s] = base[sp.Symbol(s.name[4:], real=True)]
        pre = {s: base[s] for s in known if s in base}
        targets = [system.coordinates[i].symbol for i in block.unknowns]
        lines = [f"    {s.name} = {sp.pycode(e)}" for s, e in pre.items()]
        lines += [f"    {s.name} = {sp.pycode(e)}" for s, e in assign]
        src = ("import math\ndef f(q, t):\n" + "\n".join(lines) +
               f"\n    return [{', '.join(s.name for s in targets)}]\n")
        ns: dict = {}
        exec(compile(src, "<triangular block>", "exec"), ns)  # generated from SymPy expressions
        block._fn = lambda q, t: np.array(ns["f"](q, t), float)
    return block._fn


def make_plan(system: ConstraintSystem, *, order=None, time_limit: float = 60.0,
              use_cache: bool = True, tol: float = 1e-12, track: bool = True,
              sine_first=None, reduce_knowns: bool | None = None, rods: bool = True,
              distance_time_limit: float = 10.0, tear: bool | None = None) -> Plan:
    """Block-triangular solution plan of ``system`` with branches chosen at ``system.q0``.

    order: optional coordinate names, eliminated first to last (default: reverse traversal
    order, i.e. the highest coordinate index first). track: branch tracking (see
    :func:`_choose_branches`); False keeps the thesis's fixed signs. sine_first: angle
    coordinate names whose sine is solved before their cosine (the unknown of the quadratic
    should tell the assembly modes apart over the workspace: a four-bar's rocker cosine does
    not at crank angle pi, its sine does); default None chooses per block
    (:func:`_auto_sine_first`; not with ``reduce_knowns``, i.e. spatial systems keep the
    default order their tests validate), a list (even empty) overrides. reduce_knowns: intermediate-variable reduction
    (:func:`reduce_known_coefficients`; default: the system's ``reduce_knowns`` attribute,
    True for spatial systems; planar systems try a block again with it when its plain basis
    times out and it reads two or more known angles, see :func:`_block`).

    rods (solution flow of thesis section 5.1): a system with rod legs (``system.rods``,
    spatial binary links between point joints, :class:`~.spatial.Rod`) is solved in two
    stages -- first the other dependent coordinates (a wheel carrier's pose) from the rods'
    constant-distance constraints (eq. 5.2) and the remaining equations, block by block
    (their bases get at most ``distance_time_limit`` s: the thesis found them too complex and
    iterated), then each rod's own coordinates from its three joint equations, one small
    triangular block per rod ((5.4)-(5.7)). Without rods, or ``rods=False``, one stage.

    tear: a block that is not triangular as a whole is torn where possible
    (:func:`_tear`: one coordinate iterated on by the secant method, the rest in closed form,
    thesis Fig. 4.7); default None: planar systems (not ``reduce_knowns``), whose bases are
    quick enough to search; False keeps Newton on the whole block.
    """
    for name, value in {"time_limit": time_limit, "distance_time_limit": distance_time_limit,
                        "tol": tol}.items():
        check_number(name, value, above=name != "tol")
    if not system.n_c:  # e.g. an open chain in joint coordinates
        raise ModelError(f"{system.name}: no constraints in its symbolic coordinates, so "
                         "nothing to triangularise or embed (every coordinate is independent; "
                         "use method='augmented', 'hdca' or the relative formulation)")
    if reduce_knowns is None:
        reduce_knowns = getattr(system, "reduce_knowns", None)
    if tear is None:
        tear = not reduce_knowns
    dep = list(system.dependent)
    legs = [r for r in getattr(system, "rods", ()) if rods and set(r.coordinates) <= set(dep)]
    lu = _dm_blocks(system, range(system.n_c), dep, system.phi)
    derived = tuple((f"rod {r.name}: distance", r.distance) for r in legs)
    plan = Plan(system, derived=derived, lu_blocks=lu if legs else None, rods=tuple(legs))
    phi = plan.equations
    rank = {}
    if order is not None:
        rank = {system.index(n): k for k, n in enumerate(order)}
    fixed = None if sine_first is None else {system.coordinates[system.index(n)].symbol
                                             for n in sine_first}
    if legs:
        leg_eqs = {i for r in legs for i in r.equations}
        leg_q = {i for r in legs for i in r.coordinates}
        core = [i for i in range(system.n_c) if i not in leg_eqs] + \
            list(range(system.n_c, system.n_c + len(legs)))
        stages = [(_dm_blocks(system, core, [i for i in dep if i not in leg_q], phi),
                   min(time_limit, distance_time_limit), -1)]
        # a rod's joint angles in traversal order, the first eliminated first (thesis (5.3):
        # s_alpha > c_alpha > s_beta > c_beta), so the +/- falls on s_beta, which tells the
        # two equivalent U-joint solutions apart wherever the rod is not along the first axis
        stages.append(([(tuple(r.equations), tuple(r.coordinates)) for r in legs], time_limit, 1))
    else:
        stages = [(lu, time_limit, -1)]
    for blocks, limit, direction in stages:
        for eqs, unk in blocks:
            unk = tuple(sorted(unk, key=lambda i: rank.get(i, direction * i - 10 ** 6)))
            block = _block(system, phi, plan.equation_names, eqs, unk, fixed or set(), limit,
                           use_cache, tol, track, reduce_knowns)
            block = _sine_first_variant(system, phi, plan.equation_names, block, fixed, limit,
                                        use_cache, tol, track, reduce_knowns)
            if block.kind == "newton" and tear:
                arrange = lambda u, d=direction: tuple(sorted(  # noqa: E731
                    u, key=lambda i: rank.get(i, d * i - 10 ** 6)))
                block = _tear(system, phi, plan.equation_names, block, arrange, fixed, limit,
                              use_cache, tol, track, reduce_knowns) or block
            plan.blocks.append(block)
    return plan


def _sine_first_variant(system, phi, names, block, fixed, time_limit, use_cache, tol, track,
                        reduce_knowns):
    """The block as :func:`_auto_sine_first` orders it, for plain (unreduced) triangular blocks
    when the caller did not fix the order."""
    if fixed is None and block.kind == "triangular" and not reduce_knowns \
            and not block.definitions:
        return _auto_sine_first(system, phi, names, block, time_limit, use_cache, tol, track)
    return block


def _tear(system, phi, names, block, arrange, fixed, time_limit, use_cache, tol, track,
          reduce_knowns):
    """A :class:`TornBlock` for a block that is not triangular as a whole, or None.

    Candidates: every (tear coordinate, residual equation) pair for which the other
    equations determine the other unknowns (Dulmage-Mendelsohn on them); the structurally
    best first -- smallest largest sub-block, then the fewest known angles in it (their sines
    and cosines multiply the unknowns' in every coefficient, which is what makes bases
    slow), then the plan's coordinate order. Of the structurally best ones (at most
    ``TEAR_TRIES`` tried, none started after ``TEAR_BUDGET`` s, each basis limited to
    ``TEAR_TIME_LIMIT`` s) whose sub-blocks are all triangular in time, the one
    whose inner quadratics have the farthest-apart roots at the initial configuration: where
    two roots meet, an inner block is at a limit position, its solution stops being smooth in
    the tear value, and the secant fails (the driven landing gear torn at B: roots 0.011
    apart at the start, and the secant failed in 39 % of the 1-ms steps). ``arrange`` puts a
    sub-block's unknowns in the plan's elimination order. The Stephenson-III driven by beta1
    tears at beta2, as the thesis's Fig. 4.7: L_theta gives beta3 and theta1, one closure
    equation of L_beta gives beta4, and the other is the residual."""
    eqs, unk = block.equations, block.unknowns
    if len(unk) < 2:
        return None
    co = system.coordinates
    candidates = []
    for u in unk:
        for r in eqs:
            try:
                parts = _dm_blocks(system, [e for e in eqs if e != r], [c for c in unk if c != u],
                                   phi)
            except ModelError:
                continue
            b_eqs, b_unk = max(parts, key=lambda p: len(p[1]))
            read = set().union(*(phi[e].free_symbols for e in b_eqs))
            known_angles = sum(1 for i, c in enumerate(co)
                               if c.angle and i not in b_unk and c.symbol in read)
            candidates.append(((len(b_unk), known_angles, unk.index(u), eqs.index(r)), u, r,
                               parts))
    found = []   # (smallest inner root separation at q0, order tried, key, TornBlock)
    deadline = time.monotonic() + TEAR_BUDGET
    limit = min(time_limit, TEAR_TIME_LIMIT)
    for key, u, r, parts in sorted(candidates, key=lambda c: c[0])[:TEAR_TRIES]:
        if (found and key[:2] != found[0][2]) or time.monotonic() > deadline:
            break    # structurally worse than the torn blocks found, or out of time
        inner = []
        for b_eqs, b_unk in parts:
            sub = _block(system, phi, names, b_eqs, arrange(b_unk), fixed or set(), limit,
                         use_cache, tol, track, reduce_knowns)
            if sub.kind != "triangular":
                break
            inner.append(_sine_first_variant(system, phi, names, sub, fixed, limit,
                                             use_cache, tol, track, reduce_knowns))
        else:
            found.append((min(b.separation for b in inner), len(found), key[:2],
                          TornBlock(eqs, unk, u, r, inner, block.reason)))
    if found:
        return max(found, key=lambda f: (f[0], -f[1]))[3]
    return None


def _dm_blocks(system, equations, unknowns, phi) -> list[tuple[tuple, tuple]]:
    """Irreducible (equations, unknowns) blocks in solution order (Dulmage-Mendelsohn)."""
    equations, unknowns = list(equations), list(unknowns)
    col = {i: k for k, i in enumerate(unknowns)}
    syms = {c.symbol: i for i, c in enumerate(system.coordinates)}
    incidence = [sorted(col[syms[s]] for s in phi[e].free_symbols if s in syms and syms[s] in col)
                 for e in equations]
    btf = block_triangular(incidence, len(unknowns))
    if not btf.is_square:
        raise ModelError(f"{system.name}: the constraints do not determine the dependent "
                         "coordinates (structurally over- or under-determined)")
    return [(tuple(sorted(equations[e] for e in blk.equations)),
             tuple(sorted(unknowns[u] for u in blk.unknowns))) for blk in btf.blocks]


def _block(system, phi, names, eqs, unk, sine_first, time_limit, use_cache, tol, track, reduce_knowns):
    """One block: polynomials, basis, triangular steps and branches -- or a Newton block.

    reduce_knowns None (planar systems): the plain basis first, and if it times out and the
    block's equations read two or more known angles, again with the intermediate-variable
    reduction. Those angles' sines and cosines multiply the unknowns' in every coefficient,
    and the reduction condenses such sums of products into a few parameters: the
    Stephenson-III's five-link loop with beta2, beta3 known has no plain basis in 10 s and a
    reduced one in 0.8 s (fully triangular). Not first: the plain basis is the thesis's where
    it finishes (the tests compare it), and is often the quicker (the spatial four-bar's second
    block with b1, b4 known: 0.09 s plain, no reduced basis in 60 s)."""
    exprs = [phi[i] for i in eqs]
    free = set().union(*(e.free_symbols for e in exprs))
    known = [i for i in range(system.n_q) if i not in unk and system.coordinates[i].symbol in free]
    co = system.coordinates
    poly = polynomialise(exprs, [co[i].symbol for i in unk if co[i].angle],
                         [co[i].symbol for i in unk if not co[i].angle],
                         [co[i].symbol for i in known if co[i].angle],
                         [co[i].symbol for i in known if not co[i].angle] + ([T] if T in free else []),
                         tol=tol, sine_first=sine_first)
    definitions = []
    if reduce_knowns:
        poly, definitions = reduce_known_coefficients(poly)
    res = groebner_basis(poly.polys, poly.unknowns + poly.knowns, time_limit, use_cache)
    if not res.ok:
        block = NewtonBlock(eqs, unk, f"Groebner basis did not finish in {time_limit:g} s "
                                      "(fall-back: Newton)", timed_out=True)
        if reduce_knowns is None and sum(co[i].angle for i in known) >= 2:
            retry = _block(system, phi, names, eqs, unk, sine_first, time_limit, use_cache, tol,
                           track, True)
            if retry.kind == "triangular":
                return retry
            why = "did not finish either" if retry.timed_out else retry.reason
            block.reason += f"; with the known coefficients reduced: {why}"
        return block
    if any(g.is_number and g != 0 for g in res.basis):
        raise ModelError(f"{system.name}: constraints {[names[i] for i in eqs]} "
                         "are inconsistent (Groebner basis {1})")
    steps = extract_triangular(res.basis, poly.unknowns)
    if isinstance(steps, str):
        return NewtonBlock(eqs, unk, steps + " (fall-back: Newton)")
    block = TriangularBlock(eqs, unk, poly, res, steps, frozenset(sine_first), definitions)
    _choose_branches(system, block, system.q0, track=track)
    return block



def _auto_sine_first(system, phi, names, block, time_limit, use_cache, tol, track):
    """Which of s_x, c_x carries the +/- (automatic branch choice).

    The two assembly modes of a quadratic step are mirror images about a line through the
    step's pivot (a four-bar's rocker about the line from its pivot to the crank pin); their
    cosines coincide when that line is horizontal, their sines when it is vertical, and a
    fixed sign swaps modes where the solved unknown coincides. So for every angle whose s or
    c is the unknown of a quadratic, the other order is tried too (one angle at a time) and
    the variant whose two roots are farthest apart at the initial configuration -- the mirror
    line farthest from the ambiguous direction -- is kept. ``sine_first=[...]`` overrides.
    """
    for x in _quadratic_angles(block):
        other = _block(system, phi, names, block.equations, block.unknowns, set(block.sine_first) ^ {x},
                       time_limit, use_cache, tol, track, False)
        if other.kind == "triangular" and other.separation > block.separation * (1 + 1e-9):
            block = other
    return block


def _quadratic_angles(block):
    angle_of = {v: x for x, sc in block.poly.trig.items() for v in sc}
    return list(dict.fromkeys(angle_of[s.var] for s in block.steps
                              if s.degree == 2 and s.var in angle_of))


def reduce_known_coefficients(poly: Polynomialised) -> tuple[Polynomialised, list]:
    """Intermediate-variable reduction (digest section 6.3, beyond the thesis): every
    coefficient of a monomial in the unknowns that depends on the knowns -- e.g. a
    Gough-Stewart leg's platform-point coordinate x + (R(phi, theta, psi) P_k)_x - B_x,k --
    becomes a fresh parameter symbol k<i>, so the basis is computed over a few parameters
    instead of the whole pose (the thesis's Maple took about 2 h per leg without it). The
    known angles carry no s^2 + c^2 - 1 (section 5.1), so the parameters are as free as the
    knowns were and the basis specialises the same way. Returns the reduced system and the
    definitions [(k<i>, expression in the knowns)] evaluated before the triangular steps."""
    unknowns = list(poly.unknowns)
    params: dict = {}
    defs = []

    def param(c):
        c = sp.expand(c)
        for sign in (1, -1):
            if sign * c in params:
                return sign * params[sign * c]
        sym = sp.Symbol(f"k{len(params)}", real=True)
        params[c] = sym
        defs.append((sym, c))
        return sym

    polys = []
    constant = set()
    for p in poly.polys:
        P = sp.Poly(p, *unknowns)
        terms = []
        for mon, c in P.terms():
            c = sp.expand(c)
            if c.free_symbols:
                c = param(c)
                if not any(mon):
                    constant |= c.free_symbols
            terms.append(c * sp.Mul(*[u ** e for u, e in zip(unknowns, mon)]))
        polys.append(sp.expand(sp.Add(*terms)))
    # the parameters of constant terms first (right after the unknowns in the lex order): the
    # Stephenson-III's five-link loop took 7.6 s with the parameters in order of appearance,
    # 0.7 s so
    knowns = tuple(sorted((s for s, _ in defs), key=lambda s: s not in constant))
    reduced = Polynomialised(tuple(polys), poly.unknowns, knowns, poly.trig)
    return reduced, defs


def _choose_branches(system, block, q0, t=0.0, track=True):
    """Each square root's sign: the root nearest the initial configuration (section 3.3.2).

    With ``track`` the kernels keep, at every later call, the root nearest the previous
    value instead of a fixed sign: where the two assembly modes share the unknown's value (a
    four-bar's rocker cosine at crank angle pi, where the modes are mirror images about the
    ground line) the fixed-sign root jumps to the other mode, the nearest root does not.
    """
    val = {}
    for i, c in enumerate(system.coordinates):
        if c.angle:
            s_, c_ = sp.Symbol(f"s_{c.symbol.name}", real=True), sp.Symbol(f"c_{c.symbol.name}", real=True)
            val[s_], val[c_] = np.sin(q0[i]), np.cos(q0[i])
        else:
            val[c.symbol] = q0[i]
    val[T] = t
    for sym, e in block.definitions:
        syms = sorted(e.free_symbols, key=str)
        val[sym] = float(sp.lambdify(syms, e, "numpy")(*[val[x] for x in syms]))
    ref = dict(val)

    def num(e):
        e = e.xreplace({r: val[sp.Symbol(r.name[4:], real=True)] for r in e.free_symbols
                        if r.name.startswith("ref_")})
        syms = sorted(e.free_symbols, key=str)
        return complex(sp.lambdify(syms, e, "numpy")(*[val[x] for x in syms]))

    for step in block.steps:
        if step.degree == 2:
            roots = []
            for sgn in (1, -1):
                r = num(unclamp(step._root(sgn)))
                roots.append((abs(r - ref[step.var]), sgn, r.real))
            _, step.branch, value = min(roots)
            step.separation = abs(roots[0][2] - roots[1][2])
            step.track = track
        else:
            value = num(step.expr).real
        val[step.var] = value
