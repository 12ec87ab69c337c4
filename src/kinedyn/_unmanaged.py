"""Unmanaged array views for compiled hot paths.

Numba reference-counts every array with atomic increments and decrements whenever an array
crosses a (non-inlined) function call. The formulations' NamedTuples carry tens of arrays, so
each protocol call cost ~0.5 us of pure reference counting - more than the arithmetic of a
four-bar. :func:`unmanaged` rebuilds such a NamedTuple (same class, same Numba type) with views
whose memory-info pointer is null: the data and shapes are the same, reference counting becomes
a null check. Whole-run kernels call it once on entry; the managed originals, alive in the
caller's frame for the whole call, keep the memory valid. The views must never escape the call
that made them (they are never returned or stored). **Only arguments qualify as owners**: a
managed array allocated *inside* the compiled function is released by Numba right after its last
use -- the ``unmanaged`` call itself -- so its views dangle and the next allocation (a
``np.zeros`` or ``np.linalg.solve`` further down) gets the same memory. (The embedded
Stephenson-III's Newton block overwrote its own LU workspace that way and the run stopped after
three steps; ``tests/test_unmanaged.py`` checks every call site.)

The other half of the recipe: functions on the hot path that receive such NamedTuples are
inlined at the Numba IR level (``inline="always"``), because a real call copies the whole
struct of array descriptors (kilobytes) by value; helpers below them take plain arrays.
Measured on the Stewart platform's phi (102 rows): 2.0 us -> 1.4 us, and the fixed cost per
protocol call 650 ns -> 15 ns.
"""
from __future__ import annotations

from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from ._jit import overload_inlined


@intrinsic
def _view(typingctx, arr):
    """The same array without a memory-info (no reference counting)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        dst = make_array(sig.return_type)(context, builder)
        populate_array(dst, data=src.data, shape=src.shape, strides=src.strides,
                       itemsize=src.itemsize, meminfo=None)
        return dst._getvalue()
    return arr(arr), codegen


def without_meminfo(context, builder, ty, value):
    """LLVM value ``value`` of Numba type ``ty`` with the memory-info of every array in it (an
    array, a tuple or NamedTuple of them, nested) set to null: the codegen of
    :func:`unmanaged`, and of :mod:`kinedyn._table`'s loads."""
    if isinstance(ty, types.Array):
        src = make_array(ty)(context, builder, value)
        dst = make_array(ty)(context, builder)
        populate_array(dst, data=src.data, shape=src.shape, strides=src.strides,
                       itemsize=src.itemsize, meminfo=None)
        return dst._getvalue()
    if isinstance(ty, types.BaseTuple):  # nested NamedTuples (a method holding formulation data)
        out = value
        for i, member in enumerate(ty.types):
            out = builder.insert_value(
                out, without_meminfo(context, builder, member, builder.extract_value(value, i)),
                i)
        return out
    return value


@intrinsic
def _unmanaged_tuple(typingctx, tup):
    """A NamedTuple (or tuple) whose array members are replaced by unmanaged views."""
    if not isinstance(tup, types.BaseTuple):
        return None

    def codegen(context, builder, sig, args):
        return without_meminfo(context, builder, sig.args[0], args[0])
    return tup(tup), codegen


def unmanaged(value):
    """``value`` (a NamedTuple of arrays and numbers, or an array) with unmanaged arrays."""
    raise NotImplementedError("unmanaged() is only available inside compiled code")


@overload_inlined(unmanaged)
def _ov_unmanaged(value):
    if isinstance(value, types.Array):
        return lambda value: _view(value)
    if isinstance(value, types.BaseTuple):
        return lambda value: _unmanaged_tuple(value)
