"""kinedyn._llvm: generated functions compiled once, loaded from the disk cache, and never
freed while their addresses are in use (two threads compiling the same module)."""
from __future__ import annotations

import warnings

import pytest

from kinedyn import _llvm

TEXT = """define i64 @seven(ptr noalias %x) {
entry:
  store double 7.0, ptr %x, align 8
  ret i64 0
}"""


def test_a_module_compiled_twice_at_once_hands_out_one_engines_addresses(monkeypatch, tmp_path):
    """While one caller compiles, another compiles the same module and stores its engine first:
    the first caller must return the stored engine's addresses, not those of its own engine,
    which is dropped (and its code freed)."""
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    monkeypatch.setattr(_llvm, "_ENGINES", {})
    load, inner = _llvm._load, []

    def racing_load(*args, **kwargs):
        if not inner:  # the other thread, finishing first
            inner.append(None)
            inner[0] = _llvm.compile_module(TEXT, ("seven",), "test")
        return load(*args, **kwargs)
    monkeypatch.setattr(_llvm, "_load", racing_load)
    outer = _llvm.compile_module(TEXT, ("seven",), "test")
    (stored,) = _llvm._ENGINES.values()
    assert list(outer) == list(inner[0]) == list(stored[1])
    assert len(list((tmp_path / "test").glob("*.o"))) == 1


def test_ir_that_llvm_refuses_gives_a_warning_naming_the_code_and_no_addresses(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    bad = TEXT.replace("ret i64 0", "ret i64 %undefined")
    with pytest.warns(RuntimeWarning, match=r"the seven kernel: no generated code \(LLVM: .*"
                                            r"undefined.*using the loops"):
        assert _llvm.compile_or_warn(bad, ("seven",), "test", "the seven kernel") is None
    assert list(_llvm.compile_or_warn(TEXT, ("seven",), "test", "the seven kernel")) == \
        list(_llvm.compile_module(TEXT, ("seven",), "test"))


def _module(k: int) -> str:
    return TEXT.replace("7.0", f"{k}.0")


def test_transient_code_keeps_only_the_most_recently_used_modules(monkeypatch, tmp_path):
    """Code first compiled in transient blocks is never written to disk, and is freed once
    KEEP_TRANSIENT newer such modules were made or used; a module every block uses again
    stays, and one used outside the blocks is kept for good."""
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    for name, value in (("_ENGINES", {}), ("_RECENT", {}), ("KEEP_TRANSIENT", 3)):
        monkeypatch.setattr(_llvm, name, value)
    shared = None
    for k in range(6):
        with _llvm.transient_code(("test",)):
            own = _llvm.compile_module(_module(k), ("seven",), "test")
            shared = _llvm.compile_module(_module(99), ("seven",), "test")
            assert shared[0] != 0 and own[0] != 0
            assert len(_llvm._ENGINES) <= 3 + 2     # freed at the end of a block only
        assert len(_llvm._RECENT) <= 3
    assert not (tmp_path / "test").exists()
    kept = {_llvm._engine_key(_module(k), ("seven",)) for k in (5, 99)}
    assert kept <= set(_llvm._RECENT) and len(_llvm._ENGINES) == 3
    assert list(_llvm.compile_module(_module(99), ("seven",), "test")) == list(shared)
    assert _llvm._engine_key(_module(99), ("seven",)) not in _llvm._RECENT  # kept for good
    for k in range(10, 14):
        with _llvm.transient_code(("test",)):
            _llvm.compile_module(_module(k), ("seven",), "test")
    assert _llvm._engine_key(_module(99), ("seven",)) in _llvm._ENGINES
    assert len(_llvm._ENGINES) == 1 + 3


def test_a_structure_builds_its_ir_once_while_its_code_lives(monkeypatch, tmp_path):
    monkeypatch.setenv("KINEDYN_CACHE", str(tmp_path))
    for name, value in (("_ENGINES", {}), ("_STRUCTURES", {}), ("_RECENT", {})):
        monkeypatch.setattr(_llvm, name, value)
    built = []

    def make():
        built.append(1)
        return TEXT
    first = _llvm.compile_structure(b"s", make, ("seven",), "test", "seven")
    assert list(_llvm.compile_structure(b"s", make, ("seven",), "test", "seven")) == list(first)
    assert len(built) == 1
    _llvm._ENGINES.clear()              # its engine gone (a new process, a transient block)
    _llvm.compile_structure(b"s", make, ("seven",), "test", "seven")
    assert len(built) == 2
    assert _llvm.compile_structure(b"none", lambda: None, ("seven",), "test", "seven") is None
    bad = TEXT.replace("ret i64 0", "ret i64 %undefined")
    with pytest.warns(RuntimeWarning, match="the bad seven: no generated code"):
        assert _llvm.compile_structure(b"bad", lambda: built.append(2) or bad, ("seven",), "test",
                                       "the bad seven") is None
    with warnings.catch_warnings():   # not tried again: no second warning, no IR built
        warnings.simplefilter("error")
        for structure in (b"bad", b"none"):
            assert _llvm.compile_structure(structure, make, ("seven",), "test", "x") is None
    assert built == [1, 1, 2]
