"""Exceptions raised by layoutalg.

Every invalid call raises a :class:`LayoutError` (a ``ValueError``) or
:class:`LayoutTypeError` (also a ``TypeError``) whose message names the
operation and the offending values.
"""


class LayoutError(ValueError):
    """An operation of the layout algebra was given values it is not defined for."""


class LayoutTypeError(LayoutError, TypeError):
    """An argument has the wrong type (e.g. a float or bool where an int is needed)."""


class LayoutIndexError(LayoutError, IndexError):
    """A coordinate, index or mode number is out of range."""


def fail(op, message, *values, cls=LayoutError):
    """Raise ``cls`` with ``"op: message"`` and the ``repr``/``str`` of values appended."""
    if values:
        message = message + " (" + ", ".join(_show(v) for v in values) + ")"
    raise cls(f"{op}: {message}")


def _show(v):
    from .layout import Layout  # local: avoid an import cycle

    if isinstance(v, Layout):
        return str(v)
    return repr(v)
