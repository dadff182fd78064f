"""``python -m layoutalg_cli``: the same as the ``layoutalg`` command."""

import sys

from .main import main

sys.exit(main())
