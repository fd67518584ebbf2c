"""Issue 29 item 6: DA-MI (joint draw) and the default ``synthmi utility`` against CART, timed in one run.

Two jobs, each in a fresh process (so peak RSS is the job's own), run ``--repeats`` times (median):

* ``adult``: the bundled Adult (48,842 rows), quasi-identifiers age, sex, race, education (recoded as in
  ``benchmarks/frontier.py``), kept income, marital_status, relationship, hours_per_week, capital_gain,
  capital_loss; DA-MI with age masked (K = 1, sigma_e = 10) and race alpha = 3 (the joint draw), fit + 5
  copies, side by side with CART (default leaves) fit + 5 copies. Target: DA-MI within 3x CART.
* ``wide_dami`` / ``wide_utility``: a stand-in for the filer's 64,600-row x 20-column election survey (not public), built by
  :func:`wide_file` from the bundled Adult by a documented, seeded construction: 64,600 rows resampled
  with replacement (seed 29), the 15 Adult columns (``split`` dropped; Adult's own missing values in
  workclass / occupation / native_country kept) plus five constructed columns: ``state`` (51 levels,
  drawn from a Dirichlet(1)-perturbed distribution per race, so geography depends on a QI), ``vote``
  (3-level nominal, logit in age / education_num / state effect, 4% missing), ``party_id`` (7 ordered
  levels from a latent normal in age and vote), ``children`` (Poisson count in age), ``years_here``
  (lognormal in age, 6% missing); ``hours_per_week`` gets 3% missing. Quasi-identifiers age, sex,
  race (5 levels, nominal), marital_status (7 levels, nominal); DA-MI masks age (K = 1, sigma_e = 10)
  and race (alpha = 3); every other column (``state`` included) kept. Timed: DA-MI fit + 5 copies
  (``wide_dami``), and the default ``synthmi utility`` of 5 copies (``wide_utility``, on CART's copies: its
  cost depends on the design, not on the synthesizer) (``pmse(method="logit")`` on all 20 columns plus the
  one-way tables, exactly what :mod:`synthmi.commands.utility` runs). Target: each within 120 s.

CPU seconds are the figure to quote (the 2 cores are shared); wall seconds and load averages are recorded.

    python benchmarks/speed_dami_utility.py --tag after            # both jobs, 3 repeats of adult
    python benchmarks/speed_dami_utility.py --jobs wide_utility,wide_dami --rows 8000 --tag before_8k
Writes ``benchmarks/results/speed_dami_utility[_TAG].json``.

Measured (2 cores shared by six jobs, load average mostly 6-14: CPU seconds quoted; BEFORE = commit
7e18e60 run from an unpacked copy of that tree, AFTER, H29W, H29S and H29WIDE (``--tag h29wide``) = earlier rounds,
H29WIDE2 = this round (``--tag h29wide2_adult`` / ``h29wide2_8k``), load 1-14 as noted):

=============================================  ===================  ===================  ======================  ========================  ==========================  ============================
                                               BEFORE               AFTER                H29W                    H29S                      H29WIDE                     H29WIDE2 (this round)
=============================================  ===================  ===================  ======================  ========================  ==========================  ============================
Adult: CART fit + 5 copies (median of 3)       1.8 CPU-s            1.8 CPU-s            1.38 CPU-s (load 1.2);  1.58 CPU-s (load 5.5-     not re-run                  1.67 CPU-s (load 11-12);
                                                                                         1.7 (load 9-11)         7.2); warm (run again                                 warm 0.88
                                                                                                                 after DA-MI) 0.82
Adult: DA-MI joint fit + 5 copies (median 3)   9.1 CPU-s (5.1x      6.5 CPU-s (3.6x      5.34 CPU-s: 3.85x CART,  4.05 CPU-s: 2.57x CART,  not re-run; the 5 copies    2.34 CPU-s: 1.36x CART;
                                               CART; wall 5.3x)     CART; wall 3.6x)     wall 3.84x (load 1.2);  wall 2.53x; 4.94x warm    identical (sha256) to       warm/warm 2.19 / 0.88 =
                                                                                         6.1: 3.59x (load 9-11)  CART (load 5.5-7.2)       those of 2a46e8e            2.49x (2.34-2.65 over 3
                                                                                                                                                                       runs; load 11-12)
wide 64.6k x 20: utility, copy 1               48.1 CPU-s           26.6 CPU-s           14.8 CPU-s (S_pMSE      not re-run                not timed alone             not re-run
                                                                    (1.31397565492)      1.313975654921561,
                                                                                         2e-13 from AFTER)
wide 64.6k x 20: utility, 5 copies             not run (~5 x 48 s)  179 CPU-s (pMSE      92.3 CPU-s (pMSE 91.6   not re-run                98.9 CPU-s (pMSE 98.1 +     not re-run (code path
                                                                    178.3 + tables 0.9)  + tables 0.7; load                                tables 0.8; load 5.7-10.5,  unchanged)
                                                                                         7.6-9.2; S_pMSE within                            wall 333 s, RSS 2.6 GB;
                                                                                         7e-13 of the 20% split)                           S_pMSE 1.25-1.37)
wide 64.6k: Newton mode of marital_status      --                   24.5 CPU-s           8.3-8.5 CPU-s (mode equal                         8.1-8.6 CPU-s (load 6-9)    not re-run
(7 levels, 936 coefficients)                                                             to 2e-12)               not re-run
wide 4k rows: DA-MI fit + 5 copies             130.7 CPU-s          137.9 CPU-s          not re-run (HMC         128.6 CPU-s (load         not re-run                  not re-run
                                                                                         unchanged)              5.3-6.9; HMC unchanged)
wide 8k rows: DA-MI fit + 5 copies             --                   --                   --                      --                        --                          212.1 CPU-s (fit 0.9 +
                                                                                                                                                                       211.2) against 218.4
                                                                                                                                                                       (fcc6eda, run beside it,
                                                                                                                                                                       load 4-7): same R-hat,
                                                                                                                                                                       ESS, acceptance (same
                                                                                                                                                                       draws); marital 144.9
                                                                                                                                                                       vs 151.7, race 54.3 vs
                                                                                                                                                                       53.6, sex 11.3 vs 11.4
wide 64.6k rows: DA-MI fit + 5 copies          not finished         not finished         not finished: stopped   not re-run                1,080 CPU-s, finished       not re-run (no time: see
                                                                                         after 1,007 CPU-s                                 (fit 4.1 + copies 1,076;    below); same draws as
                                                                                         (load 1.5-3)                                      wall 2,350 s, load 7-10,    H29WIDE bit for bit, the
                                                                                                                                           RSS 1.3 GB): 9x the         HMC's gradients 9% cheaper:
                                                                                                                                           120 s target                ~990 CPU-s estimated
=============================================  ===================  ===================  ======================  ========================  ==========================  ============================

Where the time went (cProfile with a CPU clock; py-spy on the wide runs): Adult DA-MI spent ~5 CPU-s
importing ArviZ and compiling its Numba code for the samplers' R-hat / ESS check (now NumPy:
``synthmi.diagnostics._rank_rhat`` / ``_bulk_ess``), ~0.7 s compiling the truncated-normal kernel (now
NumPy below 1M draws, same bits), and ~4 s in independence-MH log posteriors (softplus over ~15-19k
distinct design rows for 2,200-8,200 proposals per model: the R-hat <= 1.01 / ESS >= 400 targets double
the run). This round (H29W) the softplus is still 3.7 of Adult's 6.7 CPU-s (cProfile): sex given the rest
takes 2 x 4,000 independence-MH draws (acceptance 0.5, ESS 697); an extension now grows by the ESS
shortfall instead of doubling when the chains agree (``glm.independence_mh``), a small gain (6.3 -> 6.1).
The wide utility's logit pMSE fits 943 columns (the reduced design: 10,973 in full) to 129,200 stacked
rows in 6 Newton steps a copy; each X'WX is now formed from the design's 241 dense columns (BLAS) and its
716 sparse ones (non-zero on <= 10% of rows; ``synthmi._numeric.SplitGram``): 1.1 against 2.8 CPU-s a
product, equal to 1e-15, and X b / X' r read the split too (the 1 GB dense design is freed after the
aliasing check). The Adult ratio is CPU-bound in the independence-MH log posteriors, not addressed.
The wide DA-MI spends >90% in the whitened HMC of the 7-level nominal QI (936 coefficients: 51-level state
and 41-level country among its predictors; 52 records in its rarest category), ~23 ms per gradient at
64.6k rows (2 chains), ~18k gradients per model at 4k rows (56k over sex, race and marital status);
its Newton mode (21 Hessian blocks a step, 14 steps) now uses the same split (24.5 -> 8.5 CPU-s). Tried
and not kept: an HMC whose trajectory follows a surrogate (the Laplace quadratic plus a category-stratified
1,000-row subsample of the non-quadratic residual, exact Metropolis test): 200 transitions at 64.6k rows
took over 5 CPU-minutes, slower than the exact-gradient trajectories would (~15 leapfrog steps x 23 ms,
~70 CPU-s), presumably a step size shrunk by low acceptance (the subsample misses the small states'
rows); not kept. Still needed for the 2-minute
target: fewer gradient evaluations (a kept-draw target set by the 5 parameter sets the copies use rather
than ESS >= 400, or a pooled / hierarchical model of the 51-level predictor), i.e. a changed default.

This round (H29S), Adult within 3x CART (cProfile with a CPU clock first: 3.55 of DA-MI's 7.1 CPU-s in the
softplus of the independence-MH log posteriors, 0.5 in the R-hat / ESS checks). The Laplace t proposal
(mode, (-H)^-1, 15 df) fits sex given the rest badly: near-separated relationship levels make its
posterior one-sided along some principal axes (at 4 Laplace SDs the log posterior falls 3.9 on one side, against
8 for a normal; along another it falls 11 at 2 SDs), so the chains stuck on tail proposals. The default
proposal is now Geweke's split-t (``glm.split_t_proposal``: 10 df, a scale for each side of each
Cholesky axis of (-H)^-1 from the log posterior at 1, 2, 3 SDs; MH correction unchanged, so the
target is the same posterior; tests/models/test_glm.py checks the draws against 2-D quadrature on a skewed
and a separated logit). Over seeds 0-11 the sex model's first 2 x 1,000 draws pass R-hat <= 1.01 and
ESS >= 400 in 11 of 12 runs (Laplace t: 0 of 12), scoring 2,246 proposals on average instead of 6,293.
An extension now grows by 1.2 x the R-hat excess (R-hat - 1) / 0.01 or the ESS shortfall, whichever is
larger, instead of doubling whenever R-hat fails (``glm._extension_factor``; thresholds unchanged); this
benchmark's stream still extends sex once (R-hat 1.0175 at 2 x 1,000, then 2 x 2,000: ESS 1,034, acceptance
0.57; it was 2 x 4,000 at acceptance 0.50, ESS 697), race stops at 2 x 1,000 (was 2 x 2,000). The ESS
check's Geyer loop took np.mean per lag (``diagnostics._bulk_ess``: now once for all lags, same sums).
Tried and not kept: work arrays reused by the softplus (40% faster in a fresh process, nothing in the
DA-MI run, where the allocator already reuses the freed blocks: sex's draws 1.11 against 1.15 CPU-s);
a Numba softplus sum (17 against 16 ns an element in the run: exp and log1p are the cost). CART's
timed run above pays make_synthesizer's imports of every method's modules (Numba among them), which
DA-MI then finds done: against CART run again after DA-MI (0.82 CPU-s) DA-MI is 4.94x. The rest of
DA-MI's 4.05 CPU-s: ~2.9 in log posteriors (1.3 of them the ordered education model's two softplus
terms per middle cell), 0.8 in the predictive's 5 Gibbs sweeps per copy, 0.3 in the release's
unmodified-share check. The wide 4k DA-MI took 128.6 CPU-s against 137.9 (AFTER): within what two runs of it differ by (130.7
BEFORE), its time being the whitened HMC of marital status, which this round does not change.

Round H29SPEED (``--tag h29speed_softplus``, medians of 3, load 9.4-10.4): CART 1.53 CPU-s (warm 0.80);
DA-MI 2.19 CPU-s run after CART (2.65x warm CART, 1.46x CART), 1.93 CPU-s warm (run again in the same
process: **2.43x warm CART**, wall 2.06x; re-run as ``h29speed_final`` at load 14: 2.04 against 0.82, 2.52x;
first run 2.76x). Before it, on a quiet machine (``h29speed_base``, load 0.1-0.3;
commit 89db0b6): CART 1.45 (warm 0.76), DA-MI 3.60 CPU-s (4.77x warm CART). The softplus of the samplers'
log posteriors (2.1 of DA-MI's 4.1 CPU-s under cProfile) is now a compiled kernel
(``glm.softplus_sum``: exp and log1p as polynomials that Numba vectorises, <= 3 ulp; 0.57-0.75 CPU-s), and
the ordered logit is summed over (group, cutpoint) pairs (26,994 terms against 31,307); the predictive's
element-wise softplus is compiled too (``glm._softplus``). The five copies are bit for bit those of commit
89db0b6 (same R-hat, ESS and acceptance per model). One-time costs of DA-MI in a process: Numba's start-up
and loading the cached kernels (0.26 CPU-s here, the median gap between the first and the warm run; ~0.9
in a process that has not imported Numba) and, once per installation, compiling them (~1.5 CPU-s; cached
on disk next to the module). Wide 4k (``h29speed_softplus_wide4k``, load 10-14): 135.3 CPU-s, within the
spread of earlier runs (128.6-137.9): its time is the whitened HMC of the nominal QIs (multinomial logits,
matrix products), which the softplus kernel does not touch.

Round H29WIDE (``--jobs wide_utility,wide_dami --tag h29wide``, load 5.7-10.5): the wide DA-MI at 64.6k
rows **finished for the first time: 1,080 CPU-s** (2,350 s wall), still 9x the 2-minute target; the wide
utility of 5 copies 98.9 CPU-s (within 120). Where the DA-MI time went (per conditional, CPU-s, with the
release thresholds R-hat <= 1.01 and ESS >= 400 unchanged): sex given the rest (151 coefficients)
independence MH with the split-t, 16.0 (2 x 8,000 draws after three extensions, acceptance 0.17, R-hat
1.0096, ESS 602); race (608) whitened HMC, 371 (2 x 1,391 kept, 14 leapfrog steps of 0.118, R-hat 1.006,
ESS 507); marital status (936) whitened HMC, 683 (2 x 1,600 kept, 16 steps of 0.103, R-hat 1.005, ESS
630); the Newton modes 8.1-8.6 (marital status), the copies' predictive draws a few seconds.
Why independence MH is not used for race and marital status even at 64.6k (lead: Bernstein-von Mises):
the 200-draw importance pilot is fully degenerate for both (Kish fraction 0.005 = 1/200, log-weight
spread ~690) with the Laplace t *and* with the split-t (whose 6d probes alone cost 21 / 53 CPU-s): the
posterior is not near normal in every direction, because of the rare categories (marital status: 52
records in its rarest category at 64.6k, 4 at 8k) crossed with 51 states and 41 countries. At 8k rows the
draws show it: the lowest-ESS coefficients are those whose posterior SD is 1.3-1.45x the Laplace SD
(correlation of ESS with that ratio -0.82), some with posterior means 6-8 Laplace SDs from the mode (a
flat side held by the N(0, 10^2) prior, a cliff on the other), and the step size (0.057 at 8k, 0.10 at
64.6k against ~0.3 for a normal target of this dimension) is set by those directions. Changed this round:
(1) the sampler screen (``column_posterior``) scores the proposal independence MH actually uses (split-t)
when the Laplace t pilot is poor but not degenerate (Kish 0.01-0.1; its probes reused by the sampler):
measured on sex at 64.6k with another stream, Laplace t 0.044 / split-t 0.15, independence MH ~15 CPU-s
(2 of 3 seeds converged) against whitened HMC 45-53 CPU-s (2 x 800 draws); in this run's stream the
Laplace t pilot gave 0.15 itself, so the change did not act here; Adult's copies are unchanged (sha256);
(2) the multinomial gradient's softmax works on a (G, S, K) view instead of repeated copies (same bits;
28.5 -> 22.8 ms a gradient of marital status under load, ~20%). Tried and not kept: the design's
dense / sparse split for X b and X' r (11.4 -> 10.0 ms of the 22, and not the same bits).
What remains for the target (~110 CPU-s of sampling for two models that now take 1,054): about 10x fewer
gradient evaluations, which the posterior's rare-category directions, not the gradient's cost, decide:
a metric (and centre) adapted to the warmup draws in those few directions (a low-rank correction of the
Laplace metric), or a pooled prior for the rare categories' coefficients of the 51- and 41-level
predictors (a changed model: not this helper's to make).

Round H29WIDE2 (issue 29 item 6, the 2-minute target on the wide file): **not reached**. The HMC's cost is
its gradient count times the cost of a gradient. (1) Cost per gradient: the multinomial logit's log posterior
and score on a sparse design are now one compiled pass over the design rows (``glm._mlogit_kernel``: the
linear predictor from the row's CSR entries, the softmax, and X'(n P) accumulated into the gradient, never
writing the (G, S K) work arrays), bit for bit the NumPy/SciPy form (same summation order, same libm exp and
log; checked on marital status at 64.6k rows for 1, 2 and 5 parameter sets; tests/models/test_glm_mlogit.py
against the dense formula to 1e-10). The design was already sparse (scipy CSR, 17.8 stored entries per row
of 156: 9.9 dummies, 8.0 numeric) and not compressible (64,599 distinct rows of 64,600: fnlwgt, capital
gain and the other continuous predictors), so a one-hot gather does the same work as the CSR product:
19.3 against 21.1 ms a gradient of marital status for 2 chains (30 against 43 for 4). A Numba kernel with
the project's polynomial exp was slower here (24.9 ms: K = 6 values a row do not fill the vector lanes).
At 8k rows (``h29wide2_8k``, run beside fcc6eda): 212.1 against 218.4 CPU-s, the same draws. At 64.6k
the draws are those of H29WIDE (same seed, same bits), so the 1,054 HMC CPU-s there become ~960: ~990
CPU-s in all (estimated from the measured per-gradient cost, not re-run: the run takes 40+ minutes of wall
at this load). (2) Gradient count (``gradient_evaluations`` now in each column's diagnostics, exact): at
8k marital status 68,660 (2 x (100 warm-up + 1,474 kept) transitions of 21 leapfrog steps), race 37,464,
sex 14,020; at 64.6k (H29WIDE) about 53,000 for marital status (2 x 1,600 x 16 + warm-up) and 41,000 for
race (2 x 1,391 x 14). The warm-up (100 transitions) is 6% of it: the count is set by the kept draws the
R-hat <= 1.01 / bulk ESS >= 400 check needs (ESS ~0.2 a draw for the slowest coefficient). Tried and
reverted: a diagonal rescale of the whitened coordinates from the warm-up's second half (Stan-like, shrunk
to the Laplace metric). At 8k it raised marital status's bulk ESS at 800 draws a chain from 174 to 391,
but the step size fell (0.073 -> 0.053, 22 -> 31 leapfrog steps: widening the one-sided directions
sharpened their cliffs) and the run stopped at 77,010 gradients against ~94,000 projected: 1.2x; at 64.6k
race's step fell 0.118 -> 0.081 (14 -> 20 steps) and the chains still extended to 2 x 1,600 draws (H29WIDE:
2 x 1,391), i.e. more gradients. A rescale of the coefficients' marginal variances with the Laplace
correlations kept was worse (ESS 10 after 800 draws: four coefficients of one predictor column stuck). What
the target needs: 120 CPU-s leaves ~85 for the two nominal QIs' HMC, ~4,400 gradient calls at 19 ms, i.e.
~11x fewer gradients than the ~94,000 (chain) gradients spent now, at the same thresholds; the rare
categories' one-sided directions set both the step size and the ESS per draw, so that is a change of model
(a pooled prior for the 51-level state's and 41-level country's coefficients) or of sampler (a metric that
follows those directions, e.g. Riemannian or a normalising-flow preconditioner), not of this schedule.

Round H29PRIOR (the categorical models' default prior; ``--tag hwide_before_8k`` = commit 90671ef run from an
unpacked copy of its tree, ``hwide_after_8k`` / ``hwide_after_64k`` = this round; ``--seed 2027`` pairs with
``--prior-sd 10``, the former default, run in this round's tree): **64.6k rows, 208.0 CPU-s** (fit 4.3 +
copies 203.7; wall 658 s at load 1.9-4.6; RSS 1.4 GB), against 1,080 measured in H29WIDE (~990 estimated
after H29WIDE2): 5.2x less, still 1.7x the 120 s target. The design was checked first: treatment dummies
enter the categorical models as raw 0/1 columns (``conditional.AdditiveDesign``; a formula's binary
columns are not standardised either), numeric predictors standardised to sd 1, so the former N(0, 10^2)
prior was N(0, 10^2) on a rare level's raw log odds ratio, not wider. What it did: a level with few
records in a category (marital status's 4-record category at 8k, states and countries with 3-70 records)
has a likelihood flat on one side, held only by that prior, and those directions set HMC's step and its
ESS per draw (``benchmarks/prior_directions.py``, marital status at 8k, 930 coefficients, 2 x 300 draws:
26 posterior means beyond +-10, down to -36; 67 posterior sds over 1.2 Laplace sds; step 0.077, 21 leapfrog
steps; lowest bulk ESS 76, 11 of the 15 lowest on dummies). The default is now N(0, 2.5^2) on every
coefficient but the intercept (N(0, 10^2) there and on cutpoints; ``glm.default_prior_sd``, rstanarm's
scales, the module docstring of :mod:`synthmi.models.glm`), ``prior_sd=s`` the override (prior_sd=10 gives
the former copies bit for bit: Adult, seed 2026, sha256 of the 5 copies). Under it: 4 means beyond +-10,
3 sds over 1.2 Laplace sds, step 0.176 (10 steps), lowest ESS 179. Per conditional (gradients = one per
chain, warm-up included; CPU-s of the draws):

=====================  ==================================  ==================================  ==================================
                       8k, seed 2026: before (90671ef)     8k, seed 2026: default prior        64.6k, seed 2026: default prior
=====================  ==================================  ==================================  ==================================
marital status         132,260 grads, step 0.072, L 23,    25,796 grads, step 0.171, L 10,     14,816 grads, step 0.216, L 8,
(930 / 936 coef.)      2 x 2,727 kept, ESS 937; 196.8 s    2 x 1,106, ESS 674; 38.1 s          2 x 800, ESS 678; 116.2 s
race (604 / 608)       39,560, step 0.122, L 14,           17,408, step 0.256, L 7,            12,712, step 0.265, L 7,
                       2 x 1,303, ESS 546; 38.1 s          2 x 1,132, ESS 721; 18.6 s          2 x 800, ESS 886; 78.5 s
sex (150 / 151)        HMC 20,626, step 0.306, L 6; 9.0 s  HMC 7,180, step 0.381, L 5; 4.1 s   independence MH (pilot 0.25),
                                                                                               2 x 5,717, ESS 972; 5.7 s
DA-MI fit + 5 copies   245.4 CPU-s (load 0.3-3.6)          62.0 CPU-s (load 2.4-3.7)           208.0 CPU-s (load 1.9-4.6)
=====================  ==================================  ==================================  ==================================

All with R-hat <= 1.01 and bulk ESS >= 400 (thresholds unchanged). At 8k the gradients fell 192,446 ->
50,384 (3.8x; marital status 5.1x), the CPU 4.0x. The before run's marital status (2 x 2,727 kept) took
twice H29WIDE2's 2 x 1,474 from the same seed on an older main: the number of extensions depends on the
stream, so one seed pair is a noisy ratio. Seed 2027 (``hwide_former_8k_s2027`` with ``--prior-sd 10``
against ``hwide_default_8k_s2027``, run one after the other, load 2.1-4.6): 166,334 -> 38,628 gradients
(4.3x; marital status 108,386 -> 18,376, step 0.063 -> 0.165, 26 -> 10 leapfrog steps, 2 x 1,600 -> 2 x 800
kept; race 39,120 -> 12,846; sex 18,828 -> 7,406), 196.5 -> 46.5 CPU-s (4.2x). What still stands between 208 CPU-s
and 120: the two nominal QIs' HMC (195 CPU-s): both stopped at 2 x 800 kept draws (the first 2 x 400 fell
short of ESS 400), ~7.5 ms a chain-gradient at 64.6k. Adult (``benchmarks/prior_utility.py``, all rows, M = 5,
seeds 2026-2028, means): the battery did not move, CI overlap -0.117 -> -0.114, worst one-way S_pMSE 214.3
-> 214.4, two-way 182.6 -> 182.7, overall S_pMSE 11.28 -> 11.34 (seed to seed 11.14-11.48); with race
masked alone -0.630 -> -0.632, 486.4 -> 486.8, 361.1 -> 361.5, 21.17 -> 21.26 (the age terms, a normal model
the prior does not touch, dominate both); DA-MI 1.67 -> 1.16 CPU-s (sex no longer extends: 2 x 1,000 kept
in 3 of 3 seeds, against 1,000 / 1,400 / 2,366).

The two nominal QIs' posteriors in parallel (``--n-jobs 2``: DAMISynthesizer(n_jobs=2), one worker
process a column; CPU-s now include the workers): at 64.6k rows on the merged code, quiet machine
under the bench lock (``--tag integ_64k_njobs2_quiet``, load 0.6 at the start), fit + 5 copies
**126.4 s wall**, 212.3 CPU-s (marital status 117 and race 80 CPU-s in the two workers, the same draws
as with n_jobs=1): 5 % over the 2-minute target. An earlier run at load 2.4 (``hwide_after_64k_njobs2``)
took 187 s wall: the workers overlapped little. The wall is now marital status's HMC (2 x 800 kept
draws after the first 2 x 400 failed the check) plus the fit.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

ADULT_QI = ["age", "sex", "race", "education"]
ADULT_KEEP = ["income", "marital_status", "relationship", "hours_per_week", "capital_gain", "capital_loss"]
ADULT_MASKS = {"age": {"K": 1, "sigma_e": 10.0}, "race": {"alpha": 3.0}}
WIDE_QI = ["age", "sex", "race", "marital_status"]
WIDE_MASKS = {"age": {"K": 1, "sigma_e": 10.0}, "race": {"alpha": 3.0}}
M = 5
SEED = 2026


def wide_file(n: int = 64_600, seed: int = 29) -> pd.DataFrame:
    """The 20-column stand-in for the filer's survey file (module docstring), seeded."""
    from synthmi.data import load_adult

    rng = np.random.default_rng(seed)
    adult = load_adult().drop(columns="split")
    df = adult.iloc[rng.integers(0, len(adult), n)].reset_index(drop=True)
    races = list(df["race"].cat.categories)
    base = rng.dirichlet(np.full(51, 2.0))
    # P(state | race): a common profile tilted per race, so geography carries information on a QI
    probs = {r: rng.dirichlet(base * 51) for r in races}
    codes = np.empty(n, dtype=np.int64)
    for r in races:
        idx = np.flatnonzero((df["race"] == r).to_numpy())
        codes[idx] = rng.choice(51, size=len(idx), p=probs[r])
    states = [f"S{k:02d}" for k in range(51)]
    df["state"] = pd.Categorical.from_codes(codes, categories=states)
    age = df["age"].to_numpy(float)
    edu = df["education_num"].to_numpy(float)
    st_eff = rng.normal(0, 0.5, size=(51, 2))[codes]
    eta = np.column_stack([np.zeros(n), -1 + 0.02 * (age - 40) + 0.15 * (edu - 10) + st_eff[:, 0],
                           -0.5 - 0.01 * (age - 40) + st_eff[:, 1]])
    p = np.exp(eta - eta.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    vote = (p.cumsum(1) < rng.random((n, 1))).sum(1)
    vote_f = pd.Categorical.from_codes(vote, categories=["abstain", "A", "B"])
    latent = 0.03 * (age - 40) + np.where(vote == 1, -1.0, np.where(vote == 2, 1.0, 0.0)) + rng.normal(0, 1, n)
    df["party_id"] = pd.Categorical.from_codes(np.digitize(latent, [-1.5, -0.9, -0.3, 0.3, 0.9, 1.5]),
                                               categories=[f"p{k}" for k in range(1, 8)], ordered=True)
    df["vote"] = vote_f
    df["children"] = rng.poisson(np.clip(0.05 * (age - 18), 0.05, 2.5)).astype(float)
    df["years_here"] = np.round(np.exp(rng.normal(np.log(np.clip(age - 15, 1, None)) - 0.7, 0.6)), 1)
    for col, share in (("vote", 0.04), ("years_here", 0.06), ("hours_per_week", 0.03)):
        df.loc[rng.random(n) < share, col] = np.nan
    assert df.shape == (n, 20), df.shape
    return df


def _cpu() -> float:
    # the process and its waited-for children: with n_jobs > 1 the columns' posteriors run in worker
    # processes, which the pool joins before the timed call returns
    r, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime + c.ru_utime + c.ru_stime


def _timed(fn):
    t0, c0 = time.perf_counter(), _cpu()
    out = fn()
    return out, {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu() - c0}


def job_adult() -> dict:
    from synthmi.data import load_adult
    from synthmi.workflow.tuning import make_synthesizer

    df = load_adult(recode=True)[ADULT_QI + ADULT_KEEP]
    out = {"rows": len(df)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        def cart():
            return make_synthesizer("cart", {}).fit(df, quasi_identifiers=ADULT_QI, keep=ADULT_KEEP).sample(
                M, random_state=SEED)

        def dami():
            s = make_synthesizer("dami", {"masks": ADULT_MASKS, "random_state": SEED}).fit(
                df, quasi_identifiers=ADULT_QI, keep=ADULT_KEEP)
            syn = s.sample(M, random_state=SEED)
            return syn, s.predictive_info_

        _, out["cart"] = _timed(cart)
        (_, info), out["dami"] = _timed(dami)
        # CART again, after both: its first run above also pays the imports make_synthesizer does for
        # every method (DA-MI's and the risk-targeted synthesizer's modules, Numba), which DA-MI then finds
        # done; the warm figure is CART's own work, and the ratio to it is the stricter one
        _, out["cart_warm"] = _timed(cart)
        # DA-MI again: without the process's one-time costs that a second fit would not pay again (the
        # first use of Numba in the process, ~0.5-0.8 CPU-s, loading the cached log posterior kernel)
        _, out["dami_warm"] = _timed(dami)
    out["dami"]["scheme"] = info.get("scheme")
    out["ratio_wall"] = out["dami"]["wall_s"] / out["cart"]["wall_s"]
    out["ratio_cpu"] = out["dami"]["cpu_s"] / out["cart"]["cpu_s"]
    out["ratio_cpu_warm"] = out["dami"]["cpu_s"] / out["cart_warm"]["cpu_s"]
    out["ratio_cpu_warm_both"] = out["dami_warm"]["cpu_s"] / out["cart_warm"]["cpu_s"]
    out["ratio_wall_warm_both"] = out["dami_warm"]["wall_s"] / out["cart_warm"]["wall_s"]
    return out


def _wide(rows: int) -> tuple[pd.DataFrame, list[str]]:
    df = wide_file()
    if rows < len(df):
        df = df.iloc[:rows].reset_index(drop=True)
    return df, [c for c in df.columns if c not in WIDE_QI]


def job_wide_dami(rows: int, seed: int = SEED, prior_sd: float | None = None, n_jobs: int = 1) -> dict:
    """DA-MI fit + 5 copies of the wide file (joint draw); ``prior_sd`` None: the default prior; ``n_jobs``
    worker processes for the columns' posteriors (the synthesizer's parameter; 1: in the process)."""
    from synthmi.workflow.tuning import make_synthesizer

    df, keep = _wide(rows)
    out = {"rows": len(df), "columns": df.shape[1], "missing_cells": int(df.isna().sum().sum()),
           "seed": seed, "prior_sd": prior_sd, "n_jobs": n_jobs}
    params = {"masks": WIDE_MASKS, "random_state": seed, "n_jobs": n_jobs}
    if prior_sd is not None:
        params["prior_sd"] = prior_sd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s, out["dami_fit"] = _timed(lambda: make_synthesizer("dami", params).fit(
            df, quasi_identifiers=WIDE_QI, keep=keep))
        _, out["dami_sample"] = _timed(lambda: s.sample(M, random_state=seed))
    out["dami_scheme"] = s.predictive_info_.get("scheme")
    # each conditional's sampler, R-hat, ESS, acceptance and CPU seconds (where the time went)
    diag = getattr(s, "diagnostics_", None) or {}
    out["posterior"] = {c: {k: v for k, v in d.items() if isinstance(v, (int, float, str))}
                        for c, d in diag.get("columns", {}).items()}
    out["posterior_cpu_s"] = dict(getattr(s, "posterior_cpu_seconds_", {}) or {})
    out["dami"] = {k: out["dami_fit"][k] + out["dami_sample"][k] for k in ("wall_s", "cpu_s")}
    return out


def job_wide_utility(rows: int, copies: int = M) -> dict:
    """The default ``synthmi utility`` (logit pMSE on all 20 columns + one-way tables) of 5 copies of the
    wide file. Its cost depends on the design (columns, levels, rows), not on the synthesizer, so the
    copies are CART's (fast); the same call on DA-MI copies costs the same per copy. ``copies`` < 5 times
    the first copies only (each copy is its own propensity fit: the cost is linear in the copies)."""
    from synthmi.evaluation.pmse import pmse, utility_tables
    from synthmi.workflow.tuning import make_synthesizer

    df, keep = _wide(rows)
    out = {"rows": len(df), "columns": df.shape[1]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = make_synthesizer("cart", {}).fit(df, quasi_identifiers=WIDE_QI, keep=keep).sample(M, random_state=SEED)
        syn = syn.copies[:copies]
        out["copies_timed"] = copies
        # exactly what synthmi.commands.utility runs by default (method logit, maxorder 1, tables "1")
        res, out["utility_pmse"] = _timed(lambda: pmse(df, syn, method="logit", variables=list(df.columns),
                                                       random_state=0))
        _, out["utility_tables"] = _timed(lambda: utility_tables(df, syn, variables=list(df.columns), ways=[1]))
    out["utility"] = {k: out["utility_pmse"][k] + out["utility_tables"][k] for k in ("wall_s", "cpu_s")}
    out["s_pmse"] = [float(x) for x in res.to_frame()["s_pmse"]]
    out["pmse"] = [float(x) for x in res.to_frame()["pmse"]]
    out["k"] = [int(x) for x in res.k]
    return out


def _child(job: str, rows: int, copies: int, seed: int = SEED, prior_sd: float | None = None,
           n_jobs: int = 1) -> None:
    out = {"adult": job_adult, "wide_dami": lambda: job_wide_dami(rows, seed, prior_sd, n_jobs),
           "wide_utility": lambda: job_wide_utility(rows, copies)}[job]()
    out["max_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out))


def run_job(job: str, rows: int, timeout: float, copies: int = M, seed: int = SEED,
            prior_sd: float | None = None, n_jobs: int = 1) -> dict:
    load = os.getloadavg()
    t0 = time.perf_counter()
    cmd = [sys.executable, __file__, "--child", job, "--rows", str(rows), "--utility-copies", str(copies),
           "--seed", str(seed), "--n-jobs", str(n_jobs)] + ([] if prior_sd is None else ["--prior-sd", str(prior_sd)])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"finished": False, "timeout_wall_s": timeout, "loadavg_at_start": load}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode or not lines:
        raise RuntimeError(p.stderr[-3000:])
    out = json.loads(lines[-1][7:])
    out.update(finished=True, loadavg_at_start=load, loadavg_at_end=os.getloadavg(),
               process_wall_s=time.perf_counter() - t0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="adult,wide_utility,wide_dami")
    ap.add_argument("--rows", type=int, default=64_600)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the adult job (the wide job runs once)")
    ap.add_argument("--timeout", type=float, default=900.0, help="wall seconds after which a job is abandoned")
    ap.add_argument("--utility-copies", type=int, default=M, help="copies timed by wide_utility (cost is linear)")
    ap.add_argument("--seed", type=int, default=SEED, help="wide_dami's random_state (fit and copies)")
    ap.add_argument("--prior-sd", type=float, default=None,
                    help="wide_dami's prior_sd (default: the categorical models' default prior)")
    ap.add_argument("--n-jobs", type=int, default=1,
                    help="wide_dami's n_jobs: worker processes for the columns' posteriors (CPU-s include them)")
    ap.add_argument("--tag", default="")
    ap.add_argument("--child", default=None)
    a = ap.parse_args()
    if a.child:
        _child(a.child, a.rows, a.utility_copies, a.seed, a.prior_sd, a.n_jobs)
        return
    results: dict = {}
    for job in a.jobs.split(","):
        reps = a.repeats if job == "adult" else 1
        runs = [run_job(job, a.rows, a.timeout, a.utility_copies, a.seed, a.prior_sd, a.n_jobs) for _ in range(reps)]
        results[job] = {"runs": runs}
        done = [r for r in runs if r.get("finished")]
        if job == "adult" and done:
            med = {f"{p}_{k}": statistics.median(r[p][k] for r in done)
                   for p in ("cart", "dami", "cart_warm", "dami_warm") for k in ("wall_s", "cpu_s")}
            for k in ("ratio_cpu", "ratio_wall", "ratio_cpu_warm", "ratio_cpu_warm_both", "ratio_wall_warm_both"):
                med[k] = statistics.median(r[k] for r in done)
            results[job]["median"] = med
            print(f"adult ({len(done)} runs): CART {med['cart_cpu_s']:.2f} CPU-s (warm {med['cart_warm_cpu_s']:.2f}), "
                  f"DA-MI {med['dami_cpu_s']:.2f} CPU-s, ratio cpu {med['ratio_cpu']:.2f} wall {med['ratio_wall']:.2f} "
                  f"(to warm CART {med['ratio_cpu_warm']:.2f}); DA-MI warm {med['dami_warm_cpu_s']:.2f} CPU-s, warm/warm "
                  f"cpu {med['ratio_cpu_warm_both']:.2f} wall {med['ratio_wall_warm_both']:.2f}; "
                  f"load {[r['loadavg_at_start'] for r in runs]}")
        elif job == "wide_dami" and done:
            r = done[0]
            print(f"wide DA-MI {r['rows']}x{r['columns']}: fit {r['dami_fit']['cpu_s']:.1f} + 5 copies "
                  f"{r['dami_sample']['cpu_s']:.1f} CPU-s (n_jobs {r.get('n_jobs', 1)}: wall {r['dami']['wall_s']:.1f} s); max RSS {r['max_rss_mib']:.0f} MiB; load {r['loadavg_at_start']}")
        elif job == "wide_utility" and done:
            r = done[0]
            print(f"wide utility {r['rows']}x{r['columns']}, {r['copies_timed']} copies: pMSE {r['utility_pmse']['cpu_s']:.1f} + tables "
                  f"{r['utility_tables']['cpu_s']:.1f} CPU-s; S_pMSE {r['s_pmse']}; max RSS {r['max_rss_mib']:.0f} MiB;"
                  f" load {r['loadavg_at_start']}")
        else:
            print(f"{job}: not finished within {a.timeout} s wall")
    name = "speed_dami_utility" + (f"_{a.tag}" if a.tag else "")
    _bench.write_json(name, {"rows_wide": a.rows, "m": M, "seed": SEED, "results": results})


if __name__ == "__main__":
    main()
