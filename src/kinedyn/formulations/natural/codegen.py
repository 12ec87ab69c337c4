"""Straight-line machine code for one set of natural-coordinate equations: Phi with Phi_q (which
Phi_q alone runs too), Phi alone, Phi_t and gamma of :mod:`.kernels`, unrolled row by row, as
LLVM IR (:mod:`kinedyn._llvm`).

The loops of :mod:`.kernels` read, for every row, its kind, its entities, their terms and the
Jacobian positions they feed from index arrays, and branch on each. For a fixed set of rows (a
plan's :class:`~.data.RowSet`: the global system, a structural group) all of that is constant:
unrolled, the entities are sums of coordinates times coefficients, each row is a few
multiplications, and each Jacobian entry one store to a fixed position. Measured on the
paper's Stewart platform (102 equations: 30 linear, 72 dot products; 52 entities, 462 Jacobian
entries; idle AMD EPYC, 20 000 calls in a compiled loop, medians of 7): Phi with Phi_q 1.51 ->
0.18 µs, gamma 0.67 -> 0.06 µs, Phi_t 0.22 -> 0.01 µs; the paper's step (one Newton iteration,
global sparse) about 5.5 -> 3.2 µs.

Compiling takes about 0.35 ms per unit of :func:`work` once the rows are cut into functions of
``CHUNK`` units (:func:`module_ir`): the Stewart platform 0.1 s, scissor-platform-6x9 (768
equations) 1.2 s, 16x9 (2028) 4.2 s, 22x29 (8064, work 39 396) 14 s; sets above ``LIMIT``
keep the loops. The object code is cached on disk (``natural/`` under the cache root), so a
model pays this once per machine.

The code does the loops' arithmetic in the same order, except that it leaves out what cannot
change a finite result: a multiplication by a coefficient 1 or -1 (exact), a term whose
coefficient is 0, and the additions of 0 that start a sum (these can change the sign of a zero,
nothing else). The tests compare both on every library model.

The coefficients (the entities' terms and constants, the equations' targets, the constant
Jacobian entries: the model's geometry, :data:`COEFFICIENTS`) are read from the array
``data.coef`` passed to the code, not written into it: a load from memory, as a literal double
is on x86-64 too. So the code depends on the model's structure only (:func:`structure_key`),
and is compiled once for all the geometries of a model: a design study that varies a length
compiles it once, not once per case (four-bar: about 4.5 ms a case before).

Functions of time reach the code as the table ``fval`` (one row per function: value, first and
second derivative) that :func:`.kernels._time` fills, so the code is a pure function of q, q̇
and that table.
"""
from __future__ import annotations

import hashlib
import os

import numpy as np

from ..._llvm import Function, compile_structure, constant, in_parts, part
from .layout import ANGLE, DOT, LINEAR

#: code slots of a RowSet: addresses of its four functions (0: use the loops)
PHI_JAC, PHI, PHI_T, GAMMA = range(4)
NAMES = ("phi_jac", "phi", "phi_t", "gamma")
NO_CODE = np.zeros(len(NAMES), np.int64)
#: the arrays of NaturalData whose values the code reads from its argument ``%c`` (the
#: coefficient array ``data.coef``, :func:`coefficients`) and those it is written for
COEFFICIENTS = ("ent_alpha", "ent_beta", "ent_const", "con_value", "jac_const")
STRUCTURE = ("ent_start", "ent_block", "con_kind", "con_ent", "con_comp", "con_fn", "jac_indptr",
             "jc_start", "jc_slot", "jc_term", "jc_pos", "jc_first")
CHUNK = 128  # work per generated function (see module_ir)
LIMIT = 40000  # largest work (:func:`work`) a row set gets code for (about 14 s)
SWITCH = "KINEDYN_NATURAL_CODEGEN"  # "0": row sets made from now on use the loops


class _Rows:
    """Emits the code of one function over the rows of a RowSet."""

    def __init__(self, data, f: Function):
        self.data = data
        self.d = int(data.dim)
        self.f = f
        self.values = {}  # entity id -> SSA components (with constants, from q)
        self.rates = {}   # entity id -> SSA components (without, from qd)
        self.at = offsets(data)  # where each coefficient array starts in %c

    # ---- arithmetic with constant coefficients (None stands for an exact zero) ---------------
    def scaled(self, c: float, v: str | None, at: int | None = None) -> str | None:
        """c v; ``at``: where c is in the coefficient array ``%c`` (read from there), None: a
        literal. The code is the same for any c but 0, 1 and -1 (see :func:`structure_key`)."""
        if v is None or c == 0.0:
            return None
        if c == 1.0:
            return v
        if c == -1.0:
            return self.f.neg(v)
        return self.f.mul(constant(c) if at is None else self.f.read("%c", at), v)

    def offset(self, c: float, at: int) -> str | None:
        """The coefficient ``c`` at ``at`` of ``%c`` as an addend (None: an exact zero)."""
        return None if c == 0.0 else self.f.read("%c", at)

    def plus(self, a: str | None, b: str | None) -> str | None:
        if a is None:
            return b
        return a if b is None else self.f.add(a, b)

    def minus(self, a: str | None, b: str | None) -> str | None:
        if b is None:
            return a
        if a is None:
            return self.f.neg(b)
        return self.f.sub(a, b)

    def times(self, a: str | None, b: str | None) -> str | None:
        return None if a is None or b is None else self.f.mul(a, b)

    def real(self, v: str | None) -> str:
        return "0.0" if v is None else v

    # ---- inputs ------------------------------------------------------------------------------
    def fval(self, fid: int, order: int) -> str | None:
        """Function ``fid``'s derivative of ``order`` at the current time (None: no function)."""
        return None if fid < 0 else self.f.read("%fval", 3 * fid + order)

    def entity(self, e: int, rate: bool) -> list:
        """Entity e's components from q (with its constant) or its rate from qd (without)."""
        cache = self.rates if rate else self.values
        if e not in cache:
            D, d = self.data, self.d
            x, comps = ("%qd" if rate else "%q"), [None] * d
            for t in range(D.ent_start[e], D.ent_start[e + 1]):
                o = d * int(D.ent_block[t])
                a, b = float(D.ent_alpha[t]), float(D.ent_beta[t]) if d == 2 else 0.0
                ta, tb = self.at["ent_alpha"] + t, self.at["ent_beta"] + t
                xs = [self.f.read(x, o + k) for k in range(d)]
                if d == 2:  # (a I + b J) x with J the rotation by +90 degrees
                    comps[0] = self.plus(comps[0], self.minus(self.scaled(a, xs[0], ta),
                                                              self.scaled(b, xs[1], tb)))
                    comps[1] = self.plus(comps[1], self.plus(self.scaled(a, xs[1], ta),
                                                             self.scaled(b, xs[0], tb)))
                else:
                    for k in range(d):
                        comps[k] = self.plus(comps[k], self.scaled(a, xs[k], ta))
            if not rate:
                at = self.at["ent_const"] + d * e
                comps = [self.plus(c, self.offset(v, at + k))
                         for k, (c, v) in enumerate(zip(comps, D.ent_const[e]))]
            cache[e] = comps
        return cache[e]

    # ---- products of entities ----------------------------------------------------------------
    def dot(self, a: list, b: list) -> str | None:
        s = None
        for x, y in zip(a, b):
            s = self.plus(s, self.times(x, y))
        return s

    def triple(self, a: list, b: list, c: list) -> str | None:
        """2-D: a x b; 3-D: (a x b) . c, summed in the loops' order."""
        m, p = self.times, self.minus
        if self.d == 2:
            return p(m(a[0], b[1]), m(a[1], b[0]))
        s = m(p(m(a[1], b[2]), m(a[2], b[1])), c[0])
        s = self.plus(s, m(p(m(a[2], b[0]), m(a[0], b[2])), c[1]))
        return self.plus(s, m(p(m(a[0], b[1]), m(a[1], b[0])), c[2]))

    def row_entities(self, r: int, rate: bool = False) -> list:
        ids = self.data.con_ent[r]
        return [self.entity(int(e), rate) if e >= 0 else [None] * self.d for e in ids]

    def store(self, array: str, i: int, v: str | None) -> None:
        self.f.store(array, i, self.real(v))

    # ---- rows --------------------------------------------------------------------------------
    def phi(self, i: int, r: int) -> None:
        D = self.data
        kind, fn = int(D.con_kind[r]), D.con_fn[r]
        ev = self.row_entities(r)
        if kind == ANGLE:
            v = self.minus(self.times(self.fval(int(fn[0]), 0), self.dot(ev[0], ev[1])),
                           self.times(self.fval(int(fn[1]), 0), self.triple(*ev)))
        else:
            v = ev[0][int(D.con_comp[r])] if kind == LINEAR else self.dot(ev[0], ev[1])
            value = self.offset(float(D.con_value[r]), self.at["con_value"] + r)
            v = self.minus(self.minus(v, value), self.fval(int(fn[0]), 0))
        self.store("%phi", i, v)

    def jacobian(self, r: int) -> None:
        D, d = self.data, self.d
        kind = int(D.con_kind[r])
        if kind == LINEAR:
            for p in range(D.jac_indptr[r], D.jac_indptr[r + 1]):
                self.f.store("%values", p, self.f.read("%c", self.at["jac_const"] + p))
            return
        ev = self.row_entities(r)
        if kind == DOT:
            g = [ev[1], ev[0]]
        else:
            S, C = self.fval(int(D.con_fn[r, 0]), 0), self.fval(int(D.con_fn[r, 1]), 0)
            g = self.angle_gradient(S, C, ev)
        entries = {}  # Jacobian position -> SSA value, stored once the row is done
        for c in range(D.jc_start[r], D.jc_start[r + 1]):
            s, term, p = int(D.jc_slot[c]), int(D.jc_term[c]), int(D.jc_pos[c])
            a, ta = float(D.ent_alpha[term]), self.at["ent_alpha"] + term
            if d == 2:
                b, tb = float(D.ent_beta[term]), self.at["ent_beta"] + term
                contrib = [self.plus(self.scaled(a, g[s][0], ta), self.scaled(b, g[s][1], tb)),
                           self.minus(self.scaled(a, g[s][1], ta), self.scaled(b, g[s][0], tb))]
            else:
                contrib = [self.scaled(a, g[s][k], ta) for k in range(d)]
            for k in range(d):
                entries[p + k] = (contrib[k] if D.jc_first[c]
                                  else self.plus(entries.get(p + k), contrib[k]))
        for p, v in entries.items():
            self.store("%values", p, v)

    def angle_gradient(self, S, C, ev) -> list:
        """Gradients of S e0.e1 - C T w.r.t. e0, e1 (and e2): :func:`.kernels._angle_gradient`."""
        m, p, pl = self.times, self.minus, self.plus
        if self.d == 2:
            e0, e1 = ev[0], ev[1]
            return [[p(m(S, e1[0]), m(C, e1[1])), pl(m(S, e1[1]), m(C, e1[0]))],
                    [pl(m(S, e0[0]), m(C, e0[1])), p(m(S, e0[1]), m(C, e0[0]))]]

        def cross(u, v, k):  # (u x v)[k]
            i, j = (k + 1) % 3, (k + 2) % 3
            return p(m(u[i], v[j]), m(u[j], v[i]))
        e0, e1, e2 = ev
        nC = self.minus(None, C)
        return [[p(m(S, e1[k]), m(C, cross(e1, e2, k))) for k in range(3)],
                [p(m(S, e0[k]), m(C, cross(e2, e0, k))) for k in range(3)],
                [m(nC, cross(e0, e1, k)) for k in range(3)]]

    def phi_t(self, i: int, r: int) -> None:
        D = self.data
        fn = D.con_fn[r]
        f1 = self.fval(int(fn[0]), 1)
        if int(D.con_kind[r]) != ANGLE:
            v = self.f.neg(self.real(f1))
        else:
            ev = self.row_entities(r)
            v = self.minus(self.times(f1, self.dot(ev[0], ev[1])),
                           self.times(self.fval(int(fn[1]), 1), self.triple(*ev)))
        self.store("%out", i, v)

    def gamma(self, i: int, r: int) -> None:
        """As :func:`.kernels._gamma_w`."""
        D = self.data
        kind, fn = int(D.con_kind[r]), D.con_fn[r]
        f2 = self.fval(int(fn[0]), 2)
        if kind == LINEAR:
            self.store("%out", i, f2)
            return
        W = self.row_entities(r, rate=True)
        if kind == DOT:
            v = self.plus(self.scaled(-2.0, self.dot(W[0], W[1])), f2)
            self.store("%out", i, v)
            return
        V = self.row_entities(r)
        a, b, c = 0, 1, 2
        S, S1 = self.fval(int(fn[0]), 0), self.fval(int(fn[0]), 1)
        C, C1, C2 = (self.fval(int(fn[1]), k) for k in range(3))
        dot, tri, pl = self.dot, self.triple, self.plus
        Dv = dot(V[a], V[b])
        Dd = pl(dot(W[a], V[b]), dot(V[a], W[b]))
        T = tri(V[a], V[b], V[c])
        if self.d == 2:
            Td = pl(tri(W[a], V[b], V[c]), tri(V[a], W[b], V[c]))
            Tv = self.scaled(2.0, tri(W[a], W[b], V[c]))
        else:
            Td = pl(pl(tri(W[a], V[b], V[c]), tri(V[a], W[b], V[c])), tri(V[a], V[b], W[c]))
            Tv = self.scaled(2.0, pl(pl(tri(W[a], W[b], V[c]), tri(W[a], V[b], W[c])),
                                     tri(V[a], W[b], W[c])))
        m = self.times
        s = pl(m(f2, Dv), m(self.scaled(2.0, S1), Dd))
        s = pl(s, m(self.scaled(2.0, S), dot(W[a], W[b])))
        s = self.minus(s, m(C2, T))
        s = self.minus(s, m(self.scaled(2.0, C1), Td))
        s = self.minus(s, m(C, Tv))
        self.store("%out", i, self.minus(None, s))


def module_ir(data, rows) -> str:
    """The IR of the four functions of ``rows`` (see :data:`NAMES`). Each calls its rows in
    chunks of about ``CHUNK`` units of :func:`work`, each chunk a function of its own: LLVM's
    code generation takes time more than proportional to a function's size (the 768 equations
    of scissor-platform-6x9 in one function: 5.9 s)."""
    rows = np.asarray(rows, np.int64)
    sizes = np.cumsum([work(data, [r]) for r in rows])
    chunks = np.split(np.arange(len(rows)), np.flatnonzero(np.diff(sizes // CHUNK)) + 1)
    texts = []
    for name, args, emit in (
            ("phi_jac", ("%c", "%q", "%fval", "%phi", "%values"), ("phi", "jacobian")),
            ("phi", ("%c", "%q", "%fval", "%phi"), ("phi",)),
            ("phi_t", ("%c", "%q", "%fval", "%out"), ("phi_t",)),
            ("gamma", ("%c", "%q", "%qd", "%fval", "%out"), ("gamma",))):
        for k, chunk in enumerate(chunks):
            g = _Rows(data, part(name, args, k, len(chunks)))
            for i in chunk:
                r = int(rows[i])
                for kind in emit:
                    if kind == "jacobian":
                        g.jacobian(r)
                    else:
                        getattr(g, kind)(int(i), r)
            texts.append(g.f.end())
        texts.append(in_parts(name, args, len(chunks)))
    return "\n".join(texts)


def work(data, rows) -> int:
    """The size of the code for ``rows``: Jacobian contributions and entity terms they read."""
    rows = np.asarray(rows, np.int64)
    ents = np.unique(data.con_ent[rows].ravel())
    ents = ents[ents >= 0]
    terms = int(np.sum(data.ent_start[ents + 1] - data.ent_start[ents]))
    return int(np.sum(data.jc_start[rows + 1] - data.jc_start[rows])) + terms + len(rows)


def offsets(data) -> dict[str, int]:
    """Where each of :data:`COEFFICIENTS` starts in the coefficient array
    (:func:`coefficients`)."""
    sizes = [np.size(getattr(data, name)) for name in COEFFICIENTS]
    return dict(zip(COEFFICIENTS, np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()))


def coefficients(data) -> np.ndarray:
    """The coefficient array ``%c`` the code reads (``data.coef``): :data:`COEFFICIENTS`
    flattened and concatenated, as :func:`offsets` places them."""
    return np.concatenate([np.ravel(getattr(data, name)) for name in COEFFICIENTS]
                          ).astype(np.float64)


def structure_key(data, rows) -> bytes:
    """What :func:`module_ir` reads of ``data`` for ``rows``, as one digest: the rows, the
    arrays of :data:`STRUCTURE`, the sizes of :data:`COEFFICIENTS` and which coefficients are
    0, 1 or -1 (the code leaves those out). Two geometries of one model, which differ in their
    coefficients only, get the same code."""
    h = hashlib.sha256(repr((int(data.dim), CHUNK, list(offsets(data).values()))).encode())
    h.update(np.ascontiguousarray(rows, np.int64).tobytes())
    for name in STRUCTURE:
        a = np.ascontiguousarray(getattr(data, name))
        h.update(f"{a.shape}{a.dtype.char}".encode())   # (str(a.dtype) took 12 us)
        h.update(a.tobytes())
    c = coefficients(data)
    h.update(((c == 0.0) + 2 * (c == 1.0) + 3 * (c == -1.0)).astype(np.int8).tobytes())
    return h.digest()


def compile_rows(data, rows) -> np.ndarray:
    """The code of a row set: the addresses of its four functions, or :data:`NO_CODE` (use the
    loops) for an empty set, a set above ``LIMIT``, with ``KINEDYN_NATURAL_CODEGEN=0``, or when
    LLVM refuses the IR. Kept per :func:`structure_key` for the process (the IR is not built
    again for another geometry of the same model). The functions take ``data.coef`` first."""
    if len(rows) == 0 or work(data, rows) > LIMIT or os.environ.get(SWITCH, "1") == "0":
        return NO_CODE
    code = compile_structure(structure_key(data, rows), lambda: module_ir(data, rows), NAMES,
                             "natural", f"natural coordinates, {len(rows)} equations")
    return NO_CODE if code is None else code
