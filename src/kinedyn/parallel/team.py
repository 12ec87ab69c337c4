"""A persistent team of threads running one compiled kernel each, synchronised in compiled code.

Used by the Group Equations runner (:mod:`kinedyn.kinematics.threads`, structural groups level
by level) and by threaded HDCA (:mod:`kinedyn.formulations.hamiltonian.team`, subtrees of the
assembly tree). The pattern: :class:`Team` calls ``fn(w)`` for every worker ``w`` once per
*run* - the caller's thread is worker 0, ``n - 1`` pool threads (kept alive between runs) are the
others, one thread each - and ``fn`` enters a ``nogil=True`` Numba kernel that does the whole run (every step,
every level) without the GIL, without Python and without allocation. Inside, workers meet at a
:func:`barrier` (all arrive before any leaves) or wait for a published counter with
:func:`wait_until` (one producer, a consumer waits until the producer has got far enough).

Synchronisation lives in a small ``int64`` array (:func:`make_sync`) accessed with LLVM atomics:
slots ``COUNT, GENERATION, ABORT, DECISION`` belong to the barrier, slots ``PROGRESS`` and
``PROGRESS_2`` (each on its own cache line) are counters for :func:`wait_until`. Waits spin ``SPINS`` times, then yield the core
on every further spin, so that an oversubscribed machine does not stall behind a spinning
thread.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import queue
import threading
import weakref

import llvmlite.binding as llvm
import numba as nb
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
llvm.add_symbol("kinedyn_sched_yield", ctypes.cast(_libc.sched_yield, ctypes.c_void_p).value)
sched_yield = types.ExternalFunction("kinedyn_sched_yield", types.int32())
SPINS = 4000  # busy-wait iterations before yielding the core

COUNT, GENERATION, ABORT, DECISION = 0, 1, 2, 3
PROGRESS, PROGRESS_2 = 8, 16  # counters, 64 bytes apart: one cache line each
SYNC_SIZE = 24


def make_sync() -> np.ndarray:
    """A zeroed synchronisation array for one team run."""
    return np.zeros(SYNC_SIZE, np.int64)


# ---- atomics --------------------------------------------------------------------------------------
def _pointer(context, builder, sig, args):
    aryty = sig.args[0]
    ary = make_array(aryty)(context, builder, args[0])
    return cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])


@intrinsic
def atomic_add(typingctx, arr, i, v):
    """``arr[i] += v`` atomically (int64 array); returns the old value."""
    def codegen(context, builder, sig, args):
        return builder.atomic_rmw("add", _pointer(context, builder, sig, args), args[2],
                                  "seq_cst")
    return types.int64(arr, i, types.int64), codegen


@intrinsic
def atomic_load(typingctx, arr, i):
    """``arr[i]`` with acquire ordering (int64 array)."""
    def codegen(context, builder, sig, args):
        return builder.load_atomic(_pointer(context, builder, sig, args), "acquire", 8)
    return types.int64(arr, i), codegen


@intrinsic
def atomic_store(typingctx, arr, i, v):
    """``arr[i] = v`` with release ordering (int64 array)."""
    def codegen(context, builder, sig, args):
        builder.store_atomic(args[2], _pointer(context, builder, sig, args), "release", 8)
        return context.get_dummy_value()
    return types.void(arr, i, types.int64), codegen


# ---- waiting ----------------------------------------------------------------------------------------
@nb.njit(cache=True, nogil=True)
def barrier(sync, n):
    """Wait until ``n`` workers arrive; False (for every worker alike) if a worker asked to abort
    (``sync[ABORT] = 1``) before arriving.

    The last to arrive decides: it copies the abort flag into ``DECISION`` before releasing the
    others, who read that copy - not the live flag, which a fast worker may already have set
    while failing in the *next* phase (the workers would then disagree and deadlock).
    """
    gen = atomic_load(sync, GENERATION)
    if atomic_add(sync, COUNT, 1) == n - 1:
        decision = atomic_load(sync, ABORT)
        atomic_store(sync, DECISION, decision)
        atomic_store(sync, COUNT, 0)
        atomic_add(sync, GENERATION, 1)
        return decision == 0
    spins = 0
    while atomic_load(sync, GENERATION) == gen:
        spins += 1
        if spins > SPINS:
            sched_yield()
    return atomic_load(sync, DECISION) == 0


@nb.njit(cache=True, nogil=True)
def wait_until(sync, slot, value):
    """Wait until the counter ``sync[slot]`` (only ever increased, by one producer with
    :func:`atomic_store`) reaches ``value``; everything the producer wrote before publishing
    that value is then visible."""
    spins = 0
    while atomic_load(sync, slot) < value:
        spins += 1
        if spins > SPINS:
            sched_yield()


# ---- the team -------------------------------------------------------------------------------------
def _serve(w: int, jobs: queue.SimpleQueue, done: queue.SimpleQueue) -> None:
    """A pool thread: run ``fn(w)`` for every job until ``None`` arrives (holding no job
    while idle, so that what a job refers to can be collected)."""
    while (fn := jobs.get()) is not None:
        try:
            fn(w)
            done.put(None)
        except BaseException as exc:  # handed to the caller of Team.run
            done.put(exc)
        fn = None


def _stop(jobs) -> None:
    for q in jobs:
        q.put(None)


class Team:
    """``n_workers`` workers: the calling thread (worker 0) and ``n_workers - 1`` persistent
    daemon threads, one per worker (never shared: workers that meet at barriers must run at the
    same time). :meth:`run` calls ``fn(w)`` for every worker and returns when all are done,
    re-raising the first exception; runs are serialised by a lock."""

    def __init__(self, n_workers: int, name: str = "kinedyn-team"):
        if int(n_workers) < 1:
            raise ValueError(f"a team needs at least one worker, got {n_workers}")
        self.n = int(n_workers)
        self._jobs = [queue.SimpleQueue() for _ in range(self.n - 1)]
        self._done = queue.SimpleQueue()
        self._lock = threading.Lock()
        for w in range(1, self.n):  # the threads hold the queues, not the team
            threading.Thread(target=_serve, args=(w, self._jobs[w - 1], self._done),
                             name=f"{name}-{w}", daemon=True).start()
        # a team dropped without close() still lets its threads finish
        self._finalizer = weakref.finalize(self, _stop, list(self._jobs))

    def run(self, fn) -> None:
        with self._lock:
            if self.n > 1 and not self._jobs:
                raise RuntimeError("the team is closed")
            for jobs in self._jobs:
                jobs.put(fn)
            error = None
            try:
                fn(0)
            except BaseException as exc:
                error = exc
            for _ in self._jobs:
                exc = self._done.get()
                error = error or exc
            if error is not None:
                raise error

    def close(self) -> None:
        """Let the pool threads finish."""
        with self._lock:
            self._finalizer()
            self._jobs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
