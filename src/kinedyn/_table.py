"""Tables: a homogeneous tuple that compiled code indexes at run time, typed without its length.

The Group Equations' run kernels take each part of their structural groups (solvers, plans,
scratch) as a tuple with one entry per group or unit, and index it by group number. Numba types
such a tuple as ``UniTuple(T, n)``: ``n`` is part of the type, so each number of groups compiled
the kernels again (15-30 s each per solver and mode), and Numba lowers ``tup[i]`` as a switch
over the ``n`` entries, so a kernel also compiled longer the more groups it had (the converged
sparse run kernel of the four-bar's 2 groups in 10.6 s, of a Stewart platform's 7 in 29.7 s).

:func:`as_table` stores such a tuple in its caller's stack frame, as a C array of its entries,
and gives a :class:`Table`: a pointer typed by the entry type alone. ``table[i]`` is an indexed
load. A kernel that takes tables instead of tuples is compiled once for every number of
groups; only a thin entry kernel (unbox, :func:`as_table`, call) remains per length.

An entry is loaded as an unmanaged view (:mod:`kinedyn._unmanaged`: its arrays without their
memory-info, so that LLVM drops their reference counting), whose owner is the tuple in the
caller: the table lives in the frame of the function that made it, from a tuple that function
received as an argument, and must not be returned or stored, only passed down to the calls
that function makes. No bounds check: the kernels index tables with the unit and group numbers
they were built with.
"""
from __future__ import annotations

import operator

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.datamodel import models
from numba.extending import intrinsic, register_model

from ._jit import overload_inlined
from ._unmanaged import without_meminfo


class Table(types.Type):
    """The entries of a homogeneous tuple of ``dtype``, in a caller's frame (:func:`as_table`)."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"Table({dtype})")


@register_model(Table)
class _TableModel(models.PrimitiveModel):
    """A pointer to the first entry (the entries in Numba's value representation)."""

    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.PointerType(dmm.lookup(fe_type.dtype).get_value_type()))


@intrinsic
def as_table(typingctx, tup):
    """The entries of the homogeneous tuple ``tup`` as a :class:`Table` in the caller's frame."""
    if not isinstance(tup, types.UniTuple):
        return None

    def codegen(context, builder, sig, args):
        entry = context.get_value_type(sig.args[0].dtype)
        slots = cgutils.alloca_once(builder, ir.ArrayType(entry, sig.args[0].count))
        builder.store(args[0], slots)
        zero = ir.Constant(ir.IntType(32), 0)
        return builder.gep(slots, [zero, zero])
    return Table(tup.dtype)(tup), codegen


@intrinsic
def _entry(typingctx, table, i):
    """Entry ``i`` of ``table``, with unmanaged views (:mod:`kinedyn._unmanaged`): the loaded
    arrays' memory-info is set to a null constant, so that LLVM removes the reference counting
    of everything made from them (loaded as they were, every array of an entry kept a real
    increment and decrement per use, which the compiler cannot prove null: Stewart platform,
    paper step, groups 2.4 -> 6.5 us)."""
    if not (isinstance(table, Table) and isinstance(i, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        value = builder.load(builder.gep(args[0], [args[1]]))
        return without_meminfo(context, builder, sig.return_type, value)
    return table.dtype(table, i), codegen


@overload_inlined(operator.getitem)
def _ov_getitem(table, i):
    if isinstance(table, Table) and isinstance(i, types.Integer):
        return lambda table, i: _entry(table, i)
