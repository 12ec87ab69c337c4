"""kinedyn._jit: the one Numba note kinedyn silences is the SSA pass's "not in scope" note on
the results of its own inlined overloads; other notes of that kind still reach the user. And
``overload_inlined``: inlined overloads whose implementations Numba does not compile on their
own. And the two fixes to Numba's alias analysis (block order, values carried by tuples) that
keep stores after an inlined overload. And the workers compiled without reference counting,
whose helpers keep theirs. And the compiled entry points found without Numba's typing."""
from __future__ import annotations

import warnings
from typing import NamedTuple

import numba as nb
import numpy as np
import pytest
from numba.core import event, ir_utils, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import overload

from kinedyn import _jit
from kinedyn._jit import (INLINED, WORKER, overload_inlined, quiet_inliner_notes,
                         resolved_call)


def action(message: str) -> str | None:
    """The action of the first filter that matches a NumbaIRAssumptionWarning ``message``."""
    for act, regex, category, _module, _line in warnings.filters:
        if issubclass(NumbaIRAssumptionWarning, category) and (regex is None
                                                                or regex.match(message)):
            return act
    return None


def test_only_the_inlined_overloads_notes_are_ignored():
    quiet_inliner_notes()  # pytest drops the filters installed while it imported the modules
    ours = "variable '_ov_phi_and_phi_q__locals___lambda__v350__v34call_9_2.1' is not in scope."
    assert action(ours) == "ignore"
    assert action("variable 'x.1' is not in scope.") != "ignore"
    assert action("variable '_ov_f__locals___lambda__v1' is undefined") != "ignore"


def _compiled_during(call) -> list[str]:
    """The names of the functions Numba compiled while running ``call()``."""
    names = []

    class Listener(event.Listener):
        def on_start(self, e):
            names.append(e.data["dispatcher"].py_func.__qualname__)

        def on_end(self, e):
            pass

    with event.install_listener("numba:compile", Listener()):
        call()
    return names


def _scaled(x):
    """A generic function for the overloads below."""


def _scaled_plain(x):
    """The same through Numba's own ``overload``."""


@overload_inlined(_scaled)
def _ov_scaled(x):
    if isinstance(x, types.Array):
        return lambda x: 2.0 * x + x.sum()
    return lambda x: 2.0 * x


@overload(_scaled_plain, inline="always")
def _ov_scaled_plain(x):
    return lambda x: 3.0 * x


@nb.njit
def _use(a, s):
    return _scaled(a), _scaled(s), _scaled_plain(s)


def test_an_inlined_overload_is_not_compiled_on_its_own():
    """overload_inlined: the implementations are inlined and give their results, and Numba does
    not compile them on their own (as it does those of a plain ``inline="always"`` overload)."""
    a = np.arange(3.0)
    out = []
    names = _compiled_during(lambda: out.append(_use(a, 1.5)))
    vector, scalar, plain = out[0]
    np.testing.assert_array_equal(vector, [3.0, 5.0, 7.0])
    assert scalar == 3.0 and plain == 4.5
    assert "_use" in names
    assert "_ov_scaled_plain.<locals>.<lambda>" in names  # Numba's own overload: the copy
    assert not any(n.startswith("_ov_scaled.") for n in names), names


def test_a_typing_error_in_an_inlined_overload_is_reported():
    @nb.njit
    def bad(s):
        return _scaled((s, s))  # a tuple: 2.0 * (s, s) does not type

    with pytest.raises(nb.core.errors.TypingError):
        bad(1.0)


class _Work(NamedTuple):
    a: np.ndarray


@nb.njit(inline="always")
def _fill(work, n):
    for i in range(n):  # stores through a NamedTuple argument's field, in a loop's blocks
        work.a[i] = 2.0 * i + 1.0


@nb.njit
def _fill_after_an_inlined_overload(work, n):
    m = _scaled(n)  # 2n, IR-inlined: Numba splits this block around it
    _fill(work, int(m) // 2)


def test_stores_after_an_inlined_overload_are_kept():
    """Numba's one-pass alias analysis lost ``work`` as an argument alias once the overload
    inliner had moved the block binding ``_fill``'s parameter after the loop's blocks, and its
    dead-code elimination deleted the stores (kinedyn._jit._complete_aliases)."""
    assert getattr(ir_utils.find_potential_aliases, "kinedyn_complete", False)
    work = _Work(np.zeros(4))
    _fill_after_an_inlined_overload(work, 3)
    np.testing.assert_array_equal(work.a, [1.0, 3.0, 5.0, 0.0])


class _PlanWork(NamedTuple):
    phi: np.ndarray
    rhs: np.ndarray


@nb.njit(inline="always")
def _chord_rhs(pw):
    for i in range(pw.phi.shape[0]):
        pw.rhs[i] = -pw.phi[i]  # the only use of this ``pw.rhs``
    return pw.rhs.sum()         # read again through another


@nb.njit
def _unpacked_then_inlined(parts, u, n):
    m = _scaled(n)  # an IR-inlined overload: Numba's dead-code elimination runs
    # four names: a tuple built and unpacked (two or three are swapped on the stack)
    first, second, third, pw = parts[0][u], parts[1][u], parts[2][u], parts[3][u]
    return _chord_rhs(pw) + first.phi[0] + second.phi[0] + third.phi[0] + m


def test_stores_through_unpacked_tuples_are_kept():
    """The aliases of a value that went through a tuple (built and unpacked): Numba's analysis
    stopped there, and the store into ``pw.rhs`` was deleted (kinedyn._jit._CARRIERS)."""
    pws = (_PlanWork(np.array([1.0, 2.0]), np.zeros(2)),)
    parts = (pws, pws, pws, pws)
    assert _unpacked_then_inlined(parts, 0, 0.5) == -3.0 + 3 * 1.0 + 1.0
    np.testing.assert_array_equal(pws[0].rhs, [-1.0, -2.0])


def test_a_worker_counts_no_references():
    """A :data:`~kinedyn._jit.WORKER` is compiled without Numba's reference counting: no
    increment or decrement of its array arguments around its body."""
    @nb.njit(**dict(WORKER, cache=False))
    def scale(a, b, x):
        for i in range(a.shape[0]):
            b[i] = x * a[i]

    a, b = np.arange(4.0), np.zeros(4)
    scale(a, b, 2.0)
    assert np.array_equal(b, 2.0 * a)
    (compiled,) = scale.overloads.values()
    assert "NRT_incref" not in compiled.library.get_llvm_str()


def test_a_helper_compiled_inside_a_worker_keeps_counting_references():
    """An :data:`~kinedyn._jit.INLINED` helper compiled first inside a worker is compiled with
    reference counting all the same: a counting caller reuses that compilation, and a helper
    that returns its argument must count the reference it hands back. With the flag left to
    Numba, the helper took the worker's (none), and a counting caller's 1000 calls ended in
    ``malloc(): unaligned tcache chunk detected``."""
    def same(a):
        return a

    def compiled_inside_a_worker(options):
        helper = nb.njit(**dict(options, cache=False))(same)

        @nb.njit(**dict(WORKER, cache=False))
        def worker(a):
            return helper(a)[1]

        assert worker(np.arange(3.0)) == 1.0  # compiles the helper, inside the worker
        (compiled,) = helper.overloads.values()
        return "NRT_incref" in compiled.library.get_llvm_str()

    assert compiled_inside_a_worker(INLINED)
    inherited = {k: v for k, v in INLINED.items() if k != "_nrt"}
    assert not compiled_inside_a_worker(inherited)  # the case the explicit flag prevents


class Pair(NamedTuple):
    a: np.ndarray
    b: np.ndarray


def _arguments():
    """Values of every kind the run kernels take, with look-alikes that Numba types apart."""
    c = np.arange(12.0).reshape(3, 4)
    frozen = c.copy()
    frozen.flags.writeable = False
    return [c, c.copy(), np.asfortranarray(c), c[:, ::2], frozen, c.astype(np.float32),
            np.arange(4), np.arange(4, dtype=np.int32), np.arange(4.0), np.zeros((0,)),
            np.zeros((1, 1)), 3, -7, 2**63, 2.5, True, False, np.float64(1.0), np.int64(2),
            np.int32(2), np.bool_(True), (1, 2.0), (1.0, 2), (c, 1), (c.copy(), 2),
            (np.asfortranarray(c), 1), Pair(c, c), Pair(c, np.arange(3.0)), (c, c), ()]


def test_an_arguments_key_is_at_least_as_fine_as_numbas_type():
    """Two values with one key have one Numba type: the entry point found by key unboxes them
    as its signature says."""
    values = _arguments()
    keys = [_jit._type_key(v) for v in values]
    for i, (u, ku) in enumerate(zip(values, keys)):
        for v, kv in zip(values[i + 1:], keys[i + 1:]):
            if ku == kv:
                assert nb.typeof(u) == nb.typeof(v), (u, v)
    with pytest.raises(_jit._Unkeyed):
        _jit._type_key([1.0])  # a list: Numba's reflected list, not keyed


@nb.njit(cache=True)
def _total(pair, scale, out):
    out[0] = scale * (pair.a.sum() + pair.b.sum())
    return out[0]


def test_a_call_with_known_argument_types_needs_no_type_resolution(monkeypatch):
    """The first run resolves by the dispatcher; a later run with new objects of the same types
    calls the entry point at once, with the dispatcher's typing out of reach; other types go
    by the dispatcher again."""
    out = np.zeros(1)
    first, run = resolved_call(_total, (Pair(np.ones(3), np.ones(2)), 2.0, out))
    assert first == 10.0 and run is not _total

    def no_typing(*args):
        raise AssertionError("typed again")
    monkeypatch.setattr(_total, "typeof_pyval", no_typing)
    again, run_again = resolved_call(_total, (Pair(np.full(2, 3.0), np.ones(1)), 0.5, out))
    assert again == 3.5 == out[0] and run_again is run
    monkeypatch.undo()
    other = (Pair(np.ones(3), np.ones((1, 2))), 1.0, out)   # another rank: another overload
    assert resolved_call(_total, other)[0] == 5.0
    assert _jit.entry_point(_total, other) is not run
