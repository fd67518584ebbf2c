"""``synthmi synthesize --save-model DIR`` and ``--model DIR``: fit once, draw more copies later
without refitting, through the same diagnostics check and release guard (issue 28 item 4)."""
from __future__ import annotations

import hashlib
import json
import shutil

import pandas as pd
import pytest

from synthmi.cli import main
from synthmi.data import load_adult
from synthmi.models.base import Synthesizer
from synthmi.synthetic import SyntheticData

QI = ["age", "sex", "race"]
KEEP = ["income", "hours_per_week"]

# Per method: the fit options (small: short chains for risk-dami, whose short chain fails the
# convergence check, so the fit records --accept-diagnostics, the override a saved model keeps),
# and whether the saved model holds no records (the release guard then needs --original).
METHOD_ARGS = {
    "cart": ([], True),
    "rubin": ([], False),
    "dami": (["--mask", "age:K=2,sigma=3", "--mask", "sex:p=0.8"], False),
    # (on these 300 rows no record is in the high-risk subgroup, which therefore takes no mask)
    "risk-dami": (["--mask", "age@low:K=2,sigma=2", "--mask", "age@medium:K=1,sigma=4", "--param", "n_iter=60", "--param", "burn=20",
                   "--max-seconds", "none", "--accept-diagnostics"], False),
    # the public domain is declared (never read from the data): documented Adult levels and ranges
    "dpsyn": (["--bounds", "age=17:90", "--bounds", "hours_per_week=1:99", "--levels", "sex=Female,Male",
               "--levels", "race=non-white,white", "--levels", "income=<=50K,>50K",
               "--param", "epsilon=1", "--param", "delta=1e-9"], False),
}
# (each case runs in under 2 s on 300 rows, so none is marked slow)


@pytest.fixture(scope="module")
def adult_csv(tmp_path_factory):
    df = load_adult(recode=True)[QI + KEEP].sample(300, random_state=1).reset_index(drop=True)
    path = tmp_path_factory.mktemp("data") / "adult_small.csv"
    df.to_csv(path, index=False)
    return path


def _fit(csv, method: str, out, model, seed: int = 1) -> int:
    extra, _ = METHOD_ARGS[method]
    return main(["synthesize", "--data", str(csv), "--qi", ",".join(QI), "--keep", ",".join(KEEP),
                 "--method", method, "--m", "2", "--seed", str(seed), "--out", str(out),
                 "--save-model", str(model), "--quiet", *extra])


def _draw(model, out, seed: int, m: int = 3, original=None, *extra: str) -> int:
    argv = ["synthesize", "--model", str(model), "--m", str(m), "--seed", str(seed), "--out", str(out), "--quiet"]
    if original is not None:
        argv += ["--original", str(original)]
    return main(argv + list(extra))


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _frames(d) -> list[pd.DataFrame]:
    return [pd.read_csv(f) for f in sorted(d.glob("copy_*.csv"))]


@pytest.mark.parametrize("method", list(METHOD_ARGS))
def test_saved_model_draws_without_refitting(adult_csv, tmp_path, method, capsys, monkeypatch):
    _, needs_original = METHOD_ARGS[method]
    original = adult_csv if needs_original else None
    model = tmp_path / "model"
    assert _fit(adult_csv, method, tmp_path / "fresh", model) == 0, capsys.readouterr().err
    manifest = model / "manifest.json"
    fresh_meta = json.loads((tmp_path / "fresh" / "metadata.json").read_text())
    assert fresh_meta["source"]["saved_model"]["manifest_sha256"] == _sha(manifest)
    capsys.readouterr()
    api = Synthesizer.load(model).sample(3, random_state=2, allow_unmodified=False)

    def no_refit(self, *args, **kwargs):
        raise AssertionError("--model refitted")

    # another seed and another M, no refit: the copies Synthesizer.load(DIR).sample(m, random_state=2) gives
    with monkeypatch.context() as mp:
        mp.setattr(type(Synthesizer.load(model)), "fit", no_refit)
        assert _draw(model, tmp_path / "more", 2, 3, original) == 0, capsys.readouterr().err
    assert "no refit" in capsys.readouterr().err
    meta = json.loads((tmp_path / "more" / "metadata.json").read_text())
    assert meta["source"]["model"]["refit"] is False
    assert meta["source"]["model"]["manifest_sha256"] == _sha(manifest)
    got = SyntheticData.from_dir(tmp_path / "more").copies
    assert len(got) == 3
    for a, b in zip(got, api.copies):
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_dtype=False,
                                      check_categorical=False)

    # the fit's seed again: the fresh release's copies exactly (the model is the same)
    assert _draw(model, tmp_path / "again", 1, 2, original) == 0, capsys.readouterr().err
    for a, b in zip(_frames(tmp_path / "again"), _frames(tmp_path / "fresh")):
        pd.testing.assert_frame_equal(a, b)

    if method == "dpsyn":
        # post-processing of the noised measurements: said, and no seed or record count recorded
        assert "no new privacy budget" in meta["source"]["model"]["privacy"]
        assert meta.get("seed") is None and "n_rows" not in meta["source"]
        assert "random_state" not in json.loads(manifest.read_text())["params"]
        assert json.loads(manifest.read_text())["fingerprint"]["n_rows"] is None
        # a neighbouring file (one record less): the saved model's public files and the --model
        # release's metadata differ only in the digests of the noised content
        n = tmp_path / "n"
        n.mkdir()
        neighbour = n / adult_csv.name  # same base name: the file's name is not data
        pd.read_csv(adult_csv).iloc[1:].to_csv(neighbour, index=False)
        assert _fit(neighbour, method, n / "fresh", n / "model") == 0
        assert _draw(n / "model", n / "more", 2, 3) == 0
        capsys.readouterr()

        def public(man):
            return {k: v for k, v in json.loads(man.read_text()).items() if k != "sha256"}

        assert public(manifest) == public(n / "model" / "manifest.json")
        assert (model / "spec.json").read_bytes() == (n / "model" / "spec.json").read_bytes()
        src_n = json.loads((n / "more" / "metadata.json").read_text())["source"]
        for src in (meta["source"], src_n):
            src["model"].pop("manifest_sha256")
        assert meta["source"] == src_n
    else:
        assert meta["seed"] == 2
    if method == "risk-dami":
        # the short chain's failed check was overridden at the fit; the saved model keeps that override
        assert meta["diagnostics_check"]["accepted"] is True and meta["diagnostics_check"]["passed"] is False


@pytest.fixture(scope="module")
def cart_model(adult_csv, tmp_path_factory):
    d = tmp_path_factory.mktemp("cart")
    assert _fit(adult_csv, "cart", d / "fresh", d / "model") == 0
    return d / "model"


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_model_errors_name_the_option(cart_model, adult_csv, tmp_path, capsys):
    assert _draw(tmp_path / "nowhere", tmp_path / "o1", 1, 2, adult_csv) == 1
    assert "The '--model' option names" in _error(capsys)
    (tmp_path / "empty").mkdir()
    assert _draw(tmp_path / "empty", tmp_path / "o2", 1, 2, adult_csv) == 1
    assert "The '--model' option must name a directory written by --save-model" in _error(capsys)
    tampered = tmp_path / "tampered"
    shutil.copytree(cart_model, tampered)
    with open(tampered / "spec.json", "a") as fh:
        fh.write(" ")
    assert _draw(tampered, tmp_path / "o3", 1, 2, adult_csv) == 1
    assert "The '--model' directory" in (e := _error(capsys)) and "SHA-256" in e
    other = tmp_path / "other.csv"
    pd.read_csv(adult_csv).drop(columns=["race"]).to_csv(other, index=False)
    assert _draw(cart_model, tmp_path / "o4", 1, 2, other) == 1
    assert "The '--original' file lacks the columns ['race']" in _error(capsys)
    # a model saved without records: the release guard needs the original
    assert _draw(cart_model, tmp_path / "o5", 1, 2) == 1
    assert "The '--original' option is required" in _error(capsys)
    # fit options are the saved model's
    assert _draw(cart_model, tmp_path / "o6", 1, 2, adult_csv, "--method", "rubin") == 1
    assert "The '--method' option sets the fit" in _error(capsys)
    # reading options with nothing to read
    assert _draw(cart_model, tmp_path / "o7", 1, 2, None, "--encoding", "latin-1") == 1
    assert "The '--encoding' option says how to read a file" in _error(capsys)
    # nothing was created for any refused call
    assert not any((tmp_path / f"o{i}").exists() for i in range(1, 8))


def test_never_overwrites(cart_model, adult_csv, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    assert _draw(cart_model, out, 1, 2, adult_csv) == 1
    assert "The '--out' directory" in _error(capsys) and not any(out.iterdir())
    taken = tmp_path / "taken"
    taken.mkdir()
    assert _fit(adult_csv, "cart", tmp_path / "fresh", taken) == 1
    assert "The '--save-model' directory" in _error(capsys)
    assert not (tmp_path / "fresh").exists() and not any(taken.iterdir())


def test_failed_diagnostics_refused_without_the_recorded_override(adult_csv, tmp_path, capsys):
    """A model whose convergence check fails (an ESS no chain reaches) and was fitted without the
    override: --model refuses it as a fresh synthesize would, writing nothing."""
    from synthmi.models.masking import NormalMasking
    from synthmi.models.risk_targeted import RiskTargetedSynthesizer

    df = pd.read_csv(adult_csv)
    masks = {g: {"age": NormalMasking(K=1, sigma_e=s)} for g, s in (("low", 2.0), ("medium", 4.0))}
    masks["high"] = {}  # no record is high-risk on these 300 rows
    synth = RiskTargetedSynthesizer(masks=masks, n_iter=60, burn=20, ess_min=1e9, max_seconds=None,
                                    random_state=1)
    synth.fit(df, quasi_identifiers=QI, keep=KEEP)
    synth.save(tmp_path / "model", include_records=True)
    assert _draw(tmp_path / "model", tmp_path / "out", 1, 2) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "did not converge" in err and "ESS" in err and "fitted without --accept-diagnostics" in err
    assert not (tmp_path / "out").exists()
