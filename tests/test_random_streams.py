"""Record-keyed random streams (synthmi._random): draws depend on position, not on chunking."""
import numpy as np
from scipy import stats

from synthmi._random import PositionalRNG, raw_stream, uniforms


def test_raw_stream_is_philox_output_indexed_by_position():
    # hand check: the stream is the plain Philox output sequence with counter 0
    ent, tag = (12345, 678), (3, 1)
    from synthmi._random import _philox_key

    bg = np.random.Philox(key=_philox_key(ent, tag))
    ref = bg.random_raw(23)
    for start in range(0, 12):
        np.testing.assert_array_equal(raw_stream(ent, tag, start, 23 - start), ref[start:])


def test_uniform_formula_and_range():
    ent, tag = (1, 2), (0,)
    r = raw_stream(ent, tag, 0, 5)
    u = uniforms(ent, tag, 0, 5)
    np.testing.assert_array_equal(u, ((r >> np.uint64(11)).astype(float) + 0.5) / 2.0**53)
    assert np.all((u > 0) & (u < 1))


def test_split_draws_equal_whole_draws_for_any_cut_points():
    ent = (7, 8)
    whole = PositionalRNG(ent, tag=(2,), offset=0)
    a1, b1 = whole.random(100), whole.standard_normal((100, 3))
    for cuts in ([0, 37, 100], [0, 1, 2, 50, 99, 100], [0, 100]):
        us, zs = [], []
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            r = PositionalRNG(ent, tag=(2,), offset=lo)
            us.append(r.random(hi - lo))
            zs.append(r.standard_normal((hi - lo, 3)))
        np.testing.assert_array_equal(np.concatenate(us), a1)
        np.testing.assert_array_equal(np.concatenate(zs), b1)


def test_calls_and_tags_give_independent_looking_streams():
    r = PositionalRNG((5, 6), tag=(0,))
    a, b = r.random(20000), r.random(20000)
    c = PositionalRNG((5, 6), tag=(1,)).random(20000)
    # correlation of independent uniforms has sd 1/sqrt(n) = 0.007; 5 sd
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.035
    assert abs(np.corrcoef(a, c)[0, 1]) < 0.035


def test_normals_are_standard_normal():
    z = PositionalRNG((9, 9), tag=(4,)).standard_normal(50000)
    # KS at n = 50000: the 0.1% critical value is 1.95 / sqrt(n) = 0.0087
    assert stats.kstest(z, "norm").statistic < 0.0087
    u = PositionalRNG((9, 9), tag=(5,)).random(50000)
    assert stats.kstest(u, "uniform").statistic < 0.0087
