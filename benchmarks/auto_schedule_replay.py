"""Replay n_iter='auto' stopping schedules on one fixed run: where would each growth rule have stopped?

A continued chain IS the fixed run of the same length (same burn-in, tuning and generator stream:
tests/models/test_copula_progress.py::test_auto_continues_the_chains_until_the_check_holds), so one
fixed run of N iterations (burn-in 500, as 'auto') holds the draws of every 'auto' schedule of its seed
up to N. This script runs it once on NHANES with the risk-budget settings (``nhanes_risk_budget.py``:
the NHANES table's masks, 2 chains in parallel), then replays the release check (R-hat <= 1.01, bulk
and tail ESS >= 400 over every monitored quantity: ``copula._chain_diagnostics`` on the prefix) under
the former copula rule (ESS projection x 1.1, at least 1.25) and the toolkit's shared rule
(``diagnostics.extension_factor``: margin 1.2 on the ESS shortfall and the R-hat excess ratio), and
records the worst R-hat on a grid of lengths (how much it scatters).

Results (``results/auto_schedule_replay.json``; shared machine, CPU-bound, wall not recorded):
seed 11 (N = 2,200): former rule stops at 1,310 iterations, shared rule at 1,384; worst R-hat
1.0145 / 1.0078 / 1.0077 / 1.0057 / 1.0060 / 1.0048 at 1,000 / 1,200 / ... / 2,000. Seed 1 (the
benchmark's; N = 2,900): the replay gives exactly the two real runs, the former rule stopping at 2,880
(the quiet-machine run's 6 checks) and the shared rule at 1,563 (``nhanes_risk_budget_auto_breakdown.json``);
its worst R-hat on the grid is 1.0146 / 1.0108 / 1.0073 / 1.0077 / 1.0133 / 1.0132 / 1.0112 / 1.0103 /
1.0111 / 1.0108 at 1,000 / 1,200 / ... / 2,800: under 1.01 around 1,400-1,600, then above it again
until ~2,880 (a slow excursion, marital_status). Where a run stops is dominated by when the worst
R-hat dips under 1.01, not by the rule; on two seeds neither rule is reliably better (-1,317 and +74
iterations for the shared one).

Run: ``python benchmarks/auto_schedule_replay.py --seeds 1,11 --n-iter 2900``.
"""
from __future__ import annotations

import argparse
import math
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench import write_json  # noqa: E402

BURN = 500


def capture(seed: int, n_iter: int) -> tuple:
    """The arguments of the fit's final ``_chain_diagnostics`` call (all chains' monitored draws) of a
    fixed run of ``n_iter`` iterations, burn-in 500."""
    import synthmi.models.copula as cp
    from nhanes_table import K0, MASKS, QI, TOL, Z
    from synthmi.data import load_nhanes
    from synthmi.models import RiskTargetedSynthesizer

    got = {}
    orig = cp._chain_diagnostics

    def grab(*a, **k):
        got["args"] = a
        return orig(*a, **k)

    cp._chain_diagnostics = grab  # the monitored draws are not kept as attributes: read them on the way
    try:
        df = load_nhanes(recode=True)[QI + Z]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            RiskTargetedSynthesizer(masks=MASKS, k0=K0, tolerance=TOL, r=4, n_iter=n_iter, burn=BURN, chains=2,
                                    n_jobs=2, random_state=seed, accept_diagnostics=True,
                                    max_seconds=None).fit(df, quasi_identifiers=QI, keep=Z)
    finally:
        cp._chain_diagnostics = orig
    return got["args"]


def replay(args: tuple, n_iter: int, grid_step: int = 200) -> dict:
    """Both rules' schedules on the captured draws, and the worst R-hat on a grid."""
    from synthmi import diagnostics as dg
    from synthmi.models.copula import _AUTO_MAX_GROWTH, AUTO_FIRST_SEGMENT, _chain_diagnostics

    corr, imp, margins, names, spec, acc, coefs, cspec, shares, sspec = args
    cache: dict[int, tuple] = {}

    def check(n: int) -> tuple:
        if n not in cache:
            k = n - BURN
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                d = _chain_diagnostics(corr[:, :k], imp[:, :k], margins, names, spec, acc, coefs[:, :k], cspec,
                                       shares[:, :k], sspec)
            cache[n] = (d["max_r_hat"], d["min_ess_bulk"], d["min_ess_tail"], d["worst"])
        return cache[n]

    def former(rh, eb, et):
        ess = min(eb, et)
        return max(1.25, 1.1 * dg.ESS_MIN / ess) if np.isfinite(ess) and ess > 0 else _AUTO_MAX_GROWTH

    def shared(rh, eb, et):
        return dg.extension_factor(rh, min(eb, et), dg.ESS_MIN, dg.RHAT_MAX, most=np.inf, unknown=_AUTO_MAX_GROWTH)

    out = {}
    for name, rule in (("former", former), ("shared", shared)):
        n, checks = AUTO_FIRST_SEGMENT, []
        while n <= n_iter:
            rh, eb, et, worst = check(n)
            checks.append({"n_iter": n, "max_r_hat": rh, "min_ess_bulk": eb, "min_ess_tail": et, "worst": worst})
            if rh <= dg.RHAT_MAX and eb >= dg.ESS_MIN and et >= dg.ESS_MIN:
                break
            kept = n - BURN
            n = BURN + min(math.ceil(kept * rule(rh, eb, et)), math.ceil(kept * _AUTO_MAX_GROWTH))
        out[name] = {"stops_at": n if n <= n_iter else None, "checks": checks}
    out["grid"] = [{"n_iter": g, "max_r_hat": check(g)[0]} for g in range(AUTO_FIRST_SEGMENT, n_iter + 1, grid_step)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="11")
    ap.add_argument("--n-iter", type=int, default=2200, help="iterations of the fixed run (the schedules' horizon)")
    ap.add_argument("--captured", nargs="*", default=[],
                    help="pickles of (seed, n_iter, args) saved by an earlier capture, replayed instead of refitting")
    a = ap.parse_args()
    runs = []
    for path in a.captured:
        with open(path, "rb") as fh:
            c = pickle.load(fh)
        runs.append({"seed": c["seed"], "n_iter": c["N"], **replay(c["args"], c["N"])})
    if not a.captured:
        for seed in (int(s) for s in a.seeds.split(",")):
            runs.append({"seed": seed, "n_iter": a.n_iter, **replay(capture(seed, a.n_iter), a.n_iter)})
    for r in runs:
        print(f"seed {r['seed']}: former rule stops at {r['former']['stops_at']}, shared rule at {r['shared']['stops_at']}; "
              f"worst R-hat on the grid {[(g['n_iter'], round(g['max_r_hat'], 4)) for g in r['grid']]}")
    write_json("auto_schedule_replay", {"file": "nhanes", "burn": BURN, "runs": runs,
                                        "note": "one fixed run per seed; schedules replayed on its prefixes"})


if __name__ == "__main__":
    main()
