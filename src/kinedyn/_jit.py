"""Numba options shared across the package, :func:`overload_inlined` (an IR-inlined overload
whose implementations are not also compiled on their own), and a fix to Numba's alias analysis
(:func:`_complete_aliases`) that IR inlining needs."""
import warnings
import weakref

import numpy as np
from numba.core import ir, ir_utils, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.core.extending import _overload_default_jit_options
from numba.core.typing.templates import infer, infer_global, make_overload_template

#: Functions inlined by LLVM into their compiled callers (``forceinline``: compiled code is
#: inlined, not Numba IR) and never called from Python. Numba still compiles each on its own and
#: builds a CPython and a C wrapper for it; the wrappers are dead code here, so they are not
#: built (the kinematic kernels of the test suite compiled 10 % faster, 132 -> 120 s).
#: Their reference counting is explicit (``_nrt``): Numba otherwise takes the flag from the
#: first caller that compiles them, and a helper compiled inside a :data:`WORKER` (no counting)
#: and then inlined into a counting caller would hand it arrays without their references.
INLINED = dict(cache=True, nogil=True, forceinline=True, no_cpython_wrapper=True,
               no_cfunc_wrapper=True, _nrt=True)

#: Plain-array workers: a real call that takes arrays (and numbers), allocates nothing and
#: returns no array, compiled **without reference counting** (``_nrt=False``). A counting
#: callee increments every array argument on entry and decrements it at every exit, a call
#: into the runtime each: for the unmanaged views the hot paths pass (:mod:`kinedyn._unmanaged`)
#: only a null check, but two calls per array per call. A worker with 13 array arguments (the
#: sparse LU's) made 26 of them around a 4 x 4 factorisation: 59 -> 29 ns without. The arrays
#: are borrowed from the caller, which holds them for the call. A function it calls must set
#: its flag (a WORKER, :data:`INLINED_WORKER` or :data:`INLINED`), or be inlined at the Numba
#: IR level (``inline="always"``: the tape's operations), so that nothing inherits the flag;
#: allocating code does not compile without it.
WORKER = dict(cache=True, nogil=True, _nrt=False)

#: A small :data:`WORKER` on the hot paths, inlined by LLVM into its compiled callers
#: (``forceinline``). Left to LLVM's cost model, such a callee was inlined when it was compiled
#: in the same process as its caller and called when it came from the cache: kernels compiled
#: after ``pytest tests/linalg/test_lu.py`` had filed the sparse LU's workers ran the driven
#: four-bar at 0.36-0.42 instead of 0.25 µs per step (groups 1.13-1.20 against 0.46), so
#: their speed depended on what had been compiled before. Since 2026-12-01 also HDCA's small
#: inverses and D^T X D product: after the HDCA tests, its run kernel called them (and the
#: record's evaluation, now inlined too), 4.62-4.78 against 4.14-4.34 us per four-bar RK4
#: step (docs/architecture.md).
INLINED_WORKER = dict(WORKER, forceinline=True)

# A protocol implementation with a branch (generated code or loops, natural.kernels; gravity
# alone or all forces) inlined at the Numba IR level under a condition of its caller (the
# kinematics' ``if evaluate``) makes Numba's SSA pass warn that the inlined call's result - a
# None nobody reads - "is not in scope" (numba.core.ssa: the inliner does not register the
# variable in the caller's scope; the IR is used as it is). Only those variables of kinedyn's
# own overloads (``_ov_...`` lambdas) are silenced, so a user compiling for the first time does
# not see this bookkeeping note.


def quiet_inliner_notes() -> None:
    """Install the filter described above (at import; again after a ``catch_warnings`` block
    that dropped it, e.g. pytest's around the import of a test module)."""
    warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning,
                            message=r"variable '_ov_\w+__locals___lambda__[\w.]+' is not in scope")


quiet_inliner_notes()


#: Numba IR expressions whose result may hold or be made of the values they read, which Numba's
#: alias analysis does not follow: a tuple holds its items; unpacking, iteration and SSA's phi
#: pass values on; a call's result may view its arguments (Numba takes it for a fresh array)
_CARRIERS = frozenset({"build_tuple", "build_list", "exhaust_iter", "getiter", "iternext",
                       "pair_first", "pair_second", "typed_getitem", "phi", "call"})


def _carried_aliases(blocks, typemap, alias_map, arg_aliases) -> None:
    """Add the aliases :data:`_CARRIERS` make: ``lhs`` aliases every variable they read."""
    for block in blocks.values():
        for stmt in block.body:
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                    and stmt.value.op in _CARRIERS):
                continue
            lhs = stmt.target.name
            if ir_utils.is_immutable_type(lhs, typemap):
                continue
            for v in stmt.value.list_vars():
                if v.name != lhs:
                    ir_utils._add_alias(lhs, v.name, alias_map, arg_aliases)


def _complete_aliases(find):
    """Numba's ``find_potential_aliases`` with the aliases it misses, to a fixed point. Numba's
    dead-code elimination, run after every IR inlining, deletes a store into an array that is
    neither live afterwards nor an alias of an argument; three gaps in the alias analysis made
    it delete our stores without a word:

    * **Order.** One pass over the blocks in the order of the block dictionary, where ``a =
      b.c`` aliases an argument only if ``b`` is known as one by then. The overload inliner
      appends the block holding the rest of the caller after an inlined call at the end of the
      dictionary: a function inlined below it that writes ``work.field[i] = x`` into a
      NamedTuple argument binds ``work`` there, after its loop's blocks (the HDCA evaluation
      once ``unmanaged`` was an inlined overload: no body pose written, "singular" at t = 0).
    * **Carriers** (:data:`_CARRIERS`). ``solver, pw = units[0][u], units[3][u]`` builds a
      tuple and unpacks it, and the aliases stop there: the Group Equations' converged step,
      inlined at the IR level, lost its chord right-hand side ``pw.rhs[i] = -pw.phi[i]`` (read
      again through another ``pw.rhs``) and stopped converging.
    * **Calls** (also :data:`_CARRIERS`). A call's result is taken for a fresh array, so the
      stores through ``unmanaged(work_)`` (a view) that the function does not read again were
      deleted.

    More aliases only keep statements. Numba 0.59-0.68; ``tests/test_jit.py`` (order,
    carriers) and ``tests/test_unmanaged.py`` (calls) have the cases."""
    if getattr(find, "kinedyn_complete", False):
        return find

    def size(alias_map, arg_aliases):
        return -1 if arg_aliases is None else (len(arg_aliases),
                                               sum(map(len, alias_map.values())))

    def find_all(blocks, args, typemap, func_ir, alias_map=None, arg_aliases=None):
        while True:
            known = size(alias_map, arg_aliases)
            alias_map, arg_aliases = find(blocks, args, typemap, func_ir, alias_map, arg_aliases)
            _carried_aliases(blocks, typemap, alias_map, arg_aliases)
            if size(alias_map, arg_aliases) == known:  # and ``find`` has closed them
                return alias_map, arg_aliases

    find_all.kinedyn_complete = True
    return find_all


# ``remove_dead`` looks the function up in its module at every call
ir_utils.find_potential_aliases = _complete_aliases(ir_utils.find_potential_aliases)


class _NoStandaloneCopy:
    """Mixin for an overload template whose implementations are dispatchers that never compile.
    For an ``inline="always"`` overload Numba compiles each implementation on its own as well
    (``_build_impl`` asks the new dispatcher for its call type, which compiles it), although the
    inliner types the implementation's IR again in every caller and nothing calls that copy.
    With the four-bar's augmented method such copies were about a third of the first run's
    compilation (docs/architecture.md, "What the test suite's time is made of")."""

    def _get_jit_decorator(self):
        jit = super()._get_jit_decorator()

        def decorator(**options):
            def make(pyfunc):
                dispatcher = jit(**options)(pyfunc)
                dispatcher._can_compile = False  # its call template: no signature, no compiling
                return dispatcher
            return make
        return decorator


def overload_inlined(func, jit_options=None):
    """``numba.extending.overload(func, jit_options=..., inline="always")``, without the copy of
    each implementation that Numba would compile on its own (:class:`_NoStandaloneCopy`)."""
    options = {**_overload_default_jit_options, **(jit_options or {})}

    def decorate(overload_func):
        base = make_overload_template(func, overload_func, options, True, "always")
        template = type(base.__name__, (_NoStandaloneCopy, base), {})
        infer(template)
        infer_global(func, types.Function(template))
        return overload_func
    return decorate


def entry_point(dispatcher, args):
    """The compiled overload of Numba ``dispatcher`` for the types of ``args``, as a function
    called without the dispatcher's type resolution; the dispatcher itself where that overload
    is not found. Look it up after a call with those arguments (which compiled or loaded it):
    this makes no call of its own, so nothing is computed or written twice. Numba resolves the
    types of tuple arguments in Python at every call: a dynamics run's system and work (named
    tuples of dozens of arrays) took 35 of a four-bar step call's 50 us. The caller must pass
    arguments of exactly those types (the same objects, or arrays of the same dtype, rank and
    layout), since the entry point unboxes them as its signature says."""
    return _entry_point(dispatcher, args, _arguments_key(args))


def _entry_point(dispatcher, args, key):
    """:func:`entry_point`, ``key`` the arguments' :func:`_arguments_key`."""
    known = _ENTRIES.setdefault(dispatcher, {})
    if key in known:
        return known[key]
    signature = tuple(dispatcher.typeof_pyval(a) for a in args)
    compiled = dispatcher.overloads.get(signature)
    if compiled is None:
        return dispatcher
    if key is not None:
        known[key] = compiled.entry_point
    return compiled.entry_point


def resolved_call(dispatcher, args):
    """``(dispatcher(*args), f)``, ``f`` the function for the next calls with arguments of the
    same types (:func:`entry_point`). Where such arguments were resolved before in this
    process, the call goes through the entry point at once: no type resolution at all (a design
    study builds a new run for each of its cases; Numba's and the entry point's resolution of
    the four-bar's run took 2 x 3 ms of a 16-ms case)."""
    key = _arguments_key(args)
    entry = _ENTRIES.get(dispatcher, {}).get(key)
    if entry is not None:
        return entry(*args), entry
    result = dispatcher(*args)
    return result, _entry_point(dispatcher, args, key)


# dispatcher -> {key of the arguments' types: entry point}; a dispatcher of generated code
# (kinedyn.symbolic) is not kept alive by it
_ENTRIES = weakref.WeakKeyDictionary()


class _Unkeyed(Exception):
    """An argument whose Numba type :func:`_type_key` cannot tell."""


def _arguments_key(args):
    """The arguments' :func:`_type_key`, or None when one has none."""
    try:
        return tuple(map(_type_key, args))
    except _Unkeyed:
        return None


def _type_key(x):
    """What Numba's type of ``x`` depends on, at least, for the arguments of the run kernels:
    arrays (dtype, rank, layout, read-only, alignment), tuples and named tuples of those,
    Python and NumPy scalars. Computed without Numba's typing (10-20 times faster for a
    system's tuples of arrays); anything else raises _Unkeyed."""
    t = type(x)
    if t is np.ndarray:
        f = x.flags
        return x.dtype, x.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned
    if t is float or t is bool or isinstance(x, np.generic):
        return t
    if t is int:
        return t, -2**63 <= x < 2**63
    if isinstance(x, tuple):
        return t, tuple(map(_type_key, x))
    raise _Unkeyed
