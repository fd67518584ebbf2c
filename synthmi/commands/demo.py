"""``synthmi demo``: the main job end to end on the bundled Adult data (:func:`synthmi.workflow.demo.run_demo`).

Synthesize the quasi-identifiers age, sex, race and education of UCI Adult
(recoded as in the source tables) with DA-MI and CART (M = 5 copies each),
evaluate utility, the probit analysis of income and re-identification risk,
and write the disclosure review report to ``OUT/report.html``.
"""
from __future__ import annotations

import argparse

from ._common import EXAMPLES_FMT, add_common_flags, add_overwrite_flag, check_output_dir, progress_enabled, step_line
from ..errors import InputError

EXAMPLES = """examples:
  synthmi demo                       # writes ./synthmi-demo/report.html
  synthmi demo --out /tmp/demo --quiet
  synthmi demo --m 20 --seed 7       # more copies, another seed

The copies are written too (OUT/dami/, OUT/cart/: copy_01.csv ... and
metadata.json), so 'synthmi report' can be re-run on them."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="the main job: synthesize Adult's quasi-identifiers (DA-MI, CART), evaluate, write the report",
        description=__doc__.split("\n\n")[1].replace("\n", " "),
        epilog=EXAMPLES,
        formatter_class=EXAMPLES_FMT,
    )
    p.add_argument("--out", default="synthmi-demo", help="output directory (default: synthmi-demo)")
    p.add_argument("--m", type=int, default=5, help="synthetic copies per method (default: 5)")
    p.add_argument("--seed", type=int, default=2026, help="random seed (default: 2026)")
    add_overwrite_flag(p)
    add_common_flags(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..workflow.demo import run_demo

    if args.m < 2:
        raise InputError(f"The '--m' option of synthmi demo must be >= 2 (combining rules need two copies). Got {args.m} instead.")
    out = check_output_dir(args.out, "--out", args.overwrite, owned=["report.html", "dami", "cart"])
    path, _ = run_demo(out, m=args.m, seed=args.seed, progress=progress_enabled(args),
                       summary=lambda msg: step_line(args, "demo", msg, summary=True))
    print(path.resolve())
    return 0
