"""mkdocs hooks: the pictures and the performance plot are made by the project at build time.

``on_files`` runs ``docs/make_pictures.py`` (one ``layoutalg draw`` per picture) and
``docs/perf_plot.py`` (the plots of ``benchmarks/results.json`` and of the shapes grid,
``benchmarks/grid_results.json``) into a temporary
folder and adds the files to the site as ``pictures/<name>.svg``; nothing is
written into ``docs/``. ``on_page_markdown`` fills the performance page's table
from the same JSON, and the swizzle page's counters from ``benchmarks/bank_results.json``
(``docs/bank_table.py``). A picture that cannot be made fails the build.
"""

from __future__ import annotations

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for p in (ROOT, HERE):
    if p not in sys.path:
        sys.path.insert(0, p)

import bank_table  # noqa: E402  (docs/bank_table.py)
import make_pictures  # noqa: E402  (docs/make_pictures.py)
import perf_plot  # noqa: E402  (docs/perf_plot.py)

_TMP: tempfile.TemporaryDirectory | None = None


def on_files(files, config):
    """Make the pictures and add them to the site's files."""
    from mkdocs.structure.files import File

    global _TMP
    _TMP = tempfile.TemporaryDirectory(prefix="layoutalg-docs-")
    pictures = os.path.join(_TMP.name, "pictures")
    try:
        made = make_pictures.make(pictures)
    except make_pictures.PictureError as e:        # the reason on one line, not a traceback
        from mkdocs.exceptions import PluginError

        raise PluginError(str(e)) from None
    made.append(perf_plot.write_plot(os.path.join(pictures, perf_plot.PLOT_NAME)))
    made.append(perf_plot.write_grid_plot(os.path.join(pictures, perf_plot.GRID_PLOT_NAME)))
    for path in made:
        rel = os.path.relpath(path, _TMP.name).replace(os.sep, "/")
        files.append(File(rel, _TMP.name, config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown, page, config, files):
    """Put the results table, made from the benchmark's JSON, where the page asks for it."""
    if perf_plot.TABLE_MARKER in markdown:
        markdown = markdown.replace(perf_plot.TABLE_MARKER, perf_plot.results_table())
    if bank_table.TABLE_MARKER in markdown:
        markdown = markdown.replace(bank_table.TABLE_MARKER, bank_table.table())
    return markdown


def on_post_build(config):
    global _TMP
    if _TMP is not None:
        _TMP.cleanup()
        _TMP = None
