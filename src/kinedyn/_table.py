"""Tables: a homogeneous tuple that compiled code indexes at run time, typed without its length.

The Group Equations' run kernels take each part of their structural groups (solvers, plans,
scratch) as a tuple with one entry per group or unit, and index it by group number. Numba types
such a tuple as ``UniTuple(T, n)``: ``n`` is part of the type, so each number of groups compiled
the kernels again (15-30 s each per solver and mode), and Numba lowers ``tup[i]`` as a switch
over the ``n`` entries, so a kernel also compiled longer the more groups it had (the converged
sparse run kernel of the four-bar's 2 groups in 10.6 s, of a Stewart platform's 7 in 29.7 s).

:class:`PackedTable` stores such a tuple's entries once, in Numba's value representation, in
a buffer kept with the tuple (made again only when the tuple changes: :class:`TableCache`).
Passed to a kernel from Python it is a :class:`Table`: a pointer typed by the entry type
alone, and ``table[i]`` is an indexed load. A kernel that takes tables instead of tuples is
compiled once for every number of groups. Tables passed together are a :class:`Tables`, typed
once: a plain tuple of them would be typed in Python at every call.

Until 2026-12-01 the tables were made in compiled code, in the stack frame of a thin entry
kernel (unbox the tuples, store them, call the kernel on the tables), one per tuple length.
Numba links a callee into its caller's machine code, so each entry kernel optimised and
emitted the whole run kernel again: 6-18 s per number of groups, units or workers
(docs/architecture.md, "Run kernels called from Python on packed tables").

An entry is loaded as an unmanaged view (:mod:`kinedyn._unmanaged`: its arrays without their
memory-info and parent, so that LLVM drops their reference counting); the stored values'
memory-info (the unboxing's, released after the store) is never used. The arrays belong to
the tuple the :class:`PackedTable` keeps. No bounds check: the kernels index tables with the
unit and group numbers they were built with.
"""
from __future__ import annotations

import operator

import numba as nb
import numpy as np
from llvmlite import ir
from numba import types
from numba.core.datamodel import models
from numba.core.registry import cpu_target
from numba.extending import NativeValue, intrinsic, register_model, typeof_impl, unbox

from ._jit import overload_inlined
from ._unmanaged import without_meminfo


class Table(types.Type):
    """The entries of a homogeneous tuple of ``dtype`` (:class:`PackedTable`)."""

    def __init__(self, dtype):
        self.dtype = dtype
        super().__init__(name=f"Table({dtype})")


@register_model(Table)
class _TableModel(models.PrimitiveModel):
    """A pointer to the first entry (the entries in Numba's value representation)."""

    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.PointerType(dmm.lookup(fe_type.dtype).get_value_type()))


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


class PackedTable:
    """The entries of the non-empty homogeneous tuple ``entries``, stored for compiled code:
    passed to a kernel from Python it is a :class:`Table` of the entries' type. It keeps the
    tuple, which owns the arrays the stored entries point into; the entries are loaded as
    views (their memory-info and parent null), so nothing else of the stored values is used."""

    def __init__(self, entries: tuple):
        typ = nb.typeof(entries)
        if not isinstance(typ, types.UniTuple):
            raise TypeError(f"a table needs a non-empty homogeneous tuple, not {typ}")
        self.entries, self.dtype = entries, typ.dtype
        self.numba_type = Table(self.dtype)  # for typeof at every call (see _typeof_kept)
        context = cpu_target.target_context
        size = context.get_abi_sizeof(context.get_value_type(self.dtype))
        self.buffer = np.zeros(size * len(entries), np.uint8)
        self.address = self.buffer.ctypes.data
        for i, entry in enumerate(entries):
            _store(entry, self.address + i * size)


class Tables(tuple):
    """Tables passed to a kernel together, as one tuple argument typed once. Numba's dispatcher
    types a plain tuple that holds objects of its own classes (tables) in Python, element by
    element, at every call: about 20 µs for a tuple of four tables, against 4 µs for a single
    table. This one gives the type it keeps (:func:`_typeof_kept`): the type of a plain tuple
    of these tables, so kernels compile as for one."""

    def __new__(cls, tables):
        self = super().__new__(cls, tables)
        self.numba_type = types.BaseTuple.from_types([t.numba_type for t in self])
        return self


class TableCache:
    """Tables of tuples that stay the same from run to run: called with tuples, it packs a
    tuple again only when it is another object than the one packed last in its place (solvers
    re-analysed, say): it compares the entries themselves, so a new tuple of the same objects
    is not packed again. It gives the same :class:`Tables` while none changed."""

    def __init__(self):
        self._last = Tables(())

    def __call__(self, *tuples) -> Tables:
        """A :class:`PackedTable` for each of ``tuples``, in order."""
        last = self._last
        if len(last) == len(tuples) and all(map(_same, last, tuples)):
            return last
        out = []
        for place, entries in enumerate(tuples):  # each place's table, packed again if changed
            made = last[place] if place < len(last) else None
            out.append(made if made is not None and _same(made, entries)
                       else PackedTable(entries))
        self._last = Tables(out)
        return self._last


def _same(table: PackedTable, entries: tuple) -> bool:
    """Whether ``table`` holds these very objects (a new tuple of the same ones, as a
    one-entry ``(data,)`` made at each call, needs no new table)."""
    held = table.entries
    return held is entries or (len(held) == len(entries)
                               and all(a is b for a, b in zip(held, entries)))


@intrinsic
def _store_at(typingctx, value, address):
    """Stores ``value`` in Numba's value representation at the integer ``address``."""
    def codegen(context, builder, sig, args):
        ptr = builder.inttoptr(args[1], context.get_value_type(sig.args[0]).as_pointer())
        builder.store(args[0], ptr)
    return types.void(value, address), codegen


@nb.njit(cache=True)
def _store(entry, address):
    """One entry of a :class:`PackedTable` (compiled once per entry type)."""
    _store_at(entry, address)


@typeof_impl.register(PackedTable)
@typeof_impl.register(Tables)
def _typeof_kept(val, c):
    # the type made once, with the object: Table(dtype) made again at each call hashed the
    # entry type's name (kilobytes for a solver's NamedTuple) to find the interned type
    return val.numba_type


@unbox(Table)
def _unbox_table(typ, obj, c):
    """The pointer a :class:`PackedTable` holds as ``address``."""
    address = c.pyapi.object_getattr_string(obj, "address")
    ptr = c.pyapi.long_as_voidptr(address)
    c.pyapi.decref(address)
    table = c.builder.bitcast(ptr, c.context.get_value_type(typ))
    return NativeValue(table, is_error=c.pyapi.c_api_error())
