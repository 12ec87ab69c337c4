"""Straight-line machine code generated as LLVM IR and compiled by llvmlite (which Numba ships:
no C compiler needed), shared by the generated sparse LU (:mod:`kinedyn.linalg.lu_codegen`) and
the generated constraint kernels (:mod:`kinedyn.formulations.natural.codegen`).

A kernel that does the same arithmetic on a fixed pattern at every step walks index arrays that
are constants; unrolled, every position becomes an immediate offset and the intermediate values
stay in registers. The IR goes to LLVM's MCJIT in this process; the object code is cached on
disk (under :func:`kinedyn._cache.cache_root`), keyed by the IR, llvmlite and the host CPU, and
in memory for the life of the process (the addresses stay valid while it runs: the engines are
never freed, but for the code of a design study's cases, :func:`transient_code`). Compiled
kernels call the functions through their addresses (:func:`call`), which are data, so the
kernels that call them stay cacheable.
"""
from __future__ import annotations

import functools
import hashlib
import os
import struct
import warnings
from contextlib import contextmanager

import llvmlite
import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array

from ._cache import cache_root

_ENGINES: dict = {}  # key -> (engine, addresses); kept for the life of the process
_TRANSIENT: list = []  # open transient_code() blocks: (folders, keys first compiled in them)
_STRUCTURES: dict = {}  # (folder, structure digest) -> key in _ENGINES (compile_structure)
NO_IR = ""  # in _STRUCTURES: the structure has no code
_RECENT: dict = {}  # keys of transient engines kept after their blocks, least recent first
KEEP_TRANSIENT = 16  # of those, how many are kept (see transient_code)
HEADER = "declare double @llvm.fabs.f64(double)"


def constant(x: float) -> str:
    """A double as an exact LLVM IR literal (its bits in hexadecimal)."""
    return f"0x{struct.unpack('<Q', struct.pack('<d', float(x)))[0]:016X}"


class Function:
    """The body of one LLVM function returning i64, in SSA form, one instruction per line.
    Arithmetic is emitted as written: no fused multiply-add, no reassociation (the loops it
    unrolls round the same way)."""

    def __init__(self, signature: str, internal: bool = False):
        """``signature``: ``@name(arguments)``; ``internal``: a part that only the module's
        own functions call, never inlined into them (:mod:`kinedyn.formulations.natural.codegen`
        cuts large sets of rows into such parts)."""
        head = (f"define internal i64 {signature} noinline" if internal
                else f"define i64 {signature}")
        self.lines = [f"{head} {{", "entry:"]
        self.count = 0
        self.inputs: dict = {}  # (array, index) -> SSA value (see read)

    def value(self, instruction: str) -> str:
        self.count += 1
        name = f"%v{self.count}"
        self.lines.append(f"  {name} = {instruction}")
        return name

    def load(self, array: str, i) -> str:
        p = self.value(f"getelementptr inbounds double, ptr {array}, i64 {int(i)}")
        return self.value(f"load double, ptr {p}, align 8")

    def read(self, array: str, i) -> str:
        """``array[i]`` of an array the function only reads: loaded once, at first use."""
        if (array, int(i)) not in self.inputs:
            self.inputs[array, int(i)] = self.load(array, i)
        return self.inputs[array, int(i)]

    def store(self, array: str, i, v: str) -> None:
        p = self.value(f"getelementptr inbounds double, ptr {array}, i64 {int(i)}")
        self.lines.append(f"  store double {v}, ptr {p}, align 8")

    def add(self, a: str, b: str) -> str:
        return self.value(f"fadd double {a}, {b}")

    def sub(self, a: str, b: str) -> str:
        return self.value(f"fsub double {a}, {b}")

    def neg(self, a: str) -> str:
        return self.value(f"fneg double {a}")

    def mul(self, a: str, b: str) -> str:
        return self.value(f"fmul double {a}, {b}")

    def sub_product(self, acc: str, a: str, b: str) -> str:
        """acc - a * b, rounded twice as the loops do (no fused multiply-add)."""
        return self.sub(acc, self.mul(a, b))

    def abs(self, v: str) -> str:
        return self.value(f"call double @llvm.fabs.f64(double {v})")

    def exit_if(self, condition: str, label: str) -> None:
        """Branch to ``label`` (an exit of :meth:`end`) when ``condition`` holds."""
        self.count += 1
        self.lines.append(f"  br i1 {condition}, label %{label}, label %ok{self.count}")
        self.lines.append(f"ok{self.count}:")

    def end(self, exits: dict | None = None) -> str:
        """The function's text: it returns 0, or ``exits[label]`` from the branches to label."""
        self.lines.append("  ret i64 0")
        for label, code in (exits or {}).items():
            self.lines += [f"{label}:", f"  ret i64 {int(code)}"]
        return "\n".join(self.lines + ["}"])


def pointers(args) -> str:
    """A signature's arguments: the named pointers, none aliasing another."""
    return ", ".join(f"ptr noalias {a}" for a in args)


def part(name: str, args, k: int, n_parts: int) -> Function:
    """Part ``k`` of ``n_parts`` of the function ``@name(args)`` (see :func:`in_parts`): the
    function itself when there is one part (no call in between)."""
    if n_parts == 1:
        return Function(f"@{name}({pointers(args)})")
    return Function(f"@{name}.{k}({pointers(args)})", internal=True)


def in_parts(name: str, args, n_parts: int) -> str:
    """``@name(args)`` calling its parts ``@name.0`` to ``@name.{n_parts - 1}`` (:func:`part`)
    in order, or nothing when there is one part: LLVM's code generation takes time more than
    proportional to a function's size, so long straight-line code is cut into parts."""
    if n_parts == 1:
        return ""
    typed = ", ".join(f"ptr {a}" for a in args)
    calls = [f"  %c{k} = call i64 @{name}.{k}({typed})" for k in range(n_parts)]
    return "\n".join([f"define i64 @{name}({pointers(args)}) {{", "entry:", *calls,
                      "  ret i64 0", "}"])


@functools.cache
def _host() -> tuple:
    """(triple, CPU name, CPU features) of this host, asked of LLVM once per process: the
    query took 0.3 ms, once per module looked up (a four-bar re-analysing its sparse pivot
    order 800 times in 20 000 steps looks up its LU's module every time)."""
    llvm.initialize_native_target()
    return (llvm.get_default_triple(), llvm.get_host_cpu_name(),
            llvm.get_host_cpu_features().flatten())


def _target_machine():
    """LLVM's code generator for this CPU (its features: AVX-512 where the host has it); a new
    one for every engine, which owns and frees it."""
    llvm.initialize_native_asmprinter()
    triple, cpu, features = _host()
    return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features,
                                                                 opt=2)


def compile_module(text: str, names: tuple, folder: str) -> np.ndarray:
    """The addresses (int64) of the functions ``names`` of the IR module ``text``, compiled
    once per process and cached on disk under ``folder`` of the cache root (not inside a
    :func:`transient_code` block for ``folder``). Raises ``RuntimeError`` when LLVM refuses
    the IR."""
    key = _engine_key(text, names)
    if key not in _ENGINES:
        made = _transient(folder)
        loaded = _load(cache_root() / folder / f"{key[:32]}.o", text, names,
                       save=made is None)
        # two threads compiling the same module: the first engine stored is the one whose
        # addresses are handed out (replacing it would free code that is in use)
        _ENGINES.setdefault(key, loaded)
        if made is not None:
            made.add(key)
    return _used(key, folder)


def _engine_key(text: str, names: tuple) -> str:
    """The key of the module ``text`` in :data:`_ENGINES` and on disk."""
    return hashlib.sha256("\n".join([text, llvmlite.__version__, *_host(),
                                      *names]).encode()).hexdigest()


def compile_structure(structure: bytes, make_ir, names: tuple, folder: str, subject: str):
    """:func:`compile_or_warn` of the IR ``make_ir()`` builds (None: no code), which is a
    function of the bytes ``structure`` (a digest of what it reads): the IR is built once per
    structure while its engine lives (building it can take longer than loading its object
    code). For generators whose code serves many inputs of one structure: the LU of a sparsity
    pattern, the natural constraints of a model whatever its geometry. A structure with no code
    (``make_ir()`` gave None, or LLVM refused the IR, with one warning) is not tried again."""
    key = _STRUCTURES.get((folder, structure))
    if key == NO_IR:
        return None
    if key is not None and key in _ENGINES:   # (freed by transient_code: built again)
        return _used(key, folder)
    text = make_ir()
    addresses = None if text is None else compile_or_warn(text, names, folder, subject)
    _STRUCTURES[folder, structure] = NO_IR if addresses is None else _engine_key(text, names)
    return addresses


def _transient(folder: str):
    """The set of keys first compiled in the innermost open :func:`transient_code` block for
    ``folder``, or None outside such blocks."""
    return next((keys for folders, keys in reversed(_TRANSIENT) if folder in folders), None)


def _used(key: str, folder: str) -> np.ndarray:
    """The addresses of engine ``key``, about to be used: a transient engine kept after its
    block (:data:`_RECENT`) becomes the most recent again, or is kept for good when used
    outside such blocks (the code now serves a caller that outlives them)."""
    if key in _RECENT:
        del _RECENT[key]
        if _transient(folder) is not None:
            _RECENT[key] = None
    return _ENGINES[key][1]


@contextmanager
def transient_code(folders=("functions",)):
    """Generated code of the cache ``folders`` that is first compiled inside the block is not
    written to the disk cache, and is freed after the block, once ``KEEP_TRANSIENT`` newer
    such modules have been made or used in later blocks (when no block is open).

    For a design study (:mod:`kinedyn.sweep`): a case's functions of time (the default folder)
    may be its own, when a varied parameter enters them. Kept, they grew a worker by 60 kB and
    the disk cache by a 5-kB file per case. Code of earlier cases that a case uses again (the
    functions when no varied parameter enters them) is kept while cases use it, so it is not
    compiled again for each case. Code compiled before the block is untouched, and code that
    serves a whole structure (sparse LU, natural constraints: :func:`compile_structure`) is
    not in this folder. Nothing built inside the block may run its code after it."""
    made: set = set()
    entry = (tuple(folders), made)
    _TRANSIENT.append(entry)
    try:
        yield
    finally:
        _TRANSIENT.remove(entry)
        for key in made:
            _RECENT[key] = None
        while not _TRANSIENT and len(_RECENT) > KEEP_TRANSIENT:
            oldest = next(iter(_RECENT))
            del _RECENT[oldest]
            _ENGINES.pop(oldest, None)  # the last reference to the engine: its code is freed


def compile_or_warn(text: str, names: tuple, folder: str, subject: str):
    """:func:`compile_module`, or None after a ``RuntimeWarning`` naming ``subject`` when LLVM
    refuses the IR: every generated function here has a loop that does the same arithmetic,
    so the caller keeps its loops and the run goes on."""
    try:
        return compile_module(text, names, folder)
    except RuntimeError as exc:   # LLVM's message spans lines (source, caret): made one line
        warnings.warn(f"{subject}: no generated code (LLVM: {' '.join(str(exc).split())}); "
                      "using the loops", RuntimeWarning, stacklevel=3)
        return None


def _load(path, text: str, names: tuple, save: bool = True):
    """(engine, addresses) for the IR ``text``: its object code read from ``path`` or compiled
    (and saved there, with ``save``), then loaded into an MCJIT engine of its own."""
    try:
        obj = path.read_bytes()
    except OSError:
        module = llvm.parse_assembly(text)
        module.verify()
        obj = _target_machine().emit_object(module)
        if save:
            _save(path, obj)
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine())
    engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    return engine, np.array([engine.get_function_address(name) for name in names], np.int64)


def _save(path, obj: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(obj)
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache: compile again next time


@intrinsic
def call(typingctx, address, arrays, offsets, scalars):
    """``address(&arrays[0][offsets[0]], ..., *scalars) -> int64``: call a generated function.
    The arrays must be C-contiguous float64 (pointers into their data are passed: a block's
    code works on its part of a block-diagonal solver's arrays), the offsets integers, the
    scalars float64."""
    if not all(isinstance(x, types.BaseTuple) for x in (arrays, offsets, scalars)):
        return None
    if not all(c_float64(a) for a in arrays.types):
        return None
    if len(offsets.types) != len(arrays.types) or any(
            not isinstance(t, types.Integer) for t in offsets.types):
        return None
    if any(t != types.float64 for t in scalars.types):
        return None
    sig = types.int64(address, arrays, offsets, scalars)

    def codegen(context, builder, sig, args):
        dp = ir.DoubleType().as_pointer()
        fnty = ir.FunctionType(ir.IntType(64), [dp] * len(arrays.types)
                               + [ir.DoubleType()] * len(scalars.types))
        fn = builder.inttoptr(args[0], fnty.as_pointer())
        data = []
        for k, t in enumerate(arrays.types):
            base = make_array(t)(context, builder, builder.extract_value(args[1], k)).data
            off = context.cast(builder, builder.extract_value(args[2], k), offsets.types[k],
                               types.int64)
            data.append(builder.gep(base, [off], inbounds=True))
        values = [builder.extract_value(args[3], k) for k in range(len(scalars.types))]
        return builder.call(fn, data + values)
    return sig, codegen


def c_float64(t) -> bool:
    """Whether the Numba type ``t`` is a C-contiguous float64 array (what :func:`call` passes)."""
    return isinstance(t, types.Array) and t.layout == "C" and t.dtype == types.float64
