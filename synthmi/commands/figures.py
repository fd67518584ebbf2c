"""``synthmi figures``: regenerate the exhibits of the source slides on bundled public data."""
from __future__ import annotations

import argparse

from ._common import EXAMPLES_FMT, add_common_flags, add_overwrite_flag, check_output_dir, progress_enabled, split_list

EXAMPLES = """examples:
  synthmi figures --out figures/              # full configuration (~12 min on 2 cores)
  synthmi figures --reduced --out /tmp/fig    # small and quick (about a minute)
  synthmi figures --only coefficients,tuning --out figures/

Writes PNG + CSV per exhibit, README.md (the index) and manifest.json (seeds,
package versions, data hashes, wall time). 'make figures' runs the full
configuration into benchmarks/results/figures/."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "figures",
        help="regenerate the paper exhibits (coefficient tables, tuning curves, DP plots) as PNG + CSV",
        description="Regenerate the exhibits of the source slides on the bundled public data.",
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--out", default="figures", help="output directory (default: figures)")
    p.add_argument("--reduced", action="store_true", help="the small configuration used by the tests")
    p.add_argument("--only", default=None, help="comma-separated exhibit names (coefficients, tuning, nhanes, dp_bayes, dpsyn, screenshot)")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..report.exhibits import FULL, REDUCED, make_figures

    check_output_dir(args.out, "--out", args.overwrite, owned=["README.md", "manifest.json", "*.png", "*.csv"])
    m = make_figures(args.out, REDUCED if args.reduced else FULL, only=split_list(args.only) or None,
                     progress=progress_enabled(args))
    print(f"{args.out}/README.md ({m['wall_seconds_total']:.0f} s, {m['total_bytes'] / 1e6:.2f} MB)")
    return 0
