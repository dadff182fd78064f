"""The code blocks of the documentation (``docs/*.md`` and ``README.md``), as typed records.

The rules (also on the docs page ``docs_tests.md``):

* A fenced block's language says what it is: ``python`` is run (as a doctest when it
  holds ``>>>`` prompts, else executed), ``console`` holds ``$ layoutalg ...`` commands
  (run; the lines up to the next ``$`` are their exact output, when given), a block with no
  language (or ``text``) is output and is not run.
* An HTML comment on the line before the fence changes that:
  ``<!-- docs-test: skip (REASON) -->`` (not run, the reason is required),
  ``<!-- docs-test: cudasim -->`` (a GPU example run in a new process under
  ``NUMBA_ENABLE_CUDASIM=1``), ``<!-- docs-test: gpu -->`` (run in a new process, only
  where a CUDA GPU is present), ``<!-- docs-test: excerpt EXPR -->`` (each line of the
  block is a line of the text that the Python expression ``EXPR`` evaluates to).
* Python blocks of one page share one namespace, in page order, in a fresh folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")

_FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)\s*$")
_MARK = re.compile(r"^<!--\s*docs-test:\s*(\w+)\s*(.*?)\s*-->\s*$")
RUN_LANGS = ("python", "console")
OUTPUT_LANGS = ("", "text")
MARKS = ("skip", "cudasim", "gpu", "excerpt")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its page, first line (1-based), language, text and marker."""

    page: str
    line: int
    lang: str
    text: str
    mark: str = ""      # "", or one of MARKS
    arg: str = ""       # the marker's argument (skip's reason, excerpt's expression)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages() -> list[str]:
    """The documentation pages: README.md and every docs/*.md, relative to the repository root."""
    out = ["README.md"]
    for dirpath, _, files in os.walk(DOCS):
        for f in sorted(files):
            if f.endswith(".md"):
                out.append(os.path.relpath(os.path.join(dirpath, f), ROOT).replace(os.sep, "/"))
    return sorted(out)


def blocks(page: str) -> list[Block]:
    """The fenced blocks of ``page``; raises ``ValueError`` for an unclosed fence or a bad marker."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        lines = f.read().splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and lines[j].rstrip() != "```":
            j += 1
        if j == len(lines):
            raise ValueError(f"{page}:{start + 1}: the code block is not closed")
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mark = arg = ""
        if k >= 0 and (mm := _MARK.match(lines[k].strip())):
            mark, arg = mm.group(1), mm.group(2)
            if mark not in MARKS:
                raise ValueError(f"{page}:{k + 1}: unknown docs-test marker {mark!r}; markers are {MARKS}")
            if mark in ("skip", "excerpt") and not arg:
                raise ValueError(f"{page}:{k + 1}: docs-test: {mark} needs "
                                 + ("a reason" if mark == "skip" else "an expression"))
        out.append(Block(page, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n", mark, arg))
        i = j + 1
    return out


@dataclass(frozen=True)
class Command:
    """One ``$ layoutalg ...`` line of a console block and the output shown after it (may be empty)."""

    argv: tuple[str, ...]
    expected: tuple[str, ...]


def commands(block: Block) -> list[Command]:
    """The commands of a console block; raises ``ValueError`` for text before the first ``$``."""
    import shlex

    out: list[Command] = []
    argv: list[str] | None = None
    expected: list[str] = []
    for n, line in enumerate(block.text.splitlines()):
        if line.startswith("$ "):
            if argv is not None:
                out.append(Command(tuple(argv), tuple(expected)))
            argv, expected = shlex.split(line[2:]), []
        elif argv is None:
            if line.strip():
                raise ValueError(f"{block.where}: console text before the first '$ ' command: {line!r}")
        else:
            expected.append(line.rstrip())
    if argv is not None:
        out.append(Command(tuple(argv), tuple(expected)))
    return out
