"""The compiled protocol shared by every formulation, method and linear solver.

kinedyn's per-step code is written once, against the *protocol functions* below, and each
formulation (natural, relative, hamiltonian, symbolic ...) implements them for its own data type
with :func:`numba.extending.overload`. The data type is a ``typing.NamedTuple`` of arrays (the
compiled form of a formulation, read-only by convention) and the work type a NamedTuple of
preallocated scratch arrays; Numba picks the implementation from the NamedTuple *class* at compile
time, so generic loops (Newton-Raphson, the integrators, the dynamics methods) call the right
kernel with no Python in between, and everything is cached on disk (no first-class functions,
which Numba cannot cache).

Implementing a protocol function for a new data class::

    from numba.extending import overload
    from kinedyn.formulations import protocol

    @overload(protocol.calc_phi, jit_options=protocol.JIT)
    def _calc_phi(data, work, q, t, rows, phi):
        if protocol.is_type(data, MyData):
            return lambda data, work, q, t, rows, phi: _my_calc_phi(data, work, q, t, rows, phi)

Shapes: ``q, qd, qdd (n_q,)``; ``rows`` an int64 array of constraint indices, or what the
formulation's ``row_selection(rows)`` returned for it where it has one (the natural formulation's
``RowSet``: the rows with the entities they read and their generated code, built once per
kinematic plan or dynamics system by :func:`row_selection`); Jacobian values
are the data array of the formulation's fixed CSR pattern ``(n_nnz,)``; the mass matrix the data
array of its own fixed CSR pattern (full symmetric storage).

Conventions (DESIGN.md): ``phi_q @ qdd = gamma``; ``M qdd + phi_q.T @ lam = Q``.
"""
from __future__ import annotations

import numba as nb
import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.extending import overload

from .._jit import INLINED, overload_inlined

JIT = {"cache": True, "nogil": True}


def is_type(numba_type, cls) -> bool:
    """True when a Numba argument type is the NamedTuple class ``cls`` (for overload dispatch)."""
    return getattr(numba_type, "instance_class", None) is cls


def row_selection(f, rows):
    """What the protocol functions get for constraint ``rows`` of formulation ``f`` (see Shapes
    above): its ``row_selection(rows)`` where it has one (the natural formulation's rows with
    their entities and generated code), else the rows as an int64 array."""
    rows = np.asarray(rows, np.int64)
    return f.row_selection(rows) if hasattr(f, "row_selection") else rows


def _stub(name):
    def stub(*args):
        raise NotImplementedError(f"{name} is a compiled protocol function; call it from "
                                  "Numba code with a formulation's data")
    stub.__name__ = name
    return stub


# ---- kinematic level (formulations with constraint equations) ----------------------------------
calc_phi = _stub("calc_phi")
"""calc_phi(data, work, q, t, rows, phi): phi[i] = Phi_rows[i](q, t)."""

calc_phi_q = _stub("calc_phi_q")
"""calc_phi_q(data, work, q, t, rows, values): Jacobian entries of the given rows, written into
``values`` at their positions in the formulation's CSR pattern (other rows untouched)."""

calc_phi_and_phi_q = _stub("calc_phi_and_phi_q")
"""calc_phi_and_phi_q(data, work, q, t, rows, phi, values): calc_phi and calc_phi_q at the same
q and t. A formulation that can share work between the two (they read the same quantities)
implements it and adds its data class to ``FUSED_PHI_AND_PHI_Q``; for the others it is the two
calls (see the overload at the end of this module)."""

FUSED_PHI_AND_PHI_Q: set = set()

calc_phi_t = _stub("calc_phi_t")
"""calc_phi_t(data, work, q, t, rows, out): partial time derivative of the constraints."""

calc_gamma = _stub("calc_gamma")
"""calc_gamma(data, work, q, qd, t, rows, out): acceleration right-hand side
gamma = -(phi_q qd)_q qd - 2 phi_qt qd - phi_tt, so that phi_q qdd = gamma."""

# ---- dynamic level ------------------------------------------------------------------------------
calc_mass = _stub("calc_mass")
"""calc_mass(data, work, q, values): mass-matrix entries in the formulation's mass pattern."""

calc_forces = _stub("calc_forces")
"""calc_forces(data, work, q, qd, t, out): generalised forces Q(q, qd, t) - applied, spring,
damper, joint actuator and user loads, minus velocity-dependent inertia terms (b qd) where the
formulation has them - so that M qdd + phi_q.T lam = Q."""

# ---- state-space level (dynamics methods, HDCA, embedded symbolic) -----------------------------
calc_state_derivative = _stub("calc_state_derivative")
"""calc_state_derivative(system, work, y, t, ydot) -> status (int, 0 = ok): the ODE right-hand
side a fixed-step integrator advances. ``system`` is a *method* NamedTuple (for example the
augmented method over natural coordinates) or a formulation that is itself an ODE (HDCA)."""

calc_state_derivative_same_position = _stub("calc_state_derivative_same_position")
"""calc_state_derivative_same_position(system, work, y, t, ydot) -> status: calc_state_derivative
where ``y``'s positions are those of the last calc_state_derivative call (only its other
entries changed), so that position-dependent work can be reused: semi-implicit Euler's second
evaluation for a system in canonical coordinates ``[q; p]`` (HDCA). Such systems must
implement it; for the others it is never reached and returns status 99."""

post_step = _stub("post_step")
"""post_step(system, work, y, t) -> status: correction after each accepted step (projection onto
the constraint manifold, re-solution of dependent coordinates). Methods without one return 0."""

record_state = _stub("record_state")
"""record_state(system, work, y, t, out): write the state to record - ``[q; qd]`` in the
formulation's coordinates - into ``out`` (a method that integrates fewer coordinates, such as
coordinate partitioning, reconstructs the full state here)."""

calc_momenta = _stub("calc_momenta")
"""calc_momenta(system, work, q, qd, p, rate): for a system integrated in canonical coordinates
``y = [q; p]`` (HDCA), the momenta of the velocities ``qd`` at ``q``, ``p = M(q) qd``, and their
rate at constant ``qd``, ``rate = (dM/dt) qd``: what semi-implicit Euler in its velocity form
needs (:func:`kinedyn.dynamics.integrators.step`). Systems in ``[q; qd]`` never reach it."""

# ---- linear solvers (kinedyn.linalg) ---------------------------------------------------------
factorize = _stub("factorize")
"""factorize(solver, work, values) -> status: numeric factorisation of the matrix whose entries
(in the solver's pattern) are ``values``; the symbolic analysis was done once when the solver was
built. Status 0 = ok, 1 = (numerically) singular, 2 = pivot too small for the static pivot order
(re-analyse)."""

solve = _stub("solve")
"""solve(solver, work, rhs): overwrite ``rhs`` with the solution, using the last factorisation."""

solve_pair = _stub("solve_pair")
"""solve_pair(solver, work, a, b): ``solve`` of two right-hand sides with the same
factorisation. A solver that does both in one pass implements it and adds its class to
``FUSED_SOLVE_PAIR``; for the others it is two calls of ``solve``."""

FUSED_SOLVE_PAIR: set = set()

det_sign = _stub("det_sign")
"""det_sign(solver, work) -> float: the sign, +1.0 or -1.0, of the determinant of the matrix
last factorised, in the caller's numbering of its rows and columns (the pivots' signs times
the permutations' parities, so the same whatever the pivot order). A matrix that depends
continuously on a run's state changes it only by passing through a singular matrix
(:func:`kinedyn.kinematics.kernels.watch_singular`)."""


def _no_post(system, work, y, t):
    return 0


def _copy_state(system, work, y, t, out):
    out[:] = y


def _no_momenta(system, work, q, qd, p, rate):
    pass


def _no_same_position(system, work, y, t, ydot):
    return 99


_WRAPPERS = {  # dispatchers are called from these, so their argument names are free
    "system, work, y, t, ydot": lambda f: lambda system, work, y, t, ydot: f(system, work, y, t,
                                                                              ydot),
    "system, work, y, t": lambda f: lambda system, work, y, t: f(system, work, y, t),
    "system, work, y, t, out": lambda f: lambda system, work, y, t, out: f(system, work, y, t, out),
    "system, work, q, qd, p, rate": lambda f: lambda system, work, q, qd, p, rate: f(
        system, work, q, qd, p, rate),
}


def _implementation(f, names: str):
    """``f`` as an overload implementation with the generic's argument names (Numba wants them
    equal): a plain Python function is compiled in place and must use those names; a dispatcher
    is called from a thin wrapper."""
    if isinstance(f, Dispatcher):
        return _WRAPPERS[names](f)
    if f.__code__.co_varnames[:f.__code__.co_argcount] != tuple(names.split(", ")):
        raise TypeError(f"{f.__qualname__}: arguments must be named ({names})")
    return f


def implement_ode(cls, derivative, post=_no_post, record=_copy_state, inline="never",
                  momenta=_no_momenta, same_position=_no_same_position) -> None:
    """Implement the state-space protocol for a method NamedTuple ``cls``:
    ``calc_state_derivative`` by ``derivative(system, work, y, t, ydot)``, ``post_step`` by
    ``post(system, work, y, t)`` (default: no correction), ``record_state`` by
    ``record(system, work, y, t, out)`` (default: the state as it is) and, for a system in
    canonical coordinates, ``calc_momenta`` by ``momenta(system, work, q, qd, p, rate)``
    (default: none; always IR-inlined, so give a plain wrapper or a function compiled with
    :data:`kinedyn._jit.INLINED`) and ``calc_state_derivative_same_position`` by
    ``same_position(system, work, y, t, ydot)`` (default: none, status 99); plain Python
    functions (compiled in place) or Numba dispatchers.

    The default post/record/momenta are always inlined. ``inline`` says how the others reach the
    integrators:

    * ``"never"``: a real call. It copies the NamedTuples' array descriptors by value and calls
      ``NRT_incref``/``NRT_decref`` on every array they hold (null-checked on the integrators'
      unmanaged views, but called): 4-5 µs per evaluation for the ~100 arrays of a natural
      model's method, more than the arithmetic of a four-bar (:mod:`kinedyn._unmanaged`).
    * ``"always"``: inlined at the Numba IR level.
    * ``"llvm"``: plain functions compiled with :data:`kinedyn._jit.INLINED` (LLVM
      ``forceinline``; a dispatcher is used as it is) behind an IR-inlined call. On the
      four-bar's penalty and index-1 KKT methods this ran the RK4 steps 4-10x faster than
      ``"never"`` and faster than ``"always"``, the vehicle's lane change 3x, for 20-40 s
      more compilation per kernel (docs/architecture.md).

    Check the result against ``"never"``: with Numba 0.68 the HDCA derivative, IR-inlined into
    the RK4 step, read every stage back as the last one's."""
    if inline == "llvm":
        derivative, post, record, momenta, same_position = (
            f if f in (_no_post, _copy_state, _no_momenta, _no_same_position)
            or isinstance(f, Dispatcher) else nb.njit(**INLINED)(f)
            for f in (derivative, post, record, momenta, same_position))
        inline = "always"
    derivative = _implementation(derivative, "system, work, y, t, ydot")
    post = _implementation(post, "system, work, y, t")
    record = _implementation(record, "system, work, y, t, out")
    momenta = _implementation(momenta, "system, work, q, qd, p, rate")
    same_position = _implementation(same_position, "system, work, y, t, ydot")

    def ov_derivative(system, work, y, t, ydot):
        if is_type(system, cls):
            return derivative

    def ov_post(system, work, y, t):
        if is_type(system, cls):
            return post

    def ov_record(system, work, y, t, out):
        if is_type(system, cls):
            return record

    def ov_momenta(system, work, q, qd, p, rate):
        if is_type(system, cls):
            return momenta

    def ov_same_position(system, work, y, t, ydot):
        if is_type(system, cls):
            return same_position
    trivial = "always"  # the default post/record: inlined, no call copying the system
    _overload(calc_state_derivative, inline)(ov_derivative)
    _overload(post_step, trivial if post is _no_post else inline)(ov_post)
    _overload(record_state, trivial if record is _copy_state else inline)(ov_record)
    _overload(calc_momenta, "always")(ov_momenta)
    _overload(calc_state_derivative_same_position,
              "always" if same_position is _no_same_position else inline)(ov_same_position)


def _overload(generic, inline: str):
    """The overload decorator for ``generic`` with ``inline`` ("always" or "never")."""
    if inline == "always":
        return overload_inlined(generic, jit_options=JIT)
    return overload(generic, jit_options=JIT, inline=inline)


# ---- generic implementations ----------------------------------------------------------------------


@overload_inlined(calc_phi_and_phi_q, jit_options=JIT)
def _ov_phi_and_phi_q(data, work, q, t, rows, phi, values):
    if getattr(data, "instance_class", None) not in FUSED_PHI_AND_PHI_Q:
        def impl(data, work, q, t, rows, phi, values):
            calc_phi(data, work, q, t, rows, phi)
            calc_phi_q(data, work, q, t, rows, values)
        return impl


@overload_inlined(solve_pair, jit_options=JIT)
def _ov_solve_pair(solver, work, a, b):
    if getattr(solver, "instance_class", None) not in FUSED_SOLVE_PAIR:
        def impl(solver, work, a, b):
            solve(solver, work, a)
            solve(solver, work, b)
        return impl
