"""Copy N bytes from GPU a to GPU b once (used by the `watch` command's acceptance test).

    python bench/copy_once.py 0 1 1GiB [--method ce]

Prints one line: bytes, seconds, GB/s. Exits 1 with one line on bad input.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

from linkscope.errors import UserError
from linkscope.units import parse_size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=int)
    ap.add_argument("dst", type=int)
    ap.add_argument("size")
    ap.add_argument("--method", default="ce")
    args = ap.parse_args(argv)
    try:
        size = parse_size(args.size)
        from linkscope.engines.cuda import CudaEngine

        with CudaEngine() as eng:
            method = args.method if args.src != args.dst or args.method != "ce" else "local"
            seconds = eng.copy_once(args.src, args.dst, size, method=method)
    except UserError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 1
    print(f"copied {size} bytes GPU {args.src} -> GPU {args.dst} ({method}) in {seconds:.6f} s: {size / seconds / 1e9:.1f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
