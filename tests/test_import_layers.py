"""Imports flow one way: core <- atom tables <- partitioning <- drawing, host executor,
emulation <- codegen <- command line.

Every ``import`` statement of the project's packages (module level and inside
functions alike) is read with ``ast`` and checked against the layer table below:
a module may import only modules of its own layer or of lower layers.  ``from
layoutalg import X`` is resolved through the package's ``__init__`` to the module
that defines ``X``, so a table that imports ``Layout`` from the package depends on
the core, not on the whole package.

Two exceptions import the drawing package when they are used, never when the package is
imported: the Jupyter display (a ``_repr_*`` method of a core object), and the
``layoutalg`` namespace's ``__getattr__``, which hands out CuTe's printing functions
(``print_layout``, ``print_tensor``, ``print_latex``).
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("layoutalg", "mma_atoms", "codegen", "layoutalg_cli")

CORE, TABLES, PARTITIONING, CONSUMERS, CODEGEN, CLI = range(6)
LAYER_NAMES = ("core", "atom tables", "partitioning", "drawing/host executor/emulation",
               "codegen", "command line")

# module (or package prefix) -> layer; the longest matching prefix wins
LAYERS = {
    "layoutalg.errors": CORE, "layoutalg.inttuple": CORE, "layoutalg.basis": CORE,
    "layoutalg.layout": CORE, "layoutalg.swizzle": CORE, "layoutalg.algebra": CORE,
    "layoutalg.element_types": CORE, "layoutalg.parse": CORE, "layoutalg.tensor": CORE,
    "layoutalg.numpy_eval": CORE,
    "mma_atoms": TABLES,
    "layoutalg": PARTITIONING,            # the package's __init__: core and partitioning names
    "layoutalg.atom": PARTITIONING, "layoutalg.tiled_mma": PARTITIONING,
    "layoutalg.tiled_copy": PARTITIONING, "layoutalg.expressions": PARTITIONING,
    "layoutalg.cost": PARTITIONING,
    "layoutalg.draw": CONSUMERS, "layoutalg.host_gemm": CONSUMERS, "mma_atoms.emulate": CONSUMERS,
    "codegen": CODEGEN,
    "layoutalg_cli": CLI,
}


def layer_of(module):
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        key = ".".join(parts[:n])
        if key in LAYERS:
            return LAYERS[key]
    return None                          # not the project's (stdlib, numpy, numba, ...)


def _modules():
    """(module name, path, is_package) for every source file of the project's packages."""
    out = []
    for pkg in PACKAGES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].split(os.sep)
                is_pkg = rel[-1] == "__init__"
                if is_pkg:
                    rel = rel[:-1]
                out.append((".".join(rel), os.path.join(dirpath, f), is_pkg))
    return out


MODULES = _modules()
PATHS = {m: (p, is_pkg) for m, p, is_pkg in MODULES}


def _resolve(module, is_pkg, node):
    """The absolute module a ``from ... import`` statement names."""
    if node.level == 0:
        return node.module
    base = module.split(".") if is_pkg else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _reexports(package):
    """name -> defining module for the names a package's ``__init__`` imports."""
    path, is_pkg = PATHS[package]
    tree = ast.parse(open(path).read())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            src = _resolve(package, is_pkg, node)
            for a in node.names:
                names[a.asname or a.name] = src
    return names


REEXPORTS = {m: _reexports(m) for m, _, is_pkg in MODULES if is_pkg}


def _targets(module, is_pkg, node):
    """The modules an import statement depends on."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    src = _resolve(module, is_pkg, node)
    out = []
    for a in node.names:
        sub = f"{src}.{a.name}"
        if sub in PATHS:                                    # a submodule
            out.append(sub)
        elif src in REEXPORTS and a.name in REEXPORTS[src]:  # a name the package re-exports
            out.append(REEXPORTS[src][a.name])
        else:
            out.append(src)
    return out


def _imports(module, path, is_pkg):
    """(line, target module, enclosing function names) for every import in the file."""
    tree = ast.parse(open(path).read())
    out = []

    def walk(node, funcs):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                walk(child, funcs + (child.name,))
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                for t in _targets(module, is_pkg, child):
                    out.append((child.lineno, t, funcs))
            else:
                walk(child, funcs)

    walk(tree, ())
    return out


def _allowed(src_layer, tgt, funcs):
    if funcs and funcs[-1].startswith("_repr_") and tgt.startswith("layoutalg.draw"):
        return True                                         # notebook display, imported when shown
    if src_layer == PARTITIONING and funcs == ("__getattr__",) and tgt.startswith("layoutalg.draw"):
        return True                                         # CuTe's print functions, imported when used
    return layer_of(tgt) <= src_layer


def test_layer_table_covers_every_module():
    missing = [m for m, _, _ in MODULES if layer_of(m) is None]
    assert not missing, f"modules without a layer: {missing}"


@pytest.mark.parametrize("module", sorted(m for m, _, _ in MODULES))
def test_imports_flow_one_way(module):
    path, is_pkg = PATHS[module]
    src = layer_of(module)
    bad = []
    for line, tgt, funcs in _imports(module, path, is_pkg):
        if layer_of(tgt) is None or _allowed(src, tgt, funcs):
            continue
        where = f" (inside {'.'.join(funcs)})" if funcs else ""
        bad.append(f"{os.path.relpath(path, ROOT)}:{line}: {module} [{LAYER_NAMES[src]}] imports "
                   f"{tgt} [{LAYER_NAMES[layer_of(tgt)]}]{where}")
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_the_check_sees_lazy_imports(tmp_path):
    """The checker itself: an import inside a function of a core module is found."""
    f = tmp_path / "m.py"
    f.write_text("def g():\n    import codegen\n    from layoutalg import make_tiled_mma\n")
    found = [(t, fn) for _, t, fn in _imports("layoutalg.layout", str(f), False)]
    assert ("codegen", ("g",)) in found
    assert ("layoutalg.tiled_mma", ("g",)) in found
    assert not _allowed(CORE, "codegen", ("g",))
    assert not _allowed(CORE, "layoutalg.tiled_mma", ("g",))
    assert _allowed(CORE, "layoutalg.draw", ("_repr_svg_",))
    assert not _allowed(PARTITIONING, "layoutalg.draw", ("make_tiled_mma",))
