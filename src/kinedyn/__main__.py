"""``python -m kinedyn`` runs the ``kinedyn`` command."""
import sys

from .cli import main

sys.exit(main())
