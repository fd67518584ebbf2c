"""Regenerate every applicable exhibit of the source course slides (``make figures``).

Writes PNG + CSV + README.md (the index) + manifest.json (seeds, versions, data
hashes, wall time) under benchmarks/results/figures/ (``--out`` to change).
``--reduced`` runs the small configuration the reproducibility test uses.

    python benchmarks/figures.py                 # full: ~12 min on 2 cores
    python benchmarks/figures.py --reduced --out /tmp/fig
    python benchmarks/figures.py --only tuning
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from exhibits import FULL, REDUCED, make_figures  # noqa: E402

OUT = Path(__file__).resolve().parent / "results" / "figures"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(OUT))
    p.add_argument("--reduced", action="store_true", help="small configuration (tests, quick looks)")
    p.add_argument("--only", default=None, help="comma-separated exhibit names")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    m = make_figures(args.out, REDUCED if args.reduced else FULL, only=only, progress=not args.quiet)
    for name, ex in m["exhibits"].items():
        print(f"{name:14s} {ex.get('status', ''):10s} {ex.get('wall_seconds', 0):7.1f} s")
    print(f"this run {m['wall_seconds_total']:.0f} s; all exhibits {m['wall_seconds_exhibits']:.0f} s; "
          f"{m['total_bytes'] / 1e6:.2f} MB -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
