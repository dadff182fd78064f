"""The ``layoutalg`` command line: the only layer above :mod:`codegen`.

Sub-commands: ``show``, ``eval``, ``atoms``, ``draw`` and ``demo`` (see ``layoutalg --help``).
"""

from .main import build_parser, main

__all__ = ["main", "build_parser"]
