"""Threaded HDCA evaluation: the assembly tree split by subtrees over a persistent thread team.

The paper's parallel HDCA (section 2, Fig. 3; O(log n) with one processor per node) evaluates
the nodes of one tree level at the same time. With a few cores, one fork/join per level costs
more than the few microseconds of work in a level (measured: 2 threads 0.48x at N = 256 with a
Numba ``prange`` per level). Here each worker of a :class:`kinedyn.parallel.team.Team` owns one
whole subtree below the top ``ceil(log2 n_workers)`` levels - a contiguous range of chain bodies,
their joints and their internal nodes, so the workers write disjoint stretches of memory - and
runs it without synchronisation:

1. forward kinematics of its bodies and joints. The chain's poses are a serial prefix; a worker
   recomputes the poses of the bodies before its range (without writing them: about 15 ns per
   body, angles and sines only) instead of waiting for the worker that owns them; barrier;
2. leaves (eqs. 13-18, 38) of its bodies, assembly (27-37, 39) of its subtree; barrier;
3. the leader (the worker of the first range, which has no prefix to recompute): assembly of
   the top nodes, base connection (40-44), disassembly of the top nodes (45-48); barrier;
4. disassembly of its subtree, leaf velocities (11-12); barrier;
5. rates (49-51) of its joints (joint ``k`` belongs to the worker of body ``k``).

Four barriers per evaluation whatever the depth, plus one before the next (its inputs, written
by all workers, must be complete). An earlier version piped the forward kinematics of worker 0
into the leaves computed by worker 1 through a counter published after every body: on an idle
2-core machine the cache line of that counter and the freshly written poses bounced between the
cores for every body, and the threads ran slower than the serial pass (see ``docs/hdca.md``).
Every node is computed by exactly the same compiled code as the serial evaluation
(:func:`.kernels.evaluate`), only the order of independent nodes differs, so the results are
bit-for-bit identical (tested).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numba as nb
import numpy as np

from ...parallel.team import ABORT, atomic_store, barrier
from .kernels import (HDCAData, assemblies, base_connection, disassemblies, forward_kinematics,
                      joint_rates, kinematics_at, leaves, velocities)


class TeamPlan(NamedTuple):
    """Who does what. Worker ``w`` owns chain bodies ``body_lo[w]:body_hi[w]`` (a subtree),
    its internal nodes ``nodes[node_ptr[w]:node_ptr[w+1]]`` (children before parents) and the
    joints ``joints[joint_ptr[w]:joint_ptr[w+1]]`` of its bodies (the loop-closing joint to the
    last range); ``top`` are the nodes above the subtrees, worked by ``leader``, the worker of
    the first range."""
    n_workers: int
    leader: int
    body_lo: np.ndarray    # (n_workers,)
    body_hi: np.ndarray    # (n_workers,)
    node_ptr: np.ndarray   # (n_workers + 1,)
    nodes: np.ndarray      # (n_node_owned,)
    top: np.ndarray        # (n_top,)
    joint_ptr: np.ndarray  # (n_workers + 1,)
    joints: np.ndarray     # (n_j,)


def make_plan(data: HDCAData, n_workers: int) -> TeamPlan:
    """Split the assembly tree of ``data`` into ``n_workers`` subtrees (fewer for tiny chains:
    the remaining workers only meet at the barriers)."""
    n_workers = int(n_workers)
    if n_workers < 1:
        raise ValueError(f"n_workers must be >= 1, got {n_workers}")
    left, first, last = data.left, data.first, data.last
    n_b, n_j = data.n_b, data.n_j
    parts = [len(left) - 1]  # the root
    while len(parts) < n_workers:  # split the largest splittable subtree
        inner = [i for i, c in enumerate(parts) if left[c] >= 0]
        if not inner:
            break
        i = max(inner, key=lambda i: last[parts[i]] - first[parts[i]])
        c = parts[i]
        parts[i:i + 1] = [int(left[c]), int(data.right[c])]
    # parts are in chain order; worker 0 (the caller's thread) gets the last range
    owner = {c: len(parts) - 1 - i for i, c in enumerate(parts)}
    internal = [c for c in np.argsort(data.height, kind="stable") if left[c] >= 0]
    lo = np.zeros(n_workers, np.int64)
    hi = np.zeros(n_workers, np.int64)
    node_lists = [[] for _ in range(n_workers)]
    joint_lists = [[] for _ in range(n_workers)]
    for c, w in owner.items():
        lo[w], hi[w] = first[c], last[c] + 1
        node_lists[w] = [int(x) for x in internal if first[c] <= first[x] and last[x] <= last[c]]
        joint_lists[w] = list(range(lo[w], hi[w])) + ([n_b] if hi[w] == n_b < n_j else [])
    owned = {x for lst in node_lists for x in lst}
    top = [int(c) for c in internal if c not in owned]
    ptr = lambda lists: np.cumsum([0] + [len(x) for x in lists]).astype(np.int64)  # noqa: E731
    flat = lambda lists: np.array([x for lst in lists for x in lst], np.int64)  # noqa: E731
    return TeamPlan(n_workers, owner[parts[0]], lo, hi, ptr(node_lists), flat(node_lists),
                    np.array(top, np.int64), ptr(joint_lists), flat(joint_lists))


@nb.njit(cache=True, nogil=True, inline="always")
def evaluate_part(data, work, plan, w, sync, q, p, qd, pd) -> int:
    """Worker ``w``'s share of one evaluation (steps 1-5 of the module docstring): the rates
    ``qd, pd`` of its joints. Starts with a barrier (every worker's share of ``q, p`` must be
    written); 1 (for every worker alike) when a joint's constraint matrix is singular."""
    n_w = plan.n_workers
    if n_w == 1:  # the serial passes
        kinematics_at(data, work, q)
        leaves(data, work, p, 0, data.n_b)
    else:
        barrier(sync, n_w, w)
        forward_kinematics(data, work, q, plan.body_lo[w], plan.body_hi[w])
        work.q_fk[0] = math.nan  # kinematics that kinematics_at did not record
        barrier(sync, n_w, w)
        leaves(data, work, p, plan.body_lo[w], plan.body_hi[w])
    if assemblies(data, work, plan.nodes, plan.node_ptr[w], plan.node_ptr[w + 1]) != 0:
        atomic_store(sync, ABORT, 1)
    if not barrier(sync, n_w, w):
        return 1
    if w == plan.leader:
        top = plan.top
        st = assemblies(data, work, top, 0, top.shape[0])
        if st == 0:
            st = base_connection(data, work)
        if st == 0:
            disassemblies(data, work, top, 0, top.shape[0])
        else:
            atomic_store(sync, ABORT, 1)
    if not barrier(sync, n_w, w):
        return 1
    disassemblies(data, work, plan.nodes, plan.node_ptr[w], plan.node_ptr[w + 1])
    velocities(work, plan.body_lo[w], plan.body_hi[w])
    barrier(sync, n_w, w)
    for i in range(plan.joint_ptr[w], plan.joint_ptr[w + 1]):
        joint_rates(data, work, plan.joints[i], qd, pd)
    return 0
