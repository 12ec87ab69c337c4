"""Formulations: how coordinates are chosen and equations written (see :mod:`.protocol`)."""
