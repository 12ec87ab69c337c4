"""Numba options shared across the package, :func:`overload_inlined` (an IR-inlined overload
whose implementations are not also compiled on their own), and a fix to Numba's alias analysis
(:func:`_aliases_to_a_fixed_point`) that IR inlining needs."""
import warnings

from numba.core import ir_utils, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.core.extending import _overload_default_jit_options
from numba.core.typing.templates import infer, infer_global, make_overload_template

#: Functions inlined by LLVM into their compiled callers (``forceinline``: compiled code is
#: inlined, not Numba IR) and never called from Python. Numba still compiles each on its own and
#: builds a CPython and a C wrapper for it; the wrappers are dead code here, so they are not
#: built (the kinematic kernels of the test suite compiled 10 % faster, 132 -> 120 s).
INLINED = dict(cache=True, nogil=True, forceinline=True, no_cpython_wrapper=True,
               no_cfunc_wrapper=True)

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


def _aliases_to_a_fixed_point(find):
    """Numba's ``find_potential_aliases``, repeated until the set of argument aliases stops
    growing. Numba's makes one pass over the blocks in the order of the block dictionary, and
    ``a = b.c`` makes ``a`` an alias of an argument only if ``b`` is already known as one. The
    overload inliner splits the block of each inlined call and appends the block holding the
    rest of it at the end of the dictionary; then its dead-code elimination reads the aliases.
    So after an IR-inlined overload call, a function inlined at the IR level below it (an
    ``inline="always"`` njit function) writing ``work.field[i] = x`` into a NamedTuple
    argument's array has ``work`` bound (``fill_work = work``) in a block that comes after the
    writes: they are no argument's aliases and are deleted as dead stores, without a word (the
    HDCA evaluation after ``unmanaged`` became an inlined overload: no body pose written, the
    run stopped at t = 0 as "singular"). Numba 0.59-0.68; ``tests/test_jit.py`` has the case.
    More passes only add aliases, so they only keep statements."""
    if getattr(find, "kinedyn_fixed_point", False):
        return find

    def find_all(blocks, args, typemap, func_ir, alias_map=None, arg_aliases=None):
        while True:
            known = None if arg_aliases is None else len(arg_aliases)
            alias_map, arg_aliases = find(blocks, args, typemap, func_ir, alias_map, arg_aliases)
            if len(arg_aliases) == known:
                return alias_map, arg_aliases

    find_all.kinedyn_fixed_point = True
    return find_all


# ``remove_dead`` looks the function up in its module at every call
ir_utils.find_potential_aliases = _aliases_to_a_fixed_point(ir_utils.find_potential_aliases)


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
