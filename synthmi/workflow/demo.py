"""The main job end to end on the bundled Adult data, as a library function.

:func:`run_demo` synthesizes the quasi-identifiers of UCI Adult (the
:data:`~synthmi.data.workloads.ADULT_DEMO` workload: age, sex, race and
education, recoded as in the DA-MI result tables) with DA-MI and CART, evaluates
utility, the probit analysis of income and re-identification risk, and writes
the disclosure review report. ``synthmi demo`` and the figures' report
screenshot both call it.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..data.workloads import ADULT_DEMO, Workload

__all__ = ["run_demo", "demo_synthesizers"]


def demo_synthesizers(seed: int | None = None, workload: Workload = ADULT_DEMO) -> dict[str, Any]:
    """The demo's methods: label -> unfitted synthesizer (DA-MI with the workload's masks, and CART)."""
    from ..models.cart import CartSynthesizer
    from ..models.dami import DAMISynthesizer

    return {
        "dami": DAMISynthesizer(masks=dict(workload.masks), random_state=seed, progressbar=False),
        "cart": CartSynthesizer(),
    }


def run_demo(out: str | Path, m: int = 5, seed: int = 2026, progress: bool = False,
             workload: Workload = ADULT_DEMO, summary: Any = None) -> tuple[Path, Any]:
    """Synthesize, evaluate and write ``out/report.html`` (and the copies under ``out/dami``, ``out/cart``).

    Parameters
    ----------
    out : path
        Output directory (created). Existing copies of a method are replaced.
    m : int, default 5
        Synthetic copies per method (>= 2: the combining rules need two).
    seed : int
        Seeds the methods (method i draws with ``seed + i``).
    progress : bool
        Progress bars and a summary on stderr.
    summary : callable, optional
        Called with one line at the end of each step (each method's fit and draws, the
        evaluation, the report); the command line shows these with ``--quiet`` too.

    Returns
    -------
    (Path, ReportData)
        The report's path and the evaluated figures.
    """
    import sys

    from .._progress import progress_bar
    from .._validate import check_scalar
    from ..provenance import frame_sha256
    from .evaluate import evaluate_release
    from ..report.html import write_report

    m = check_scalar(m, "m", "run_demo", kind="int", lower=2)
    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    qi, keep = list(workload.quasi_identifiers), list(workload.keep)
    data = workload.load()
    releases = {}
    methods = demo_synthesizers(seed, workload)
    bar = progress_bar(methods.items(), desc="synthesizing", unit="method", enabled=progress)
    say = summary or (lambda msg: None)
    for i, (label, model) in enumerate(bar):
        bar.set_postfix_str(f"{label} (M = {m})")
        t_step = time.perf_counter()
        model.fit(data, quasi_identifiers=qi, keep=keep)
        syn = model.sample(m, random_state=seed + i)
        for old in (out / label).glob("copy_*.csv"):  # no stale copies from an earlier, larger m
            old.unlink()
        syn.to_dir(out / label)
        releases[label] = syn
        say(f"{label}: fitted, drew and wrote {m} copies to {out / label} in {time.perf_counter() - t_step:.1f} s")
    t_step = time.perf_counter()
    report = evaluate_release(
        data, releases, qi, workload.formula, family=workload.family, tolerance=dict(workload.tolerance),
        original_label="UCI Adult (bundled, recoded)",
        input_hashes={f"{workload.dataset}[" + ",".join(qi + keep) + "]": frame_sha256(data)},
        seeds={label: s.seed for label, s in releases.items()}, progress=progress,
        original_is_public=True,  # the bundled Adult is public data
        target="income",  # attribute disclosure of income given the quasi-identifiers
    )
    say(f"evaluated {len(releases)} releases (utility, analysis, risk) in {time.perf_counter() - t_step:.1f} s")
    report.provenance["wall_seconds"] = round(time.perf_counter() - t0, 1)
    path = write_report(report, out / "report.html")
    say(f"wrote {path}")
    if progress:
        print(report.summary.to_string(index=False, float_format=lambda x: f"{x:.3f}"), file=sys.stderr)
        print(f"done in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return path, report
