"""A griffe extension for the API reference: docstring examples (``>>>`` lines and their
output) are shown as Python console code blocks instead of running text.

The project's docstrings follow NVlabs PyCuTe: plain text with doctest examples, no
section headers. Markdown would join an example's lines into one paragraph (and read
``[...]`` output as links); fencing them keeps them as written.
"""

from __future__ import annotations

from griffe import Extension


def fence_doctests(text: str) -> str:
    """``text`` with each run of ``>>>``/``...`` lines and their output put in a ```` ```pycon ```` fence.

    >>> fence_doctests("Sum.\\n\\n>>> 1 + 1\\n2").splitlines()
    ['Sum.', '', '```pycon', '>>> 1 + 1', '2', '```']
    """
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            i += 1
            continue
        indent = line[: len(line) - len(stripped)]
        block = []
        while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
            block.append(lines[i][len(indent):])
            i += 1
        if out and out[-1].strip():
            out.append("")
        out.append(indent + "```pycon")
        out.extend(indent + b for b in block)
        out.append(indent + "```")
    return "\n".join(out)


class FenceDoctests(Extension):
    """Fence the doctest examples of every docstring griffe loads."""

    def on_object(self, *, obj, **kwargs) -> None:  # griffe's hook for every loaded object
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
