"""kinedyn._jit: the one Numba note kinedyn silences is the SSA pass's "not in scope" note on
the results of its own inlined overloads; other notes of that kind still reach the user."""
from __future__ import annotations

import warnings

from numba.core.errors import NumbaIRAssumptionWarning

from kinedyn._jit import quiet_inliner_notes


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
