"""Sine-cosine polynomialisation and pure-lex Groebner bases with a time limit and a disk cache.

Thesis section 3.2.1 (Table 3.1): sin x -> s_x, cos x -> c_x, with s_x^2 + c_x^2 - 1 added only
for the *unknown* angles (known ones are data; section 5.1). Bases are exact (rational
coefficients, :mod:`.rational`) and pure-lexicographic with the unknowns first, so the last
polynomials involve the fewest unknowns (section 3.3.2). Buchberger's algorithm has no useful
complexity bound, so every basis runs in a child process that is killed at its time limit
(the caller falls back to Newton on that block); finished bases and time-outs are cached on
disk keyed by a hash of (polynomials, variable order, SymPy version).
"""
from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import time
from dataclasses import dataclass
from pathlib import Path

import sympy as sp

from .._cache import cache_root
from ..errors import ModelError, check_number
from .rational import rationalise_expr


@dataclass(frozen=True)
class Polynomialised:
    """Polynomials in ``unknowns`` (eliminated first) and ``knowns``; ``trig`` maps each angle
    symbol to its (s, c) pair."""
    polys: tuple[sp.Expr, ...]
    unknowns: tuple[sp.Symbol, ...]
    knowns: tuple[sp.Symbol, ...]
    trig: dict


def sc_symbols(x: sp.Symbol) -> tuple[sp.Symbol, sp.Symbol]:
    return sp.Symbol(f"s_{x.name}", real=True), sp.Symbol(f"c_{x.name}", real=True)


def polynomialise(exprs, unknown_angles=(), unknown_lengths=(), known_angles=(), known_lengths=(),
                  tol: float = 1e-12, sine_first=()) -> Polynomialised:
    """Sine-cosine substitution (eq. 2.31) and rationalisation of ``exprs``.

    The unknowns come in the given order (angles contribute s then c, or c then s for the
    angles in ``sine_first``, whose sine is then solved first); the identity s^2 + c^2 - 1 is
    appended for unknown angles only.
    """
    trig, rep = {}, {}
    for x in (*unknown_angles, *known_angles):
        s, c = sc_symbols(x)
        trig[x] = (s, c)
        rep[sp.sin(x)], rep[sp.cos(x)] = s, c
    polys = []
    for e in exprs:
        p = sp.expand(sp.expand_trig(sp.expand(e)).xreplace(rep))
        left = [a for a in (*unknown_angles, *known_angles) if a in p.free_symbols]
        if left:
            raise ValueError(f"angle(s) {left} left after the sine-cosine substitution in {e}")
        p = rationalise_expr(p, tol)
        polys.append(sp.expand(p * sp.lcm([sp.fraction(c)[1] for c in sp.Poly(p).coeffs()]))
                     if p.free_symbols else p)
    polys += [trig[x][0] ** 2 + trig[x][1] ** 2 - 1 for x in unknown_angles]
    unknowns = []
    for x in unknown_angles:
        unknowns += trig[x][::-1] if x in sine_first else trig[x]
    unknowns += list(unknown_lengths)
    knowns = [v for x in known_angles for v in trig[x]] + list(known_lengths)
    return Polynomialised(tuple(polys), tuple(unknowns), tuple(knowns), trig)


@dataclass(frozen=True)
class BasisResult:
    """A reduced pure-lex basis (``basis`` None when it did not finish in ``seconds``)."""
    basis: tuple[sp.Expr, ...] | None
    gens: tuple[sp.Symbol, ...]
    seconds: float
    cached: bool
    key: str

    @property
    def ok(self) -> bool:
        return self.basis is not None


def cache_dir() -> Path:
    return cache_root() / "groebner"


def canonical_text(expr) -> str:
    """``srepr`` of ``expr`` with the arguments in SymPy's canonical order (that of ``args``,
    which structural equality compares, so the same in every process), not re-sorted for
    display: the display order (``as_ordered_terms``) evaluates every coefficient numerically,
    and as the generated code's cache keys it cost 150 of the 190 s of the landing gear's
    cached build. The key of a cached basis or CSE result."""
    return sp.srepr(expr, order="none")


def basis_key(polys, gens) -> str:
    text = json.dumps([[canonical_text(sp.expand(p)) for p in polys], [g.name for g in gens],
                       "lex", sp.__version__])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _child(polys_s, gens_s, conn):
    gens = [sp.Symbol(g, real=True) for g in gens_s]
    loc = {g.name: g for g in gens}
    polys = [sp.sympify(p, locals=loc) for p in polys_s]
    G = sp.groebner(polys, *gens, order="lex")
    conn.send([str(g) for g in G.exprs])
    conn.close()


def groebner_basis(polys, gens, time_limit: float = 60.0, use_cache: bool = True) -> BasisResult:
    """Reduced lex basis of ``polys`` with ``gens[0] > gens[1] > ...``, or a time-out.

    Runs :func:`sympy.groebner` in a forked child killed after ``time_limit`` seconds.
    """
    check_number("time_limit", time_limit, above=True)
    gens = tuple(gens)
    if not all(isinstance(g, sp.Symbol) for g in gens):
        raise ModelError(f"the generators must be SymPy symbols, got {list(gens)!r}")
    key = basis_key(polys, gens)
    path = cache_dir() / f"{key}.json"
    loc = {g.name: g for g in gens}
    if use_cache and path.exists():
        rec = json.loads(path.read_text())
        if rec["basis"] is not None:
            basis = tuple(sp.sympify(s, locals=loc) for s in rec["basis"])
            return BasisResult(basis, gens, rec["seconds"], True, key)
        if rec["seconds"] >= time_limit:  # timed out before with at least this much time
            return BasisResult(None, gens, rec["seconds"], True, key)
    start = time.perf_counter()
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=([str(p) for p in polys], [g.name for g in gens], send),
                       daemon=True)
    proc.start()
    send.close()
    out = None
    if recv.poll(time_limit):
        try:
            out = recv.recv()
        except EOFError:
            out = None
    seconds = time.perf_counter() - start
    if proc.is_alive():
        proc.kill()
    proc.join()
    basis = None
    if out is not None:
        basis = tuple(sp.sympify(s, locals=loc) for s in out)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"basis": out, "gens": [g.name for g in gens],
                                   "seconds": seconds if out is not None else time_limit}))
        tmp.replace(path)
    return BasisResult(basis, gens, seconds, False, key)
