"""Algebra expressions as text, evaluated over the package's public functions.

The parser (:mod:`layoutalg.parse`) is part of the core and knows only literals;
this module gives it the environment of every public callable of ``layoutalg``
(the algebra, tensors, and the partitioning functions such as ``make_tiled_mma``).

>>> from layoutalg.parse import format_value
>>> format_value(evaluate("complement(4:2, 24)"))
'(2,3):(1,8)'
"""

from .parse import evaluate_tree, parse_expr

__all__ = ["evaluate", "public_env", "function_names"]


def public_env():
    """name -> function for every callable in ``layoutalg.__all__``, plus ``None``.

    Post: ``public_env()["composition"] is layoutalg.composition``.
    """
    import layoutalg

    env = {name: getattr(layoutalg, name) for name in layoutalg.__all__ if callable(getattr(layoutalg, name))}
    env["None"] = None
    return env


def evaluate(text):
    """Evaluate an algebra expression such as ``"complement(4:2, 24)"``.

    Pre: ``text`` is a call expression over the public functions, with layouts in CuTe's
    printed form (``(4,2):(2,1)``), int-tuples, ints and ``_``/``None`` as arguments.
    Post: the value of the call; a syntax error raises ``LayoutError`` naming ``parse``.

    >>> str(evaluate("composition((4,3):(3,1), 6:2)"))
    '(2,3):(6,1)'
    """
    return evaluate_tree(parse_expr(text), public_env())


def function_names():
    """The names ``evaluate`` knows (the callables of the ``layoutalg`` namespace), sorted.

    >>> "composition" in function_names() and "None" not in function_names()
    True
    """
    return sorted(k for k, v in public_env().items() if v is not None)
