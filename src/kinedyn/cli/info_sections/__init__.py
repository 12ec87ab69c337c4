"""Extra sections of ``kinedyn info``, one module each (see :mod:`kinedyn.cli.info`).

A module here defines ``add_arguments(parser)`` (its flags) and ``render(ctx) -> str | None``
(its text, ``None`` when not requested). Modules are discovered; nothing else needs editing.
"""
