"""``layoutalg analyze``: what a layout costs -- bank conflicts, coalescing, TMA and wgmma legality::

    layoutalg analyze copy SM75_U32x4_LDSM_N --mma SM80_16x8x16_F32F16F16F32_TN --operand A --smem "(16,64):(64,1)"
    layoutalg analyze copy UniversalCopy_128 --dtype f32 --threads "(32,1)" --values "(1,4)" --smem "(32,32):(32,1)" --side S
    layoutalg analyze copy SM80_CP_ASYNC_CACHEGLOBAL_128 --dtype f16 --threads "(32,8):(8,1)" --values "(1,8)" --gmem "(128,64):(4096,1)"
    layoutalg analyze tma "Sw<3,3,3> o 0 o (64,64):(64,1)" --dtype f16 --inner 1
    layoutalg analyze wgmma "Sw<3,3,3> o 0 o (64,64):(64,1)" --dtype f16 --major K
    layoutalg analyze plan --dtype f16 --b-major MN

``copy`` takes the copy options of ``layoutalg draw copy`` and a shared layout (``--smem``:
bank conflicts) or a global one (``--gmem``: sectors and requests); ``tma`` and ``wgmma``
say whether the hardware can take a shared layout, and if not which rule fails (exit status
1); ``plan`` prints the analysis of each copy of the generated mma.sync GEMM's plan.
"""

from __future__ import annotations

import argparse

from .draw import DrawError, _ints, _layout_arg, shared_side, tiled_copy_from_args

_EPILOG = __doc__.split("::", 1)[1].split("``copy``", 1)[0]


def add_parser(sub):
    a = sub.add_parser(
        "analyze",
        help="what a layout costs: bank conflicts, coalescing, TMA and wgmma legality",
        description="Bank conflicts and coalescing of a tiled copy over a layout; whether a shared layout can be "
                    "a TMA box or a wgmma operand; the analysis of the generated GEMM's copies.",
        epilog="examples:" + _EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_argument("what", choices=("copy", "tma", "wgmma", "plan"), help="what to analyze")
    a.add_argument("name", nargs="?", metavar="ATOM|LAYOUT",
                   help="copy: the copy atom's name; tma, wgmma: the shared layout")
    a.add_argument("--dtype", help="element type (copy: of the copy; tma, wgmma: of the layout; plan: default f16)")
    a.add_argument("--threads", metavar="LAYOUT", help='copy: thread layout, e.g. "(32,8):(8,1)"')
    a.add_argument("--values", metavar="LAYOUT", help='copy: value layout, e.g. "(1,8)"')
    a.add_argument("--mma", metavar="ATOM", help="copy: make_tiled_copy_A/B/C of this MMA (with --operand)")
    a.add_argument("--operand", choices=("A", "B", "C"), help="copy: the MMA operand")
    a.add_argument("--atom-layout", metavar="M,N,K", help="copy --mma: atoms of the tiled MMA along M, N, K")
    a.add_argument("--permutation", metavar="M,N,K", help="copy --mma: tile sizes of the tiled MMA")
    a.add_argument("--smem", metavar="LAYOUT", help="copy: the shared layout (bank conflicts)")
    a.add_argument("--gmem", metavar="LAYOUT", help="copy: the global layout (sectors); tma: the global tensor's layout")
    a.add_argument("--side", choices=("S", "D"), help="copy: the layout is the copy's source (S) or destination (D)")
    a.add_argument("--base", type=int, default=0, metavar="BYTES", help="copy: byte address of offset 0 (default 0)")
    a.add_argument("--limit", type=int, default=8, metavar="N", help="copy --smem: bank collisions listed (default 8)")
    a.add_argument("--inner", type=int, metavar="MODE", help="tma: the mode contiguous in global memory")
    a.add_argument("--box", metavar="B0,B1,...", help="tma: the box's extent per mode (default: the layout's)")
    a.add_argument("--smem-base", type=int, default=0, metavar="BYTES", help="tma, wgmma: shared byte address of offset 0")
    a.add_argument("--gmem-base", type=int, default=0, metavar="BYTES", help="tma: global byte address of offset 0")
    a.add_argument("--major", choices=("K", "MN"), help="wgmma: the operand's major mode")
    a.add_argument("--block", metavar="MN,K", help="wgmma: the (MN, K) one instruction reads (default: mode 0, 32 bytes of K)")
    a.add_argument("--a-major", choices=("K", "MN"), help="plan: A's major mode (default K)")
    a.add_argument("--b-major", choices=("K", "MN"), help="plan: B's major mode (default MN)")
    a.set_defaults(fn=run)
    return a


_APPLIES = {
    "copy": ("threads", "values", "mma", "operand", "atom_layout", "permutation", "smem", "gmem", "side", "base",
             "limit", "dtype"),
    "tma": ("dtype", "inner", "box", "smem_base", "gmem_base", "gmem"),
    "wgmma": ("dtype", "major", "block", "smem_base"),
    "plan": ("dtype", "a_major", "b_major"),
}
_DEFAULTS = {"base": 0, "limit": 8, "smem_base": 0, "gmem_base": 0}


def _check(args):
    allowed = _APPLIES[args.what]
    for opts in _APPLIES.values():
        for opt in opts:
            v = getattr(args, opt)
            if opt not in allowed and v is not None and v != _DEFAULTS.get(opt):
                raise DrawError(f"--{opt.replace('_', '-')} does not apply to analyze {args.what}")
    if args.what == "plan" and args.name is not None:
        raise DrawError(f"analyze plan: unexpected argument {args.name!r}")
    if args.what != "plan" and not args.name:
        raise DrawError(f"analyze {args.what}: give the {'copy atom' if args.what == 'copy' else 'shared layout'}")


def _copy(args, out):
    from layoutalg.cost import analyze_global, analyze_shared

    if args.smem is None and args.gmem is None:
        raise DrawError("analyze copy: give the layout it copies, --smem LAYOUT (banks) or --gmem LAYOUT (sectors)")
    for opt in ("width", "highlight", "thread", "shape"):
        setattr(args, opt, None)
    cp = tiled_copy_from_args(args, "analyze copy")
    if cp is None:
        raise DrawError("analyze copy: give the tiled copy: --threads (and --values), or --mma with --operand")
    both = args.smem is not None and args.gmem is not None
    if both and cp.atom.op.kind != "cp_async":
        raise DrawError(f"analyze copy: give --smem LAYOUT or --gmem LAYOUT; both only for a cp.async (its shared "
                        f"writes go by the lines of its global source), not {cp.atom.name}")
    if args.smem is not None:
        gmem = _layout_arg("--gmem", args.gmem) if both else None
        a = analyze_shared(cp, _layout_arg("--smem", args.smem), shared_side(cp, args.side), base=args.base, gmem=gmem)
        print(a.report(limit=args.limit), file=out)
    if both:
        print(analyze_global(cp, gmem, "S").report(), file=out)
    elif args.smem is None:
        side = args.side or ("S" if cp.atom.op.kind == "cp_async" else None)
        if side is None:
            raise DrawError(f"{cp.atom.name} loads and stores: give --side S (the global layout is its source) or --side D")
        g = analyze_global(cp, _layout_arg("--gmem", args.gmem), side, base=args.base)
        print(g.report(), file=out)
    return 0


def _legality(args, out):
    from layoutalg.cost import check_tma, check_wgmma

    if not args.dtype:
        raise DrawError(f"analyze {args.what}: give the element type with --dtype (e.g. --dtype f16)")
    lay = _layout_arg(f"analyze {args.what}", args.name)
    if args.what == "tma":
        box = _box(args.box) if args.box else None
        gmem = _layout_arg("--gmem", args.gmem) if args.gmem else None
        r = check_tma(lay, args.dtype, gmem, inner=args.inner, box=box, smem_base=args.smem_base,
                      gmem_base=args.gmem_base)
    else:
        if not args.major:
            raise DrawError("analyze wgmma: give the operand's major mode with --major K or --major MN")
        block = _ints("--block", args.block) if args.block else None
        if block is not None and len(block) != 2:
            raise DrawError(f"--block: expected MN,K, got {args.block!r}")
        r = check_wgmma(lay, args.dtype, args.major, block=block, smem_base=args.smem_base)
    print(str(r), file=out)
    if r.legal and r.layout_type is not None:
        d = r.desc
        print(f"descriptor: layout type {d.layout_type}, LBO {d.lbo} (x16 bytes), SBO {d.sbo} (x16 bytes)", file=out)
    return 0 if r.legal else 1


def _box(text):
    parts = [p for p in text.replace("(", "").replace(")", "").split(",") if p.strip()]
    try:
        return tuple(int(p) for p in parts)
    except ValueError:
        raise DrawError(f"--box: expected comma-separated ints, got {text!r}") from None


def _plan(args, out):
    try:
        from codegen import GemmConfig, make_plan
    except ImportError as e:
        raise DrawError(f"analyze plan needs the codegen package and its dependencies: {e}") from None
    from codegen.config import FP8

    dtype = args.dtype or "f16"
    if dtype in FP8:
        raise DrawError(f"analyze plan: {dtype} runs on the Hopper kernel only (TMA and wgmma: analyze tma, wgmma)")
    plan = make_plan(GemmConfig.default(dtype), args.a_major or "K", args.b_major or "MN")
    print(plan.cost.report(), file=out)
    return 0


def run(args, out):
    import sys

    from layoutalg.errors import LayoutError

    try:
        _check(args)
        if args.what == "copy":
            return _copy(args, out)
        if args.what in ("tma", "wgmma"):
            return _legality(args, out)
        return _plan(args, out)
    except (DrawError, LayoutError, ValueError, TypeError, LookupError) as e:
        print(f"layoutalg analyze: {e}", file=sys.stderr)
        return 2
