"""``synthmi tune`` then ``synthesize --spec`` on four files, through the command line.

Issue 29's must-show: on the bundled Adult and NHANES and on two files that ship with a package
synthmi depends on (statsmodels' ``fair`` and ``anes96``), the tuned release's worst one-way
S_pMSE is within 2x CART's, and its CI overlap on an analysis *held out from tune* (written
here, one per file, never given to tune) is no lower than CART's.

Every step is a ``python -m synthmi ...`` subprocess, as a new user runs it, on the file saved
as a CSV in a temporary directory:

1. CART (``synthesize --method cart --m 5 --seed s``, CART's defaults), seeds 0..R-1 (R = 3):
   ``utility --tables 1`` (worst one-way S_pMSE over the synthesized columns), ``analyse`` of the
   held-out analysis and of the declared one, ``disclosure`` (expected correct matches,
   true-match rate; age within 1 year).
2. ``tune`` with the declared analysis, targets ``expected_matches<=cart`` and
   ``true_match_rate<=cart`` (CART's defaults, R seeds), ``--m 5 --replicates R --seed 0``.
   tune reports no CART frontier (it takes one CART setting as its reference), so the
   baseline is CART's default.
   If no setting is feasible and tune names tables that broke its table rule, the user's next
   step is what its message suggests: a spec (``synthmi spec``) whose ``"models"`` give the QIs
   those tables name (numeric or categorical) a tree, tuned again (``tune --spec``); both attempts are recorded. A
   few-valued numeric QI (fair's bracketed age, its six schooling levels) gets the tree's discrete
   leaves (:mod:`synthmi.models.tree`). If that is still infeasible under tune's default table rule
   (every one- and two-way table within ``--max-table-ratio`` 2 x CART's; stricter than the
   must-show, which asks for one-way tables only) and ``--relax-table-ratio R`` is given, tune is
   run once more with ``--max-table-ratio R`` and the release it chooses is reported, said so in
   ``tuned_by`` / ``max_table_ratio``.
3. ``synthesize --spec TUNED --method dami --m 5 --seed s`` for s = 0..R-1 (the seeds tune
   validated with), measured by the same three commands as CART.

Per file: mean and Monte Carlo SE (sd over seeds / sqrt(R)) of each figure for both releases;
the checks "tuned worst one-way S_pMSE <= 2 x CART's" and "held-out overlap not below CART's
beyond MC error" (tuned - CART >= -2 x sqrt(SE_t^2 + SE_c^2)).

Rows: fair (6,366 rows) is subsampled to ``--fair-rows`` (default 3,000, seeded) and Adult
(48,842 rows) to ``--adult-rows`` (default 5,000, seeded: the whole file's tune and 3 x 2 releases
do not fit the shared 2 cores) to keep tune within ~10-15 CPU-minutes; anes96 (944 rows) and
NHANES (5,265 rows; missing values kept) are used whole. Adult and NHANES use the bundled demos'
columns (``synthmi.data.workloads.ADULT_DEMO``; ``benchmarks/nhanes_table.py``'s QIs and kept
columns), recoded as there.

Search budget: tune's search is bounded by ``--max-search-points`` (settings measured; default
60 here, Adult 40), not by wall seconds, so the search, the choice and these figures are the same
on a quiet machine and on a loaded one (the earlier runs' 300-second budget measured 14-25
settings under load 9-16 and cut the coordinate search). ``--max-search-seconds`` is still
accepted, off by default.

The committed results (``--relax-table-ratio 3 --skip-default FILE --merge``, one file per run,
each entry with its run's ``environment``): anes96 from an earlier run (``--m-search 5``, 300 s
budget; not re-run); NHANES, fair and Adult re-run with the point budget and tune's validation
fallback (a chosen setting whose validated copies miss the table rule is replaced by the next
confirmed one). Their default-models tunes, infeasible in earlier runs with tables naming every
QI (NHANES age one-way 124 under the normal model; fair age / educ 215 / 171; Adult age 7.1,
age:income 8.9), are not re-run.

Findings (mean +- MC SE over seeds 0-2, M = 5; the bound is 2 x CART's worst one-way S_pMSE):

- fair (3,000 rows; all-tree spec, default table rule --max-table-ratio 2; 42 settings, search
  converged): masks age sigma 20 / educ sigma 20 were chosen first, but their validated copies
  broke the table rule (worst one-way 2.77 > 2.69), so tune validated the next confirmed setting,
  age sigma 10 / educ sigma 20: worst one-way 2.50 +- 0.17 vs bound 2.69 (CART 1.35 +- 0.16);
  held-out overlap 0.896 +- 0.006 vs CART 0.905 +- 0.015 (difference -0.009, MC se 0.016:
  not below); declared 0.900 vs 0.886; expected matches 11.03 vs 11.24, true-match rate 0.00058
  vs 0.00064. Battery 0.844 vs CART's 0.864, within MC error (tune's ``versus_reference``). Before
  (300 s budget, 14 settings, no masks chosen): held-out 0.868 +- 0.014, 0.037 below CART.
  Caveat: tune validates on seeds 0-2, the seeds measured here, and chose between two settings on
  them (``validation_tried``). The same tuned spec on fresh seeds 3-5 (synthesize --spec and the
  same commands; ad hoc, not in the JSON): worst one-way 1.77 +- 0.08 vs CART's 1.05 +- 0.07
  (within 2x), held-out 0.867 +- 0.039 vs CART 0.902 +- 0.010 (-0.035, MC se 0.040: within MC
  error, but the point estimate is as far below CART as before the change).
- Adult (5,000 rows; all-tree spec, now feasible under the default --max-table-ratio 2: 38
  settings, the coordinate search cut by the 40-point budget): masks race alpha 1, sex alpha 1.5;
  worst one-way 1.94 +- 0.34 vs bound 2.69 (CART 1.34); held-out 0.905 +- 0.018 vs CART 0.920 +-
  0.009 (difference -0.015, MC se 0.020: not below beyond MC error, but no gain); declared 0.851 vs
  0.857; expected matches 5.51 vs 5.35, true-match rate equal. tune itself says the release is
  dominated: battery 0.816 vs CART's 0.858, "below" (``versus_reference``).
- NHANES (5,265 rows, all-tree spec): FAILS the one-way check. Under the default table rule no
  setting is feasible: the search converged (50 settings, two full coordinate cycles, inside the
  60-point budget), 11 met CART's risk, the closest (age sigma 10, gender / race alpha 0.5) broke
  marital_status's one-way table, 3.06 vs 3.01. education and marital_status have missing values,
  so DA-MI cannot mask them and no setting moves their tables (tune now names them). With
  --max-table-ratio 3 (37 settings, converged) tune chooses age sigma 10 / race alpha 0.5, the
  same as the earlier 300-second run: worst one-way 3.43 +- 0.59 vs bound 3.12 (CART 1.56);
  held-out 0.842 +- 0.046 vs CART 0.816 +- 0.010 (not below); expected matches 21.98 vs 21.73,
  true-match rate 0.00051 vs 0.00054. The worst tables are not age's (1.15 / 0.95 / 1.22 under
  the tree, seeds 0-2) but the categorical QIs': race_ethnicity 3.37, gender 4.48,
  marital_status 2.43; per QI they average 1.6-2.3 against CART's 0.6-1.2. A one-seed check
  (seed 0, ad hoc) with 'cart' for the two unmaskable QIs (last in the visit sequence; a cart
  column may feed only cart columns under the joint predictive): education 2.54 -> 0.88,
  marital_status 2.58 -> 2.16, race_ethnicity (masked, tree) 2.83: not enough alone.

Why the tuned DA-MI does not beat CART (the cause is the models, not tune's selection): every
DA-MI conditional, the tree included, draws proper copies (parameters from their posterior), whose
table S_pMSE has expectation about 2, against about 1 for CART's plug-in donors
(:mod:`synthmi.models.model_choice`, ``PROPER_GAP``). The tuned releases' one-way tables average
about 2 per QI (NHANES 1.6-2.3 per categorical QI, CART 0.6-1.2), so their worst of four or five
tables sits at the 2 x CART bound, passing or failing by seed noise (a binary QI's one-way S_pMSE
over 5 proper copies has SD about 1.3). At CART's risk the masks have little room (fair: no masks
11.1 expected matches against CART's 11.2; educ sigma 10 alone 12.1), so the proper tree's
utility deficit is not bought back: the battery overlap at CART's risk stays 0.02-0.04 below
CART's on fair and Adult. The plug-in (improper) tree is the change that moves this; its rows follow.

The improper variant (``--variant improper``; rows ``FILE:improper`` beside the rows above, which
stay): the spec's ``"models"`` give every QI a tree and ``--param proper=false`` (the tree's
plug-in leaves, synthpop's proper = FALSE, as CART draws) is given to tune, which records it
(``base_params``) and validates with it, and to ``synthesize --spec``; tune's default table rule
(--max-table-ratio 2), 60-point budget. Run before the tree conditional grew CartSynthesizer's own
partition (``synthmi.models.rubin.TreeDesign``); the ``FILE:improper`` rows now hold the re-run after it
(below, "Re-run on CART's partition"), now replaced by the later one with tune's leaf search (below
that, "Leaf size searched with the masks"). The first runs, on the tree's former design, each file checked:

- NHANES: now PASSES under the default table rule (it failed above). 39 settings, coordinate search
  converged; the first confirmed setting validated: masks age sigma 20, gender alpha 0.5,
  race_ethnicity alpha 1. Worst one-way 2.35 +- 0.15 vs bound 3.12 (CART 1.56); held-out overlap
  0.848 +- 0.004 vs CART 0.816 +- 0.010 (+0.032, MC se 0.011); declared 0.725 vs 0.722; expected
  matches 19.42 vs 21.73, true-match rate 0.00056 vs 0.00054 (within MC error). Battery 0.781 vs
  CART's 0.801, within MC error (``versus_reference``). The worst tables are still
  race_ethnicity (masked; 2.52, 2.47, 0.92 over seeds 0-2) and marital_status (2.47, 1.64, 2.05:
  missing values, so unmaskable, and still about 2 per table under the plug-in tree, against
  CART's 1.21); age, education and gender average 0.55-0.94.
- fair (3,000 rows): 44 settings, converged; tune's validation fallback tried age sigma 6 / educ
  sigma 20 and age sigma 10 / educ sigma 20 (validated copies above CART's risk: expected matches
  12.6 / 12.1) and validated age sigma 20 / educ sigma 20. Worst one-way 0.97 +- 0.07 vs bound 2.69
  (CART 1.35: the tuned release's one-way tables are now below CART's); held-out overlap 0.913 +-
  0.025 vs CART 0.905 +- 0.015 (+0.009, MC se 0.029); declared 0.915 vs 0.886; expected matches
  11.64 vs 11.24, true-match rate 0.00058 vs 0.00064 (within MC error). Battery 0.874 vs 0.864,
  within MC error. Caveat as above: validated and measured on the same seeds 0-2.
- anes96 (944 rows): PASSES. 52 settings, two coordinate cycles, converged; masks age sigma 20,
  educ alpha 1 (validated first). Worst one-way 1.36 +- 0.03 vs bound 2.34 (CART 1.17); held-out
  overlap 0.898 +- 0.009 vs CART 0.827 +- 0.025 (+0.071, MC se 0.027); declared 0.731 vs 0.647;
  expected matches 7.05 vs 7.93, true-match rate 0.0050 vs 0.0054. Battery 0.801 vs 0.746,
  within MC error.
- Adult (5,000 rows; 60-point budget): FAILS the held-out check. 54 settings, coordinate search
  converged (a 40-point run, cut by the point limit at 38, chose and validated the same setting,
  with identical figures); every setting with an age mask that tune confirmed was
  above CART's risk (expected matches 6.2-7.0 against 5.35 +- 0.11), so tune chose sex alpha 0.5
  alone: worst one-way 1.25 +- 0.30 vs bound 2.69 (CART 1.34, passes); held-out overlap 0.862 +-
  0.023 vs CART 0.920 +- 0.009 (-0.059, MC se 0.025: below beyond 2 x MC se); declared 0.865 vs
  0.857; expected matches 4.36 vs 5.35, true-match rate 0.00003 vs 0.00007 (below CART's risk:
  the risk budget is not spent). Battery 0.825 vs CART's 0.858 (within MC error).
  Why: the plug-in tree DA-MI is not CART-equivalent even with no masks. tune's unmasked search
  point (3 copies, seed 0 footing) has lower risk than CART on every file (expected matches Adult
  4.37 vs 5.35, NHANES 13.2 vs 21.7, fair 10.4 vs 11.2, anes96 2.6 vs 7.9) and, on Adult, a lower
  battery (0.797 vs 0.858): the QIs' trees inside the joint predictive carry less of the QI-kept
  relation than CART's sequential trees (the held-out analysis is the kept hours_per_week on age x
  sex), and on Adult the masks that would add it back (age) cost more risk than CART's. The gap is
  the conditional model's (models/tree.py, another branch), not tune's choice.

Re-run on CART's partition (27 Nov 2026 19:24-19:52, after ``TreeDesign`` was merged; load 1-4, a
fresh-clone test run alongside for part of it; same command; the ``FILE:improper`` rows until the leaf-search runs below replaced them):
with no masks the plug-in tree DA-MI is now synthpop's cart on the same partition, so every mask
adds risk on top of CART's, and what tune can buy at CART's risk is small.

- Adult: masks education alpha 1 (49 settings, converged). Worst one-way 1.45 +- 0.17 vs bound
  2.69; held-out 0.931 +- 0.027 vs CART 0.920 +- 0.009 (+0.011, MC se 0.028); expected matches
  5.83 +- 0.43 vs 5.35 +- 0.11 and true-match rate 0.00005 vs 0.00007 (at CART's risk within MC
  error); battery 0.843 vs 0.858 (within MC error). Passes both checks (it failed on the former
  design: its unmasked trees had less risk and less utility than CART).
- anes96: masks age sigma 6, educ alpha 0.5 (43 settings, converged). Worst one-way 1.24 +- 0.28 vs
  bound 2.34; held-out 0.918 +- 0.017 vs CART 0.827 +- 0.025 (+0.091, MC se 0.030); expected
  matches 8.41 +- 0.83 vs 7.93 +- 0.54, true-match rate 0.0057 vs 0.0054 (within MC error);
  battery 0.809 vs 0.746 (within MC error). Passes.
- fair: masks age sigma 10 (45 settings, converged). Worst one-way 1.59 +- 0.34 vs bound 2.69;
  held-out 0.879 +- 0.019 vs CART 0.905 +- 0.015 (-0.026, MC se 0.024: not below beyond MC error,
  but a lower point estimate); expected matches 10.89 vs 11.24, true-match rate 0.00047 vs 0.00064;
  battery 0.871 vs 0.864. The one-way check passes; the held-out one only within MC error.
- NHANES: masks age sigma 10, gender alpha 0.5, race_ethnicity alpha 0.5 (39 settings, converged).
  Worst one-way 2.36 +- 0.10 vs bound 3.12; held-out 0.818 +- 0.011 vs CART 0.816 +- 0.010; but
  the release is ABOVE CART's risk: expected matches 23.69 +- 0.74 vs 21.73 +- 0.58 (true-match
  rate 0.00072 vs 0.00054). tune validated three confirmed candidates and none met the risk
  target on its fresh copies, so it returned the most useful one, flagged
  (``validation_tried``). Not a pass: at CART's risk no mask survives validation on NHANES.

Leaf size searched with the masks (27 Nov 2026 21:38-22:09, load 3-12: three helpers' jobs; the
``FILE:improper`` rows of all four files now hold these runs): tune searches the trees' minimum leaf size
(``--leaf-grid 5,10,20,40``, opt-in in tune since these runs, the benchmark's default; one size for all tree QIs, written into the spec's
``"models"``) with the masks: one greedy ascent of the masks per leaf size, finest first, each from
the masks where the previous one stopped, then the diagonal and the coordinate search over the whole
lattice (``synthmi.workflow.tuning.tune``, ``leaf_grid``). Same command, ``--max-search-points 60``.

- NHANES: min_leaf 10, masks age sigma 10, gender alpha 2, race_ethnicity alpha 5 (54 settings: the four
  ascents stopped at the risk boundary, the coordinate search was cut by the 60-point budget in its
  first cycle; the first confirmed setting validated feasible). Worst one-way 1.72 +- 0.13 vs bound
  3.12 (CART 1.56 +- 0.16): passes. Risk: expected matches 23.37 +- 0.60 vs CART 21.73 +- 0.58
  (+1.64, within 2 x MC se = 1.66: at CART's risk by the MC rule, but above it in the point
  estimate), true-match rate 0.00048 +- 0.00006 vs 0.00054 +- 0.00006 (below). Held-out overlap
  0.794 +- 0.031 vs CART 0.816 +- 0.010 (-0.022, MC se 0.033: not below beyond MC error, but a lower
  point estimate; per seed 0.855 / 0.779 / 0.749 against CART's 0.833 / 0.817 / 0.798). Declared
  0.867 +- 0.015 vs 0.722 +- 0.043 (+0.145); battery 0.813 vs CART's 0.801, within MC error
  (``versus_reference``). So NHANES meets all three checks as this script defines them (risk and
  held-out within MC error of CART's), where it missed the risk one before (23.69 +- 0.74, no
  validated setting at CART's risk); strictly, two point estimates are on CART's wrong side:
  expected matches +7.5% and held-out -0.022. The leaf size bought the risk: the masks where the
  min_leaf 5 ascent stopped (near CART's risk there) had 11.0 expected matches at min_leaf 10 (search
  copies), and the min_leaf 10 ascent spent the rest on stronger masks (race alpha 5; search battery
  0.76 -> 0.82). Why no coarser leaf was chosen: the min_leaf 20 ascent (from min_leaf 10's masks)
  reached a search battery of 0.80 at most, and unmasked trees at 20 and 40 lose utility and
  margins (measured by the first version's search, below: battery 0.715 / 0.676 against 0.786 at 5,
  worst one-way 4.65 / 5.75 above the table rule's 3.12).
  A first version of the search (one ascent over the whole lattice, the leaf size a coordinate like
  a mask; run 21:10-21:25, not in the JSON) walked to min_leaf 5 first and tried min_leaf 10 only
  with weak masks (7.9 expected matches), so it chose min_leaf 5, age sigma 20, gender alpha 1: worst
  one-way 2.58 +- 0.06, held-out 0.850 +- 0.016 vs 0.816, expected matches 20.49 +- 0.38, but
  true-match rate 0.00071 +- 0.00005 vs 0.00054 +- 0.00006, above CART's beyond MC error (all three
  validated candidates missed it); hence the per-leaf ascents.
- fair (3,000 rows; run 21:38-21:56 beside NHANES at nice 19): min_leaf 5, masks age sigma 20, educ
  sigma 20 (58 settings, the coordinate search cut by the 60-point budget in its first cycle; the
  first confirmed setting, age sigma 10, missed a target on fresh copies, the second validated).
  Worst one-way 0.99 +- 0.12 vs bound 2.69 (CART 1.35 +- 0.16): passes. Held-out overlap 0.905 +-
  0.018 vs CART 0.905 +- 0.015 (+0.001, MC se 0.024): passes, and no longer below in the point
  estimate (0.879 in the run above). Risk: expected matches 11.64 +- 0.48 vs 11.24 +- 0.09 (within
  MC error), true-match rate 0.00058 +- 0.00008 vs 0.00064 +- 0.00008. Declared 0.925 vs 0.886;
  battery 0.878 vs 0.864 (within MC error). The leaf search chose CART's own leaf size: the gain over
  the run above is the other masks the per-leaf ascents reached at min_leaf 5 (age sigma 20 and educ
  sigma 20 against age sigma 10 alone), not a coarser leaf (the min_leaf 10-40 ascents measured 39
  settings; the three confirmed candidates were all at min_leaf 5). Caveat as before: validated and measured on seeds 0-2,
  choosing between two settings on them.
- anes96 (run 22:02-22:08, load 3-6): min_leaf 5 and the same masks as the CART's-partition run (age
  sigma 6, educ alpha 0.5; 57 settings, coordinate search cut by the budget; the min_leaf 20
  candidates confirmed were above CART's risk), so the same release and figures: passes (held-out
  0.918 +- 0.017 vs 0.827 +- 0.025; one-way 1.24 vs bound 2.34; expected matches 8.41 +- 0.83 vs
  7.93 +- 0.54).
- Adult (5,000 rows; run 22:02-22:09): FAILS, where the CART's-partition run without the leaf search
  passed. tune chose min_leaf 20, masks education alpha 1, race alpha 1.5, sex alpha 1 (57 settings,
  coordinate search cut by the budget; of the three confirmed candidates one met the targets, and on
  its fresh copies it missed the risk target, so tune returned it flagged). Worst one-way 1.56 +-
  0.09 vs bound 2.69 (passes); held-out overlap 0.862 +- 0.010 vs CART 0.920 +- 0.009 (-0.058, MC se
  0.014: below beyond MC error); expected matches 5.76 +- 0.07 vs 5.35 +- 0.11 (above beyond 2 MC
  se), true-match rate 0.00009 vs 0.00007 (within). Declared 0.895 vs 0.857 (+0.038); battery 0.843
  vs 0.858 (within MC error). The coarser leaves bought the declared analysis (income on the QIs)
  and lost the held-out one (hours_per_week on age x sex, education, marital status: the kept
  columns' relation with the QIs that 20-record leaves blur), which tune's battery (additive generic
  regressions) does not see. ``--leaf-grid none`` gives the earlier search (the CART's-partition row:
  held-out 0.931, passes).

Verdict of the leaf search (improper variant, seeds 0-2, M = 5): NHANES now meets the three checks
within MC error (it missed the risk check), fair improves to a pass in the point estimate too, anes96
is unchanged, Adult regresses to a fail on the held-out check and on expected matches. The leaf size
is a coarse knob for every tree at once: it moves the analyses tune is not given, which only a
battery with interactions of the kept columns and the QIs (issue 29 item 3) would guard. So tune's
leaf search is opt-in (``--leaf-grid``, default none); this benchmark passes ``--leaf-grid 5,10,20,40``.

Re-run on the merged code (27 Nov 2026 22:16-22:26, load 2-4; ``--files fair,anes96`` and ``--files
nhanes,adult``, ``--variant improper --max-search-points 60 --merge``), after utility_tables gave a
point mass its own cell (``synthmi.evaluation.pmse.numeric_table_edges``; fair's age has two values
above 20% of the rows): every file chose the same setting and gave the same risk and overlap figures;
only fair's one-way S_pMSE moved (CART 1.346 -> 1.373, tuned 0.987 -> 1.018; bound 2.75). The
default-models rows (``FILE`` without ``:improper``) were measured before that change and not re-run.

The tree's donors' values by default and the fuller battery (28 Nov 2026 00:03-00:16, load 2-5, a test
run alongside; ``--files nhanes,anes96`` and ``--files adult,fair``, ``--variant improper
--max-search-points 60 --merge``; the ``FILE:improper`` rows now hold these runs). Two changes since the
runs above: the tree conditional gives a numeric column of at most 500 values the donors' values by
default (discrete leaves, as CART draws; ``synthmi.models.tree``), so the unmasked plug-in tree DA-MI is
CART's draw on CART's partition; and the battery's second generic regression per outcome adds the
quasi-identifiers' interactions that involve a numeric one and the other kept columns
(``synthmi.evaluation.battery``). With no masks at min_leaf 5 the tree is then at CART's risk, so tune's
search copies put that origin above CART's mean on NHANES and Adult ("min_leaf 5: origin infeasible"): the
masks are bought with coarser leaves. Mean +- MC SE over seeds 0-2:

- Adult: min_leaf 20, masks age sigma 20, race alpha 1, sex alpha 1 (59 settings). Worst one-way 1.18 +-
  0.13 vs bound 2.69; held-out 0.928 +- 0.018 vs CART 0.920 +- 0.009 (+0.007); expected matches 5.33 +-
  0.12 vs 5.35 +- 0.11, true-match rate 0.00005 vs 0.00007; declared 0.894 vs 0.857; battery 0.874 vs
  CART's 0.882 (within MC error). PASSES (it failed with the leaf search before: held-out 0.862).
- fair: min_leaf 5, mask age sigma 10 (58 settings). Worst one-way 1.54 +- 0.37 vs bound 2.75; held-out
  0.879 +- 0.019 vs 0.905 +- 0.015 (-0.026, MC se 0.024: within); expected matches 10.89 vs 11.24.
  Passes (within MC error; a lower point estimate).
- anes96: min_leaf 20, masks age sigma 20, educ alpha 2 (57 settings; the min_leaf 40 candidate validated
  above CART's risk, the next one validated). Worst one-way 1.33 +- 0.02 vs bound 2.34; held-out 0.805 +-
  0.027 vs 0.827 +- 0.025 (-0.023, MC se 0.037: within); expected matches 5.07 vs 7.93. Passes (the
  earlier run's +0.09 gain is gone: its unmasked kernel tree had less risk than CART, so more room for masks).
- NHANES: min_leaf 20, masks age sigma 6, gender alpha 1, race_ethnicity alpha 5 (54 settings). Worst
  one-way 1.40 +- 0.28 vs bound 3.12; expected matches 22.23 +- 0.37 vs 21.73 +- 0.58 (within), true-match
  rate 0.00048 vs 0.00054; battery 0.808 vs CART's 0.808; but held-out 0.760 +- 0.022 vs 0.816 +- 0.010
  (-0.056, MC se 0.025: below by 2.3 MC se, the rule allows 2): FAILS. Per seed 0.773 / 0.790 / 0.716
  against CART's 0.833 / 0.817 / 0.798. The held-out analysis (total cholesterol on age x gender, marital
  status, bmi) is a sub-model of the battery's fuller cholesterol regression, whose many coefficients
  (age by race, education and marital status) average the loss away; leaves of 20 also blur the
  unmaskable education and marital_status (missing values), which the held-out analysis uses.
- A run between the two changes (the discrete default with interactions but no kept covariates in the
  battery; not in the JSON): Adult min_leaf 40, validated above CART's risk (6.14 vs 5.35, flagged by
  tune), held-out 0.920; NHANES the same choice and failure (0.759); fair and anes96 pass.

Verdict: three of four files pass all checks (one-way, held-out, risk) with the leaf search; NHANES fails the
held-out check by 0.007 beyond its allowance. No configuration measured so far passes all four.

Run: ``nice -n 10 python benchmarks/tune_files.py`` (from the repo, PYTHONPATH=.). Writes
``benchmarks/results/tune_files.json`` and ``tune_files.csv`` and prints a table. The improper rows:
``--files FILE --variant improper --max-search-points 60 --merge``, one file per run (each row records
tune's chosen ``min_leaf`` and its ``leaf_grid``; None in rows measured before the leaf search).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import RESULTS, environment, write_json  # noqa: E402

M = 5


def fair(rows: int | None) -> pd.DataFrame:
    import statsmodels.api as sm

    d = sm.datasets.fair.load_pandas().data
    # the binary outcome statsmodels' own example analyses (any time spent in affairs)
    d["affair"] = (d["affairs"] > 0).astype(int)
    d = d.drop(columns="affairs")
    if rows is not None and rows < len(d):
        d = d.sample(rows, random_state=2029).reset_index(drop=True)
    return d


def anes96(rows: int | None) -> pd.DataFrame:
    import statsmodels.api as sm

    d = sm.datasets.anes96.load_pandas().data
    return d[["age", "educ", "income", "PID", "vote", "selfLR", "TVnews", "popul"]]


def adult(rows: int | None) -> pd.DataFrame:
    from synthmi.data import load_adult

    # the bundled demo's columns (synthmi.data.workloads.ADULT_DEMO: QIs age, sex, race, education, recoded)
    d = load_adult(recode=True)[["age", "sex", "race", "education", "marital_status", "hours_per_week", "income"]]
    if rows is not None and rows < len(d):
        d = d.sample(rows, random_state=2029).reset_index(drop=True)
    return d


def nhanes(rows: int | None) -> pd.DataFrame:
    from synthmi.data import load_nhanes

    # the bundled NHANES table's columns (benchmarks/nhanes_table.py: QI, Z), recoded; missing values kept
    d = load_nhanes(recode=True)[["age", "gender", "race_ethnicity", "education", "marital_status", "bmi",
                                  "income_poverty_ratio", "total_cholesterol", "diabetes", "smoked_100_cigarettes"]]
    d = d.reset_index(drop=True)
    if rows is not None and rows < len(d):
        d = d.sample(rows, random_state=2029).reset_index(drop=True)
    return d


FILES = {
    "adult": {
        "load": adult,
        "qi": ["age", "sex", "race", "education"],
        "keep": ["marital_status", "hours_per_week", "income"],
        "categorical": ["sex", "race", "education", "marital_status", "income"],
        "declared": ("income ~ age + sex + race + education", "probit"),
        # never given to tune: a kept continuous outcome with an age x sex interaction and marital status
        "held_out": ("hours_per_week ~ age * C(sex) + C(education) + C(marital_status)", "gaussian"),
        "tol": ["age=1"],
    },
    "nhanes": {
        "load": nhanes,
        "qi": ["age", "gender", "race_ethnicity", "education", "marital_status"],
        "keep": ["bmi", "income_poverty_ratio", "total_cholesterol", "diabetes", "smoked_100_cigarettes"],
        "categorical": ["gender", "race_ethnicity", "education", "marital_status", "diabetes",
                        "smoked_100_cigarettes"],
        "declared": ("diabetes ~ age + gender + race_ethnicity + education + bmi", "probit"),
        # never given to tune: another kept outcome, an age x gender interaction, marital status
        "held_out": ("total_cholesterol ~ age * C(gender) + C(marital_status) + bmi", "gaussian"),
        "tol": ["age=1"],
    },
    "fair": {
        "load": fair,
        "qi": ["age", "educ", "occupation", "religious"],
        "keep": ["rate_marriage", "yrs_married", "children", "occupation_husb", "affair"],
        "categorical": ["occupation", "religious"],
        "declared": ("affair ~ age + educ + C(religious) + C(occupation) + rate_marriage", "probit"),
        # never given to tune: an interaction of two QIs, with a kept predictor (not in tune's battery,
        # whose generic regressions are additive: quadratic in numeric QIs, factors for categorical ones)
        "held_out": ("affair ~ age * C(religious) + educ + yrs_married", "probit"),
        "tol": ["age=1"],
    },
    "anes96": {
        "load": anes96,
        "qi": ["age", "educ", "income"],
        "keep": ["PID", "vote", "selfLR", "TVnews", "popul"],
        "categorical": ["educ"],
        "declared": ("vote ~ age + C(educ) + income + selfLR", "probit"),
        "held_out": ("selfLR ~ age * income + C(educ)", "gaussian"),
        "tol": ["age=1"],
    },
}


def cli(args: list[str], log: Path) -> float:
    """Run ``python -m synthmi ARGS`` (the worktree's package); its CPU seconds (children)."""
    env = dict(os.environ)
    env.setdefault("PYTHONPATH", str(Path(__file__).resolve().parents[1]))
    c0 = os.times()
    with log.open("a") as fh:
        fh.write("$ synthmi " + " ".join(args) + "\n")
        fh.flush()
        rc = subprocess.run([sys.executable, "-m", "synthmi", *args], stdout=fh, stderr=subprocess.STDOUT,
                            env=env).returncode
    c1 = os.times()
    if rc not in (0, 2):
        raise RuntimeError(f"synthmi {args[0]} failed (exit {rc}); see {log}")
    return (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def measure(csv: Path, copies: Path, cfg: dict, work: Path, log: Path, tol_items: list[str] | None = None) -> dict:
    """The figures of one release (a directory of copies) by the review commands."""
    u, h, d, k = (work / f"{copies.name}_{x}.json" for x in ("utility", "heldout", "declared", "disclosure"))
    cli(["utility", "--original", str(csv), "--synthetic", str(copies), "--tables", "1", "--seed", "0",
         "--out", str(u), "--overwrite", "--quiet"], log)
    for (formula, family), out in ((cfg["held_out"], h), (cfg["declared"], d)):
        cli(["analyse", "--original", str(csv), "--synthetic", str(copies), "--formula", formula, "--family", family,
             "--out", str(out), "--overwrite", "--quiet"], log)
    tol = [a for t in (cfg["tol"] if tol_items is None else tol_items) for a in ("--tol", t)]
    cli(["disclosure", "--original", str(csv), "--synthetic", str(copies), "--qi", ",".join(cfg["qi"]), *tol,
         "--out", str(k), "--overwrite", "--quiet"], log)
    tabs = [t for t in json.loads(u.read_text())["utility_tables"]["tables"]
            if t["way"] == 1 and not t["released_unchanged"]]
    worst = max(tabs, key=lambda t: t["s_pmse"])
    risk = json.loads(k.read_text())["summary"]
    return {"worst_one_way_s_pmse": float(worst["s_pmse"]), "worst_one_way_table": worst["variables"],
            "one_way": {t["variables"]: float(t["s_pmse"]) for t in tabs},
            "held_out_overlap": float(json.loads(h.read_text())["mean_ci_overlap"]),
            "declared_overlap": float(json.loads(d.read_text())["mean_ci_overlap"]),
            "expected_matches": float(risk["expected_matches"]), "true_match_rate": float(risk["true_match_rate"])}


FIGS = ("worst_one_way_s_pmse", "held_out_overlap", "declared_overlap", "expected_matches", "true_match_rate")


def summarise(rows: list[dict]) -> dict:
    t = pd.DataFrame(rows)
    out = {k: float(t[k].mean()) for k in FIGS}
    out.update({f"{k}_se": float(t[k].std(ddof=1) / np.sqrt(len(t))) for k in FIGS})
    out["one_way_mean"] = {c: float(np.mean([r["one_way"][c] for r in rows])) for c in rows[0]["one_way"]}
    return out


def run_file(name: str, cfg: dict, rows: int | None, seeds: list[int], work: Path, search_s: float | None,
             m_search: int = 3, relax: float | None = None, skip_default: bool = False,
             search_points: int | None = None, variant: str = "default", leaf_grid: str = "none") -> dict:
    log = work / f"{name}.log"
    df = cfg["load"](rows)
    csv = work / f"{name}.csv"
    df.to_csv(csv, index=False)  # as a new user saves a data set to try the tool on
    base = ["--data", str(csv), "--qi", ",".join(cfg["qi"]), "--keep", ",".join(cfg["keep"]),
            "--categorical", ",".join(cfg["categorical"])]
    t0 = time.perf_counter()
    cpu = {"cart": 0.0, "tune": 0.0, "tuned": 0.0}
    cart = []
    for s in seeds:
        out = work / f"{name}_cart_{s}"
        cpu["cart"] += cli(["synthesize", *base, "--method", "cart", "--m", str(M), "--seed", str(s), "--out",
                            str(out), "--overwrite", "--quiet"], log)
        cart.append({"seed": s, **measure(csv, out, cfg, work, log)})
    print(f"[{name}] CART measured ({time.perf_counter() - t0:.0f} s)", flush=True)
    tol = [a for t in cfg["tol"] for a in ("--tol", t)]
    common = [*tol, "--target", "expected_matches<=cart", "--target", "true_match_rate<=cart",
              "--m", str(M), "--replicates", str(len(seeds)), "--reference-replicates", str(len(seeds)),
              "--seed", str(seeds[0]), "--jobs", "1", "--overwrite", "--m-search", str(m_search),
              # the search's budget in settings measured (the same search on any machine); seconds only if asked
              *(["--max-search-points", str(search_points)] if search_points is not None else []),
              *(["--max-search-seconds", str(search_s)] if search_s is not None else []),
              # the trees' leaf size searched with the masks (opt-in: tune --leaf-grid)
              "--leaf-grid", leaf_grid]
    # the improper variant: every QI a tree (the spec's "models") with the plug-in leaves (synthpop's
    # proper = FALSE, as CART draws), given to tune and, the same --param, to synthesize --spec
    params = ["--param", "proper=false"] if variant == "improper" else []
    common += params
    if variant == "improper":
        skip_default = True
    attempts = []
    tol_items = None
    spec, trace = work / f"{name}_tuned.json", work / f"{name}_trace.json"
    if skip_default:
        # the default models' tune was run (and found infeasible) in an earlier run of this script,
        # whose infeasible tables named every QI (NHANES: age's one-way S_pMSE 124 against a bound of 3.0)
        rec = {}
        if variant == "default":
            attempts.append({"how": "tune with DA-MI's default models: not rerun (--skip-default; infeasible in an "
                                    "earlier run, its tables naming every QI)", "masks": None, "infeasible": None})
        broken = list(cfg["qi"])
    else:
        cpu["tune"] = cli(["tune", *base, "--analysis", cfg["declared"][0], "--family", cfg["declared"][1], *common,
                           "--out", str(spec), "--trace", str(trace)], log)
        rec = json.loads(trace.read_text())
        attempts.append({"how": "tune with DA-MI's default models", "masks": rec.get("masks"),
                         "infeasible": (rec.get("search") or {}).get("infeasible")})
        print(f"[{name}] tune: masks {rec.get('masks')} ({time.perf_counter() - t0:.0f} s)", flush=True)
        info = (rec.get("search") or {}).get("infeasible") or {}
        # the QIs named in any table above its bound (one- or two-way), as tune lists them
        broken = sorted({v for t in info.get("tables") or [] for v in t["table"].split(":")} & set(cfg["qi"]))
    if not spec.exists() and broken:
        # what tune's message suggests and a user then does: the named numeric QIs given a tree (DA-MI's
        # flexible conditional, maskable in the joint predictive) in the spec's "models"; a few-valued one
        # (fair's bracketed age, its six schooling levels) gets the tree's discrete leaves (models/tree.py)
        # every QI named in a broken table, numeric or categorical (fair with trees for age and educ
        # only: one-way tables fine, two-way educ:occupation 4.9 against a bound of 3.3, the multinomial
        # model of occupation being linear in educ)
        trees = list(broken)
        draft = work / f"{name}_spec.json"
        cli(["spec", *base, "--analysis", cfg["declared"][0], "--family", cfg["declared"][1], "--out", str(draft),
             "--overwrite", "--quiet"], log)
        d = json.loads(draft.read_text())
        if trees:
            d["models"] = {c: "tree" for c in trees}
        draft.write_text(json.dumps(d, indent=2))
        spec, trace = work / f"{name}_tuned_tree.json", work / f"{name}_trace_tree.json"
        cpu["tune"] += cli(["tune", "--data", str(csv), "--spec", str(draft), *common, "--out", str(spec),
                            "--trace", str(trace)], log)
        rec = json.loads(trace.read_text())
        attempts.append({"how": f"tune --spec with \"models\": {json.dumps(d.get('models'))} "
                                + ("--param proper=false" if params else "(tune's hint followed)"),
                         "masks": rec.get("masks"), "infeasible": (rec.get("search") or {}).get("infeasible")})
        print(f"[{name}] tune with trees for {trees}: masks {rec.get('masks')} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    if not spec.exists() and relax:
        # tune's two-way rule is stricter than the must-show (one-way within 2x CART): if no setting
        # meets it, the tuned release is also reported under a relaxed --max-table-ratio, said so
        last = list(attempts[-1:])
        src = ["--spec", str(draft)] if len(attempts) > 1 else [*base, "--analysis", cfg["declared"][0],
                                                                  "--family", cfg["declared"][1]]
        spec, trace = work / f"{name}_tuned_relaxed.json", work / f"{name}_trace_relaxed.json"
        cpu["tune"] += cli(["tune", *(["--data", str(csv)] if len(attempts) > 1 else []), *src, *common,
                            "--max-table-ratio", str(relax), "--out", str(spec), "--trace", str(trace)], log)
        rec = json.loads(trace.read_text())
        attempts.append({"how": f"{last[0]['how'] if last else 'tune'} with --max-table-ratio {relax:g} (tune's default "
                                "2 infeasible; the must-show's one-way rule is checked below)",
                         "max_table_ratio": relax, "masks": rec.get("masks"),
                         "infeasible": (rec.get("search") or {}).get("infeasible")})
        print(f"[{name}] tune with --max-table-ratio {relax:g}: masks {rec.get('masks')} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)
    tuned = []
    if spec.exists():
        for s in seeds:
            out = work / f"{name}_tuned_{s}"
            cpu["tuned"] += cli(["synthesize", "--data", str(csv), "--spec", str(spec), "--method", "dami", "--m", str(M),
                                 "--seed", str(s), "--out", str(out), "--overwrite", "--quiet", *params], log)
            tuned.append({"seed": s, **measure(csv, out, cfg, work, log, tol_items)})
    c, t = summarise(cart), (summarise(tuned) if tuned else None)
    checks = None
    if t is not None:
        diff = t["held_out_overlap"] - c["held_out_overlap"]
        mc = float(np.hypot(t["held_out_overlap_se"], c["held_out_overlap_se"]))
        checks = {"one_way_within_2x_cart": t["worst_one_way_s_pmse"] <= 2 * c["worst_one_way_s_pmse"],
                  "held_out_overlap_minus_cart": diff, "held_out_mc_se": mc,
                  "held_out_not_below_cart": diff >= -2 * mc,
                  "risk_at_or_below_cart": {k: t[k] <= c[k] + 2 * float(np.hypot(t[f"{k}_se"], c[f"{k}_se"]))
                                            for k in ("expected_matches", "true_match_rate")}}
    search = rec.get("search") or {}
    return {"rows": len(df), "rows_in_file": {"fair": 6366, "anes96": 944, "adult": 48842, "nhanes": 5265}[name], "qi": cfg["qi"],
            "keep": cfg["keep"], "categorical": cfg["categorical"], "declared": cfg["declared"],
            "held_out": cfg["held_out"], "tolerance": cfg["tol"], "seeds": seeds, "m": M,
            "variant": variant, "cart": c, "tuned": t, "checks": checks, "tune_attempts": attempts, "m_search": m_search, "cart_per_seed": cart, "tuned_per_seed": tuned,
            "tune": {"masks": rec.get("masks"), "min_leaf": rec.get("min_leaf"),
                     "leaf_grid": search.get("leaf_grid"), "leaf_columns": search.get("leaf_columns"),
                     "validated": {k: (rec.get("validated") or {}).get(k) for k in (
                "mean_ci_overlap", "battery_ci_overlap", "worst_one_way_s_pmse", "worst_two_way_s_pmse",
                "expected_matches", "true_match_rate")},
                "base_params": {k: v for k, v in (search.get("base_params") or {}).items()
                                if k not in ("accept_diagnostics", "rhat_max", "ess_min")},
                "reference": search.get("reference"), "table_caps": search.get("table_caps"),
                "infeasible": search.get("infeasible"), "search_points": search.get("search_points"),
                "max_search_points": search.get("max_search_points"),
                "max_search_seconds": search.get("max_search_seconds"),
                "search_stopped_by": search.get("search_stopped_by"),
                "coordinate_search": search.get("coordinate_search"),
                "versus_reference": search.get("versus_reference"),
                "validation_tried": (search.get("validation") or {}).get("tried"),
                "not_tried": search.get("not_tried"), "wall_seconds": rec.get("wall_seconds")},
            "cpu_seconds": cpu, "wall_seconds": time.perf_counter() - t0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", default="fair,anes96")
    ap.add_argument("--fair-rows", type=int, default=3000, help="fair's rows, subsampled (seeded) for the CPU budget")
    ap.add_argument("--adult-rows", type=int, default=5000,
                    help="Adult's rows, subsampled (seeded) for the CPU budget (all 48,842 do not fit)")
    ap.add_argument("--replicates", type=int, default=3, help="seeds of CART and of the tuned release (>= 3)")
    ap.add_argument("--max-search-seconds", type=float, default=None,
                    help="tune's wall budget (default none: what it reaches depends on the machine's load)")
    ap.add_argument("--max-search-points", type=int, default=60,
                    help="tune's search budget in mask settings measured (default 60; the same search on any machine)")
    ap.add_argument("--m-search", type=int, default=3,
                    help="tune's copies per search candidate (its default 3; 5 = CART's reference footing)")
    ap.add_argument("--relax-table-ratio", type=float, default=None,
                    help="if tune's default table rule (--max-table-ratio 2) is infeasible, tune again with this ratio")
    ap.add_argument("--skip-default", default="", help="files whose default-models tune is not rerun (found "
                    "infeasible earlier, naming every QI): straight to the spec with trees")
    ap.add_argument("--variant", choices=("default", "improper"), default="default",
                    help="improper: every QI a tree with plug-in leaves (spec models + --param proper=false, given to "
                    "tune and synthesize --spec); recorded as FILE:improper beside the default rows")
    ap.add_argument("--merge", action="store_true", help="keep the recorded results of the files not run now")
    ap.add_argument("--leaf-grid", default="5,10,20,40",
                    help="tune --leaf-grid (default here 5,10,20,40: the committed FILE:improper rows; 'none': the "
                         "masks alone, tune's default)")
    a = ap.parse_args()
    seeds = list(range(a.replicates))
    work = Path(tempfile.mkdtemp(prefix="tune_files_"))
    print(f"work dir {work}", flush=True)
    new = {}
    for name in [f for f in a.files.split(",") if f]:  # --files "" --merge: rewrite the table only
        rows = {"fair": a.fair_rows, "adult": a.adult_rows}.get(name)
        env = environment()  # the load at this file's start
        key = name if a.variant == "default" else f"{name}:{a.variant}"
        new[key] = run_file(name, FILES[name], rows, seeds, work,
                            a.max_search_seconds, a.m_search, a.relax_table_ratio,
                            name in a.skip_default.split(","), a.max_search_points, a.variant, a.leaf_grid)
        new[key]["environment"] = env
    out = {}
    if a.merge and (RESULTS / "tune_files.json").exists():
        # read after the runs (not before): runs of other files in parallel processes that finished
        # meanwhile are kept
        out = json.loads((RESULTS / "tune_files.json").read_text())["files"]  # the files not run now, as recorded
    out.update(new)
    rows = []
    for name, r in out.items():
        for rel in ("cart", "tuned"):
            s = r[rel]
            if s is None:
                continue
            rows.append({"file": name, "release": rel, "rows": r["rows"],
                         **{k: s[k] for k in FIGS}, **{f"{k}_se": s[f"{k}_se"] for k in FIGS},
                         "masks": json.dumps(r["tune"]["masks"], sort_keys=True) if rel == "tuned" else "",
                         "min_leaf": r["tune"].get("min_leaf") if rel == "tuned" else "",
                         "tuned_by": r["tune_attempts"][-1]["how"] if rel == "tuned" else "",
                         "max_table_ratio": r["tune_attempts"][-1].get("max_table_ratio", 2.0) if rel == "tuned" else "",
                         "one_way_within_2x_cart": (r["checks"] or {}).get("one_way_within_2x_cart") if rel == "tuned" else "",
                         "held_out_not_below_cart": (r["checks"] or {}).get("held_out_not_below_cart") if rel == "tuned" else ""})
    table = pd.DataFrame(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / "tune_files.csv", index=False)
    write_json("tune_files", {"m": M, "seeds": seeds, "files": out})
    with pd.option_context("display.width", 200, "display.max_columns", 30):
        print(table[["file", "release", "worst_one_way_s_pmse", "held_out_overlap", "held_out_overlap_se",
                     "declared_overlap", "expected_matches", "true_match_rate", "one_way_within_2x_cart",
                     "held_out_not_below_cart"]].to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    for name, r in out.items():
        if r["tuned"] is None:
            print(f"{name}: tune found no feasible setting: {json.dumps(r['tune']['infeasible'])}")


if __name__ == "__main__":
    main()
