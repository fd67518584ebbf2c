"""Mixing of the copula's probit (nominal and binary) blocks, before and after (issue 28, item 1).

The fit of ``benchmarks/copula_files.py`` (``RiskTargetedSynthesizer`` defaults: 1,000 iterations,
half burn-in, 2 chains run in turn, seed 28) on adult, fair and anes96, with

* ``before``: main's sampler (``CopulaGibbs.collapse_missing_levels = collapse_ranked = False``): a
  probit block's missing levels drawn given the later blocks' latents, the ranked latents only
  given the probit latents;
* ``after`` (the default sampler): the missing levels drawn with the later blocks' latents
  integrated out (``CopulaGibbs._collapsed_level_move``);
* ``after+ranked`` (recorded figures only): that, and every ranked column moved again per record by
  independence MH with the probit latents integrated out. That move (commit 88cf7f0) did not repay its
  cost and was not kept; ``CopulaGibbs.collapse_ranked`` is now a different move (of a ranked column's
  associations; ``benchmarks/copula_files.py --sampler collapse_ranked=1``), so the variant no longer runs.

Per file and variant: CPU and wall seconds of the fit, the release check's figures (max R-hat, min
bulk and tail ESS over every monitored quantity), and over the *probit-block* quantities (every
block coefficient the check monitors and every correlation involving a probit latent) the slowest
one: its R-hat, bulk and tail ESS and min(bulk, tail) ESS per CPU second. Also, recorded at every
iteration outside the timed CPU: each block's implied level shares (the mean over records of
Pr(y_ib = l | eta_ib) at the current state), marginal and by the levels of each earlier block, with the same figures for the slowest of
them (the quantities a released column's margins and two-way tables depend on).

Results (``results/copula_nominal_mixing.json``; 1,000 iterations, 2 chains, seed 28, CPU seconds at
load 8-14; the slowest probit-block quantity's min(bulk, tail) ESS per CPU second):

=======  ================================  ================================  =================
file     before                            after (default)                   after+ranked
=======  ================================  ================================  =================
adult    0.40 (bulk 44, R-hat 1.039)       1.78 (bulk 225, tail 266, 1.012)  not run
anes96   3.86 (bulk 114, R-hat 1.028)      same draws (3.35: CPU noise)      1.97 (bulk 162)
fair     0.57 (bulk 43, R-hat 1.047)       same draws                        0.28 (bulk 51)
=======  ================================  ================================  =================

anes96 and fair have no missing level in a probit block, so the default change does not touch them;
their slowest quantities are limited by the ranked latents (fair's occupation moves at bulk ESS
0.23-0.8 a move with the ranked latents held, 0.04 an iteration in the chain), which the opt-in
ranked move addressed at a cost it did not repay. Fair's rows come from
``copula_nominal_mixing_quantities.py`` (same fit, no share recording).

Run: ``python benchmarks/copula_nominal_mixing.py [--files adult,fair,anes96] [--variants before,after]``;
writes ``results/copula_nominal_mixing.json`` (runs of the same file and variant replaced).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench import RESULTS, environment  # noqa: E402
import copula_files as cf  # noqa: E402


#: (collapse_missing_levels, collapse_ranked) of CopulaGibbs per variant
VARIANTS = {"before": (False, False), "after": (True, False)}


def _shares(sampler, st) -> np.ndarray:
    """Implied level shares of every block, marginal and by each earlier block's completed levels."""
    F = sampler.design(st)
    out = []
    levels = [sampler.block_level(st, b) for b in range(len(sampler.blocks))]
    for b in range(len(sampler.blocks)):
        p = np.exp(sampler.level_log_probabilities(b, F[:, :sampler.n_design[b]] @ st.coef[b]))
        out.append(p.mean(axis=0))
        for bb in range(b):
            for k in range(sampler.block_margins[bb].n_levels):
                rows = levels[bb] == k
                out.append(p[rows].mean(axis=0) if rows.any() else np.full(p.shape[1], np.nan))
    return np.concatenate(out)


def _share_names(sampler) -> list[str]:
    names = []
    for b, mg in enumerate(sampler.block_margins):
        labs = [str(mg.categories[s]) for s in mg.support]
        names += [f"share {mg.name}={lab}" for lab in labs]
        for bb in range(b):
            o = sampler.block_margins[bb]
            for k in range(o.n_levels):
                names += [f"share {mg.name}={lab} | {o.name}={o.categories[o.support[k]]}" for lab in labs]
    return names


def run(name: str, variant: str, n_iter: int) -> dict:
    from synthmi import diagnostics as dg
    from synthmi.models import copula as cm
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df, qi, kw = cf.FILES[name]()
    keep = [c for c in df.columns if c not in qi]
    cm.CopulaGibbs.collapse_missing_levels, cm.CopulaGibbs.collapse_ranked = VARIANTS[variant]
    rec: list[list[np.ndarray]] = []
    spent = [0.0]
    orig_step, orig_start = cm.CopulaGibbs.step, cm.CopulaGibbs.start_adaptation

    def start(self, burn):
        rec.append([])
        return orig_start(self, burn)

    def step(self, st, rng):
        orig_step(self, st, rng)
        c = time.process_time()
        rec[-1].append(_shares(self, st))
        spent[0] += time.process_time() - c

    cm.CopulaGibbs.step, cm.CopulaGibbs.start_adaptation = step, start
    try:
        synth = RiskTargetedSynthesizer(n_iter=n_iter, accept_diagnostics=True, max_seconds=None,
                                        random_state=cf.SEED)
        t0, c0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            synth.fit(df, quasi_identifiers=qi, keep=keep, **kw)
        wall, cpu = time.perf_counter() - t0 - spent[0], time.process_time() - c0 - spent[0]
    finally:
        cm.CopulaGibbs.step, cm.CopulaGibbs.start_adaptation = orig_step, orig_start
        cm.CopulaGibbs.collapse_missing_levels, cm.CopulaGibbs.collapse_ranked = VARIANTS["after"]  # the defaults
    cop = synth.copula_
    s = cop.sampler_
    d = cop.diagnostics_
    ch, nd, q = d["n_chains"], d["n_draws"], cop.q_
    iu = np.triu_indices(q, 1)
    probit = set(s.nominal_cols.tolist())
    keep_pairs = [k for k, (i, j) in enumerate(zip(*iu)) if i in probit or j in probit]
    corr = cop.correlation_draws_[:, iu[0], iu[1]].reshape(ch, nd, -1)[..., keep_pairs]
    names = [f"corr {cop.latent_names_[iu[0][k]]} ~ {cop.latent_names_[iu[1][k]]}" for k in keep_pairs]
    x = np.concatenate([corr, cop.coefficient_draws_.reshape(ch, nd, -1)], axis=2)
    names += list(cop.coefficient_labels_)
    burn = n_iter // 2
    sh = np.stack([np.array(r)[burn:] for r in rec])
    sh_names = _share_names(s)
    ok = np.all(np.isfinite(sh), axis=(0, 1))
    sh, sh_names = sh[..., ok], [n for n, o in zip(sh_names, ok) if o]

    def figures(draws, labels):
        r, eb, et = dg.rhat(draws), dg.ess_bulk(draws), dg.ess_tail(draws)
        order = np.argsort(np.minimum(eb, et))
        k = int(order[0])
        return {"slowest": labels[k], "r_hat": float(r[k]), "ess_bulk": float(eb[k]), "ess_tail": float(et[k]),
                "ess_per_cpu_second": float(min(eb[k], et[k]) / cpu), "max_r_hat": float(np.max(r)),
                "ten_slowest": [{"quantity": labels[j], "r_hat": float(r[j]), "ess_bulk": float(eb[j]),
                                 "ess_tail": float(et[j])} for j in order[:10]]}

    return {"file": name, "variant": variant, "rows": len(df), "n_iter": n_iter, "chains": ch, "seed": cf.SEED,
            "wall_seconds": round(wall, 1), "cpu_seconds": round(cpu, 1),
            "release_check": {"max_r_hat": d["max_r_hat"], "min_ess_bulk": d["min_ess_bulk"],
                              "min_ess_tail": d["min_ess_tail"], "worst": d["worst"],
                              "collapsed_acceptance": d.get("collapsed_acceptance")},
            "moves": list(s.nominal_move),
            "probit_quantities": figures(x, names),
            "implied_level_shares": figures(sh, sh_names),
            "n_implied_level_shares": len(sh_names)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="adult,fair,anes96")
    ap.add_argument("--variants", default="before,after")
    ap.add_argument("--n-iter", type=int, default=1000)
    ap.add_argument("--out", default="copula_nominal_mixing", help="results/<out>.json")
    a = ap.parse_args(argv)
    js = RESULTS / f"{a.out}.json"
    for name in a.files.split(","):
        for variant in a.variants.split(","):
            row = run(name, variant, a.n_iter)
            runs = json.loads(js.read_text())["runs"] if js.exists() else []
            p, sh = row["probit_quantities"], row["implied_level_shares"]
            print(f"{name} {variant}: CPU {row['cpu_seconds']} s; release check R-hat "
                  f"{row['release_check']['max_r_hat']:.3f}, bulk {row['release_check']['min_ess_bulk']:.0f}, "
                  f"tail {row['release_check']['min_ess_tail']:.0f}; slowest probit quantity {p['slowest']}: "
                  f"R-hat {p['r_hat']:.3f} bulk {p['ess_bulk']:.0f} tail {p['ess_tail']:.0f} "
                  f"({p['ess_per_cpu_second']:.2f} ESS/CPU s); slowest implied share {sh['slowest']}: "
                  f"R-hat {sh['r_hat']:.3f} bulk {sh['ess_bulk']:.0f} tail {sh['ess_tail']:.0f}", flush=True)
            runs = [r for r in runs if not (r["file"] == name and r["variant"] == variant
                                            and r["n_iter"] == a.n_iter)] + [row]
            js.write_text(json.dumps({"benchmark": "copula_nominal_mixing", "environment": environment(),
                                      "runs": runs}, indent=2, default=float))


if __name__ == "__main__":
    main()
