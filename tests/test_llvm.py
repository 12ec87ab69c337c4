"""kinedyn._llvm: generated functions compiled once, loaded from the disk cache, and never
freed while their addresses are in use (two threads compiling the same module)."""
from __future__ import annotations

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
