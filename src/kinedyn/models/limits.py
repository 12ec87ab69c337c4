"""The largest member of a scalable model family that the library builds."""
from __future__ import annotations

from ..errors import ModelError

#: Most bodies of a family member. 100 000 links of cart-pendulum take ~1 GB and a minute to
#: build and lay out in natural coordinates; a name such as ``cart-pendulum-100000000000``
#: would exhaust the memory before saying anything.
MAX_BODIES = 100_000


def check_size(name: str, bodies: int) -> None:
    """A :class:`ModelError` when the family member ``name`` would have more than
    :data:`MAX_BODIES` bodies."""
    if bodies > MAX_BODIES:
        raise ModelError(f"{name} would have {bodies:,} bodies; the model families are built up "
                         f"to {MAX_BODIES:,}")
