"""Why the copula's nominal blocks do not mix on the agency file and on Adult's mixed set (issues 15, 17).

Measured on the risk-dami copula frame of the agency file (:func:`synthmi.data.agency.make_agency_data`,
n = 1,000, seed 3, the CLI test's size: kept state and occupation pooled to 8 levels, employed, bmi,
the QIs age, sex, race, hours, income and income's missing-value indicator) after a fitted chain:

1. **Quadrature.** The collapsed multinomial-probit log-likelihood (:func:`mnp_log_likelihood`) of
   every nominal block at the observed levels, against a 6,001-point trapezoid rule on (-30, 30), at
   the chain's state and at draws from the Laplace approximation of the block's collapsed posterior.
2. **Proposal against target.** For every nominal block: block dimension, the Newton proposal's
   acceptance probability from the current state (200 proposals), and the standard deviation of the
   log importance weight log pi - log q of the Laplace approximation at the mode (0 for a Gaussian
   posterior; an independence proposal needs it below ~1).
3. **Later blocks.** For a block that later blocks regress on, the log ratio that the joint move must
   survive when the block's latents are redrawn at an unchanged regression: the later blocks' latent
   density (what the move uses) and, for comparison, their level likelihood.
4. **The cause, tested.** The same fit with the coefficients of every nominal block on the *latents of
   earlier probit blocks* (binary and nominal) held at zero (diagnostic only: it removes real
   associations), against the model as it is: max R-hat, min bulk ESS, CPU seconds, acceptance.
   Same for Adult's mixed set (``benchmarks/copula_adult.py``: n = 500 with MAR gaps).

Writes ``benchmarks/results/copula_nominal_diagnosis.json``.

This diagnoses the model *before* the fix: probit blocks regressing on earlier blocks' latents
(and the joint collapsed move, ``sam.later``, ``_later_log_density``), which the copula replaced
by regressions on earlier blocks' level indicators. It runs against that version only:
``git worktree add /tmp/old 291cd7f`` and run it there; the JSON it wrote is kept as the record.

Run: ``python benchmarks/copula_nominal_diagnosis.py [--n-iter 300]`` (at commit 291cd7f)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import log_ndtr

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench import write_json  # noqa: E402
from synthmi.models import copula as C  # noqa: E402


def agency_frame():
    from synthmi.data.agency import make_agency_data
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = make_agency_data(1000, seed=3)
    s = RiskTargetedSynthesizer(masks={"age": {"K": 2, "sigma_e": 3}}, n_iter=4, random_state=11,
                                accept_diagnostics=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s.fit(df, ["age", "sex", "race", "hours_per_week", "income"],
              keep=["state", "employed", "occupation", "bmi", "weight"], weights="weight",
              rules={"hours_per_week": "employed == 'No'"})
    return s.copula_data_, s.copula_.schema_, list(s.copula_.zero_coefficients_)


def adult_frame():
    from copula_adult import adult_mixed, inject_mar

    df = adult_mixed().sample(500, random_state=1).reset_index(drop=True)
    return inject_mar(df, np.random.default_rng(2)), None, []


def exact_ll(eta, lv):
    """Per-record log Pr(level) by a 6,001-point trapezoid rule on (-30, 30) (step 0.01)."""
    s = np.linspace(-30.0, 30.0, 6001)
    out = np.zeros(len(lv))
    obs = np.flatnonzero(lv >= 0)
    full = np.column_stack([np.zeros(len(lv)), eta])
    for chunk in np.array_split(obs, max(1, obs.size // 50)):
        f = np.broadcast_to(-0.5 * s * s - 0.5 * np.log(2 * np.pi), (chunk.size, s.size)).copy()
        el = full[chunk, lv[chunk]]
        for j in range(full.shape[1]):
            on = lv[chunk] != j
            f[on] += log_ndtr(s[None, :] + (el[on] - full[chunk[on], j])[:, None])
        m = f.max(axis=1, keepdims=True)
        out[chunk] = m[:, 0] + np.log(np.trapezoid(np.exp(f - m), s, axis=1))
    return out


def fit(frame, schema, zero, n_iter, seed=11):
    g = C.GaussianCopulaImputer(n_iter=n_iter, chains=2, random_state=seed)
    c0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g.fit(frame, schema=schema, zero_coefficients=zero)
    cpu = time.process_time() - c0
    d = g.diagnostics_
    return g, {"cpu_seconds": cpu, "max_r_hat": d["max_r_hat"], "min_ess_bulk": d["min_ess_bulk"],
               "min_ess_bulk_per_cpu_second": d["min_ess_bulk"] / cpu, "worst": d["worst"],
               "collapsed_acceptance": d.get("collapsed_acceptance"), "collapsed_moves_stopped": d.get("collapsed_moves_stopped")}


def block_checks(g, rng):
    sam = g.sampler_
    st = g.chain_states_[0]
    out = {}
    for b, (S, W) in enumerate(sam.blocks):
        if S.size < 2:
            continue
        name = sam.block_margins[b].name
        X = np.column_stack([np.ones(sam.n), st.z[:, W]])
        level = sam.block_levels[b]
        theta = st.coef[b]
        shape = theta.shape
        lam = sam.prior_precision(st, b)
        oi = sam.omega_inv[b]
        obs = level >= 0
        # 1. quadrature at the state
        eta = X @ theta
        ex = exact_ll(eta, level)
        err_state = (C.mnp_log_likelihood(eta, level) - ex)[obs]
        # mode of the collapsed posterior (Newton; log-concave)
        th = theta.ravel().copy()
        for _ in range(50):
            _, s_, I_ = sam._block_score(X, th.reshape(shape), level, lam, oi)
            step = np.linalg.solve(I_, s_)
            th = th + step
            if np.abs(step).max() < 1e-9:
                break
        lm, _, Im = sam._block_score(X, th.reshape(shape), level, lam, oi)
        Cm = np.linalg.cholesky(Im)
        # 2. Newton proposal from the current state, and the Laplace approximation at the mode
        l0, s0, I0 = sam._block_score(X, theta, level, lam, oi)
        C0 = np.linalg.cholesky(I0)
        m0 = theta.ravel() + np.linalg.solve(I0, s0)
        acc, logw, err_prop, min_ll_prop = [], [], [], []
        for k in range(200):
            prop = m0 + solve_triangular(C0.T, rng.standard_normal(m0.size), lower=False)
            l1, s1, I1 = sam._block_score(X, prop.reshape(shape), level, lam, oi)
            C1 = np.linalg.cholesky(I1)
            m1 = prop + np.linalg.solve(I1, s1)
            fwd = -0.5 * np.sum((C0.T @ (prop - m0)) ** 2) + np.log(np.diag(C0)).sum()
            rev = -0.5 * np.sum((C1.T @ (theta.ravel() - m1)) ** 2) + np.log(np.diag(C1)).sum()
            acc.append(min(1.0, float(np.exp(min(0.0, l1 - l0 + rev - fwd)))))
            pm = th + solve_triangular(Cm.T, rng.standard_normal(th.size), lower=False)
            lp = sam._block_score(X, pm.reshape(shape), level, lam, oi)[0]
            logw.append(lp - lm + 0.5 * np.sum((Cm.T @ (pm - th)) ** 2))
            if k < 2:  # quadrature at proposals (the dense rule is slow)
                e2 = X @ pm.reshape(shape)
                ex2 = exact_ll(e2, level)
                err_prop.append(float(np.abs((C.mnp_log_likelihood(e2, level) - ex2)[obs]).sum()))
                min_ll_prop.append(float(ex2[obs].min()))
        row = {
            "levels": int(S.size + 1), "regressors": int(W.size), "parameters": int(th.size),
            "level_counts": np.bincount(level[obs], minlength=S.size + 1).tolist(),
            "quadrature_abs_error_sum_at_state": float(np.abs(err_state).sum()),
            "quadrature_max_abs_error_at_state": float(np.abs(err_state).max()),
            "min_record_log_likelihood_at_state": float(ex[obs].min()),
            "quadrature_abs_error_sum_at_laplace_draws": err_prop,
            "min_record_log_likelihood_at_laplace_draws": min_ll_prop,
            "newton_proposal_mean_acceptance": float(np.mean(acc)),
            "laplace_at_mode_log_weight_sd": float(np.std(logw)),
            "current_minus_mode_log_posterior": float(l0 - lm),
        }
        if sam.later[b]:
            dens, lik = [], []
            for _ in range(20):
                zt = st.z.copy()
                zt[:, S] = C.mnp_draw_latents(eta, level, rng)
                dens.append(sam._later_log_density(st, b, zt) - sam._later_log_density(st, b, st.z))
                r = 0.0
                for bb in range(b + 1, len(sam.blocks)):
                    S2, W2 = sam.blocks[bb]
                    lv2 = sam.block_levels[bb]
                    cf = st.coef[bb]
                    en = cf[0][None, :] + zt[:, W2] @ cf[1:]
                    eo = cf[0][None, :] + st.z[:, W2] @ cf[1:]
                    r += float(C.mnp_log_likelihood(en, lv2).sum() - C.mnp_log_likelihood(eo, lv2).sum())
                    zt[:, S2] = C.mnp_draw_latents(en, lv2, rng)
                lik.append(r)
            row["later_blocks_latent_density_log_ratio_median"] = float(np.median(dens))
            row["later_blocks_level_likelihood_log_ratio_median"] = float(np.median(lik))
            row["largest_later_coefficient_on_its_latents"] = float(max(
                np.abs(st.coef[bb][1:][np.isin(sam.blocks[bb][1], S)]).max() for bb in range(b + 1, len(sam.blocks))))
        out[name] = row
    return out


def probit_on_probit_pairs(g):
    """(nominal block, earlier probit block) pairs: the coefficients held at zero in the test fit."""
    sam = g.sampler_
    names = [mg.name for mg in sam.block_margins]
    return [(names[b], names[a]) for b in range(len(names)) if sam.blocks[b][0].size > 1 for a in range(b)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-iter", type=int, default=300)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    load0 = os.getloadavg()
    payload = {"n_iter": a.n_iter, "chains": 2, "loadavg_before": load0}
    for name, make in (("agency_n1000", agency_frame), ("adult_mixed_n500", adult_frame)):
        frame, schema, zero = make()
        g, as_is = fit(frame, schema, zero, a.n_iter)
        pairs = probit_on_probit_pairs(g)
        _, held = fit(frame, schema, zero + pairs, a.n_iter)
        payload[name] = {"model_as_is": as_is, "blocks": block_checks(g, rng),
                         "nominal_on_probit_latents_held_at_zero": {"pairs": pairs, **held}}
        print(name, "as is:", {k: as_is[k] for k in ("max_r_hat", "min_ess_bulk", "cpu_seconds", "collapsed_acceptance")})
        print(name, "held at zero:", {k: held[k] for k in ("max_r_hat", "min_ess_bulk", "cpu_seconds", "collapsed_acceptance")})
        for blk, row in payload[name]["blocks"].items():
            print("  ", blk, {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()})
    payload["loadavg_after"] = os.getloadavg()
    write_json("copula_nominal_diagnosis", payload)


if __name__ == "__main__":
    main()
