"""User forces (:meth:`kinedyn.model.system.System.add_user_force`) as machine code that the
compiled force kernels call through an address.

The user's function ``f(t, p, v, out)`` is compiled by Numba (an ``njit`` dispatcher as it is,
a plain function wrapped) inside a C-callable wrapper ``int64(double *p, double *v,
double *out, double t)``. The force kernels carry the wrapper's address as data
(:func:`kinedyn._llvm.call`), so they stay cacheable whatever the user's code, and the
per-step path stays compiled. The wrapper zeroes ``out`` first (a function may write only the
components it sets) and returns :data:`OK`; anything else is a failure, which the kernel
raises as :class:`UserForceFailure`. The wrapper keeps the time of its latest call and its
outcome in its :class:`UserForceKernel`'s ``record``, so that the failure can be reported with
the force's name and time (:func:`failure`): a function that raises returns 0 from a C callback
(Numba prints its exception), before the outcome is written.
"""
from __future__ import annotations

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..errors import ModelError

OK = 1
NOT_FINITE = 2
_SIGNATURE = types.int64(types.CPointer(types.float64), types.CPointer(types.float64),
                         types.CPointer(types.float64), types.float64)
_KERNELS: dict = {}  # (function, n_points, dim) -> UserForceKernel, for the process


class UserForceFailure(RuntimeError):
    """Raised by a compiled force kernel when a user force failed (compiled code raises it
    without arguments); :class:`.compiled.functions_defined` turns it into a
    :class:`ModelError` that names the force and the time (:func:`failure`)."""


class UserForceKernel:
    """The compiled wrapper of one user function (``address``) and its ``record``: [time of
    the latest call, its outcome (OK, NOT_FINITE, or 0: running or raised)]."""

    def __init__(self, function, n_points: int, dim: int):
        self.record = np.array([np.nan, OK])
        self.cfunc = _wrapper(function, (n_points, dim), self.record.ctypes.data)
        self.address = self.cfunc.address


@intrinsic
def _double_pointer(typingctx, address):
    """The integer ``address`` as a ``double *``."""
    if not isinstance(address, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], ir.DoubleType().as_pointer())
    return types.CPointer(types.float64)(address), codegen


def _wrapper(function, shape, record_address):
    fn = function if isinstance(function, nb.core.dispatcher.Dispatcher) else nb.njit(function)

    def wrapper(p, v, out, t):
        record = nb.carray(_double_pointer(record_address), 2)
        record[0] = t
        record[1] = 0.0
        forces = nb.carray(out, shape)
        forces[:] = 0.0
        fn(t, nb.carray(p, shape), nb.carray(v, shape), forces)
        status = OK
        for i in range(shape[0]):
            for k in range(shape[1]):
                if not np.isfinite(forces[i, k]):
                    status = NOT_FINITE
        record[1] = status
        return status
    return nb.cfunc(_SIGNATURE)(wrapper)


def compile_user_force(name: str, function, n_points: int, dim: int) -> UserForceKernel:
    """The compiled wrapper of user force ``name`` acting on ``n_points`` points (one per
    function and shape in a process). A function Numba cannot compile is a
    :class:`ModelError` that says why."""
    key = (function, int(n_points), int(dim))
    if key not in _KERNELS:
        try:
            _KERNELS[key] = UserForceKernel(function, n_points, dim)
        except nb.core.errors.NumbaError as exc:
            lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
            why = next((x for x in lines if x.split(":")[0].endswith("Error")
                        and not x.startswith("Failed in")), lines[0] if lines else "")
            raise ModelError(f"user force {name!r}: Numba cannot compile its function "
                             f"f(t, p, v, out) for p, v, out float64 arrays of shape "
                             f"{(n_points, dim)}: {why}", location="user_forces") from None
    return _KERNELS[key]


def failure(model) -> str:
    """What went wrong with ``model``'s user forces after a :class:`UserForceFailure`: the
    force whose latest call failed, how and when (and its record cleared)."""
    for name, idx, function in model.user_forces:
        kernel = _KERNELS.get((function, len(idx), model.dim))
        if kernel is not None and kernel.record[1] != OK:
            t, status = kernel.record
            kernel.record[1] = OK
            what = ("returned a non-finite force" if status == NOT_FINITE
                    else "raised an exception (printed above)")
            return f"user force {name!r} {what} at t = {t:.6g} s"
    return "a user force failed"
