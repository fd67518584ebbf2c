r"""Posterior draws of the sequential conditionals, one column at a time, optionally in parallel.

The fast sampler of :class:`~synthmi.models.rubin.RubinSynthesizer` (and DA-MI,
whose posterior is the same) factorises over the conditionals: with the
original records observed, the posterior of a column's coefficients depends on
no other column's coefficients,

.. math:: p(\\theta_1, \\dots, \\theta_J \\mid D) = \\prod_j p(\\theta_j \\mid D),

because the likelihood is a product of one factor per conditional and the
priors are independent. Each column's draws can therefore be made by a
separate process, from its own random stream, with no change in the target.

Reproducibility: the parent generator is split with
:meth:`numpy.random.Generator.spawn` into one child stream per conditional,
in the visit order, before anything is drawn; column ``j`` always uses child
``j``. The draws are therefore identical for every ``n_jobs`` and every
completion order of the workers.

Per column (logit, probit and ordered families), the sampler is chosen as
:mod:`synthmi.models.glm` documents: independence Metropolis-Hastings with the
split-t proposal, switched to HMC whitened by the Laplace fit when a
200-draw pilot of the importance weights shows a Kish ESS fraction below
``IMH_MIN_ESS_FRACTION`` (or when independence MH fails to converge). The pilot
draws from the Laplace t; when that one is poor but not degenerate
(``SPLIT_PILOT_MIN``) a second pilot of the split-t proposal decides.

Why HMC and not Polya-Gamma Gibbs for the many-parameter logits (issue 17
offered both): measured by bulk ESS per CPU second on the agency file at
40,000 rows (``benchmarks/agency.py --compare-samplers``; 2 chains from the
same over-dispersed starts), whitened HMC gave 36 vs 1.7 for Polya-Gamma
Gibbs (Polson, Scott & Windle 2013) on ``sex`` (76 coefficients) and 5.2 vs
0.14 on the missingness indicator of hours (81 coefficients, completely
separated by ``employed``, when it was fitted on every row; the structural
rule now fits it on the employed rows, where it has one level and no model);
independence MH stalls on both (acceptance < 0.01 on race). Each Gibbs sweep needs :math:`X^\top\Omega X` per
category, and the chain moves slowly where the Polya-Gamma weights are
small: rare categories and separated levels (Johndrow, Smith, Pillai &
Dunson 2019, JASA 114:1394-1403), which a 51-level geography has many of.
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any, Callable

import numpy as np

from .glm import describe_prior, importance_ess_fraction, independence_mh, split_t_proposal, whitened_hmc

#: below this Kish ESS fraction of a 200-draw pilot, independence MH is replaced by HMC
#: (measured: fractions 0.005-0.08 gave acceptance 0.01-0.1 and R-hat 1.9-5.8 on the agency
#: file with its 51-level state; Adult's race given sex and age, 20 coefficients, has 0.25-0.77)
IMH_MIN_ESS_FRACTION = 0.1
#: a Laplace t pilot whose Kish ESS fraction is above this (more than two of its 200 draws count)
#: and below ``IMH_MIN_ESS_FRACTION`` is followed by a pilot of the split-t proposal that independence
#: MH uses (``glm.split_t_proposal``, its own ``2 * 3 * d`` probes, reused by the sampler), and that
#: pilot decides. Measured (issue 29 item 6, the 64,600-row survey stand-in of
#: ``benchmarks/speed_dami_utility.py``): sex given the rest (151 coefficients) 0.044 Laplace t
#: against 0.15 split-t, and independence MH then converged in 2 of 3 seeds at ~15 CPU-s, against
#: ~70 for HMC; race and marital status (608 / 936 coefficients) gave 0.005 = 1/200 with both
#: proposals (one draw carries all the weight), where the probes alone would cost 21 / 53 CPU-s
SPLIT_PILOT_MIN = 0.01
#: degrees of freedom of the split-t proposal (``glm.independence_mh``'s default for it)
SPLIT_NU = 10.0
#: initial kept draws per chain of the HMC sampler (near-independent draws; extended until
#: split-R-hat <= 1.01 and bulk ESS >= 400)
HMC_INITIAL_DRAWS = 400


def column_draws(task: dict[str, Any]) -> tuple[list[dict[str, np.ndarray] | None], dict[str, Any]]:
    """``m`` posterior parameter sets of one conditional and its diagnostics entry.

    ``task`` holds ``family``, ``method``, ``fast`` (the fitted fast model),
    ``m``, ``rng``, ``chains``, ``draws`` and ``sampler`` ("fast" or "imh").
    A module-level function so that a worker process can run it. The entry
    records the CPU seconds spent (``cpu_seconds``: on a loaded machine a
    better measure of the work than wall time).
    """
    c0 = time.process_time()
    sets, diag = _column_draws(task)
    diag["cpu_seconds"] = time.process_time() - c0
    return sets, diag


def _column_draws(task: dict[str, Any]) -> tuple[list[dict[str, np.ndarray] | None], dict[str, Any]]:
    family, method, fast, m, rng = task["family"], task["method"], task["fast"], task["m"], task["rng"]
    if family == "cart":
        return [None] * m, {"family": "cart", "method": "tree donors (no parameters)"}
    if family == "tree":
        return fast.draw(m, rng), {"family": "tree", "method": "conjugate leaves (Dirichlet / Bayesian bootstrap)",
                                   "independent_draws": m}
    if family == "fixed":
        return [None] * m, {"family": "fixed", "method": "fixed by a structural rule (one level on the free rows)"}
    if method == "hierarchical":
        sets, d = fast.draw(m, rng, chains=max(int(task["chains"]), 2), draws=int(task["draws"]))
        return sets, {"family": "normal", "method": "Gibbs (random intercepts)", **d}
    if family == "normal":
        beta, sigma = fast.draw(m, rng)
        return ([{"beta": beta[i], "sigma": sigma[i]} for i in range(m)],
                {"family": "normal", "method": "closed-form conjugate draws", "independent_draws": m})
    chains = int(task["chains"])
    n_keep = max(int(task["draws"]), -(-m // chains))
    mode_cov = fast.mode()
    # pilot: the Kish ESS fraction of the independence proposal's importance weights;
    # when it is small (many skewed directions, e.g. a 51-level predictor with empty
    # cells) independence MH stalls and the gradient sampler is used instead. Models
    # split over Dask partitions (no design in memory) and sampler="imh" keep IMH.
    frac = importance_ess_fraction(fast, mode_cov, rng) if family == "logit" else 1.0
    can_hmc = family == "logit" and hasattr(fast, "xmul") and task["sampler"] == "fast"
    split, frac_laplace = None, frac
    if can_hmc and SPLIT_PILOT_MIN < frac < IMH_MIN_ESS_FRACTION:
        # the Laplace t pilot is poor but not degenerate: screen the proposal independence MH
        # actually uses (Geweke's split-t, glm.split_t_proposal) before paying for HMC; its probes
        # are reused by the sampler (independence_mh(split=...))
        split = split_t_proposal(fast, mode_cov[0], mode_cov[1], SPLIT_NU)
        frac = importance_ess_fraction(fast, mode_cov, rng, proposal=split)
    if frac < IMH_MIN_ESS_FRACTION and can_hmc:
        chains = max(chains, 2)
        n_keep = max(min(int(task["draws"]), HMC_INITIAL_DRAWS), -(-m // chains))
        res = whitened_hmc(fast, n_keep, rng, chains=chains, mode_cov=mode_cov)
        how = "HMC whitened by the Laplace fit"
    else:
        res = independence_mh(fast, n_keep, rng, chains=max(chains, 1), warn=False, mode_cov=mode_cov, split=split)
        how = "independence Metropolis-Hastings"
        if can_hmc and (res.r_hat > 1.01 or res.ess_bulk < 400):
            # the pilot passed but the chains did not converge after their extensions: HMC
            chains = max(chains, 2)
            n_keep = max(min(int(task["draws"]), HMC_INITIAL_DRAWS), -(-m // chains))
            res = whitened_hmc(fast, n_keep, rng, chains=chains, mode_cov=mode_cov)
            how = "HMC whitened by the Laplace fit (independence MH did not converge)"
    n_keep = res.draws.shape[1]
    pooled = res.draws.reshape(-1, res.draws.shape[-1])
    # evenly spaced draws across the pooled chains: far apart, hence nearly independent
    idx = np.linspace(0, pooled.shape[0] - 1, m).round().astype(int) if m > 1 else np.array([pooled.shape[0] - 1])
    params = fast.unpack(pooled[idx])
    diag = {
        "family": family, "method": how,
        "chains": chains, "draws_per_chain": n_keep, "acceptance_rate": res.acceptance,
        "r_hat": res.r_hat, "ess_bulk": res.ess_bulk,
    }
    prior = getattr(fast, "prior_sd", None)
    if prior is not None:
        # the prior the draws are from, in words (glm.describe_prior): the default or the user's prior_sd
        diag["prior"] = describe_prior(prior)
    if family == "logit":
        # measured only for logit (the pilot that picks HMC); other families report nothing
        diag["importance_ess_fraction"] = frac
        if split is not None:
            diag["importance_ess_fraction_laplace_t"] = frac_laplace
    if "step_size" in res.info:
        diag.update(step_size=res.info["step_size"], n_leapfrog=res.info["n_leapfrog"])
        # the sampler's cost in its own unit (one gradient for one chain), warm-up included
        diag.update({k: res.info[k] for k in ("gradient_evaluations", "warmup") if k in res.info})
    return [{k: v[i] for k, v in params.items()} for i in range(m)], diag


def _cost(task: dict[str, Any]) -> float:
    """Rough cost for scheduling the longest columns first: grouped rows times parameters."""
    fast = task["fast"]
    if task["method"] == "hierarchical":
        return 1.0  # an MCMC too (blocked Gibbs), worth a worker; scheduled after the categorical ones
    if task["family"] in ("cart", "tree", "normal", "fixed"):
        return 0.0  # closed form or nothing to draw
    # models reduced over Dask partitions have no grouped rows in memory (G is None)
    rows = getattr(fast, "G", None) or 1
    return float(rows) * float(getattr(fast, "dim", None) or 1)


def draw_columns(tasks: list[dict[str, Any]], n_jobs: int = 1,
                 on_done: Callable[[int, dict[str, Any]], None] | None = None) -> list[tuple[list, dict[str, Any]]]:
    """:func:`column_draws` for every task, in ``n_jobs`` worker processes (1: in this process).

    Results come back in the order of ``tasks`` whatever ``n_jobs`` (each task
    carries its own generator, so the draws do not depend on it either).
    ``on_done(j, diag)`` is called in this process, in task order, as results
    become available (progress).
    """
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        n_jobs = max(1, (os.cpu_count() or 1) + 1 + n_jobs)  # -1: all cores, as scikit-learn
    heavy = [j for j, t in enumerate(tasks) if _cost(t) > 0]
    out: list[Any] = [None] * len(tasks)
    if n_jobs <= 1 or len(heavy) <= 1:
        for j, t in enumerate(tasks):
            out[j] = column_draws(t)
            if on_done is not None:
                on_done(j, out[j][1])
        return out
    import multiprocessing as mp

    # fork: the workers inherit the imported modules (no re-import, no pickled module state);
    # only the task (the fitted model: grouped design and counts) is sent. The thread limits
    # of the parent (OPENBLAS_NUM_THREADS etc.) carry over, so n_jobs processes use n_jobs cores.
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    order = sorted(heavy, key=lambda j: -_cost(tasks[j]))
    with ProcessPoolExecutor(max_workers=min(n_jobs, len(heavy)), mp_context=ctx) as pool:
        futures = {j: pool.submit(column_draws, tasks[j]) for j in order}
        # the cheap columns (closed form, cart) run here while the workers sample
        for j, t in enumerate(tasks):
            if j not in futures:
                out[j] = column_draws(t)
        for j in range(len(tasks)):
            if j in futures:
                out[j] = futures[j].result()
            if on_done is not None:
                on_done(j, out[j][1])
    return out
