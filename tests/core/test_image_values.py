"""ImageValues: an agreement run's per-image α of one key, as two arrays that read as the list of
``(image index, α)`` tuples they replace (kalos_core.agreement.image_values)."""

import pickle

import numpy as np
import pytest

from kalos_core.agreement.diagnostics import mean_by_key
from kalos_core.agreement.image_values import ImageValues, alphas_of
from kalos_core.agreement.partial import Partial


def test_it_reads_as_the_list_of_tuples():
    v = ImageValues(np.array([4, 7, 9]), np.array([0.5, -0.25, 1.0]))
    pairs = [(4, 0.5), (7, -0.25), (9, 1.0)]
    assert list(v) == pairs and v == pairs and pairs == v and len(v) == 3
    assert v[1] == (7, -0.25) and v[-1] == (9, 1.0) and v[:2] == pairs[:2]
    assert all(type(i) is int and type(a) is float for i, a in v)
    assert v != pairs[:2] and v != [(4, 0.5), (7, -0.25), (9, 0.5)]
    assert list(ImageValues()) == [] and len(ImageValues()) == 0 and ImageValues() == []
    with pytest.raises(ValueError, match="one length"):
        ImageValues(np.array([1, 2]), np.array([0.5]))


def test_extend_appends_in_order_and_survives_pickling():
    a, b = ImageValues([1, 2], [0.1, 0.2]), ImageValues([5], [0.9])
    a.extend(ImageValues())
    a.extend(b)
    assert a == [(1, 0.1), (2, 0.2), (5, 0.9)] and len(a) == 3
    assert a.images.tolist() == [1, 2, 5] and a.alphas.tolist() == [0.1, 0.2, 0.9]
    assert b == [(5, 0.9)]                                   # the appended one is unchanged
    assert pickle.loads(pickle.dumps(a)) == a
    with pytest.raises(ValueError, match="read-only"):
        a.alphas[0] = 9.0                                    # shared with the partials it came from
    assert b.alphas.tolist() == [0.9]


def test_partials_merge_their_values_key_by_key():
    p, q = Partial(values={"k": ImageValues([0], [0.5])}), Partial(values={"k": ImageValues([3], [0.25]),
                                                                           "m": ImageValues([3], [1.0])})
    p.merge(q)
    assert p.values == {"k": [(0, 0.5), (3, 0.25)], "m": [(3, 1.0)]}


def test_mean_by_key_has_the_bits_of_the_mean_over_one_list():
    """Keys that ``key`` joins are taken in their order: the pairwise sum of numpy's mean over the
    joined α is that over the one list the tuples made (random magnitudes make the order matter)."""
    rng = np.random.default_rng(3)
    values, lists = {}, {}
    for k in range(12):
        n = int(rng.integers(0, 3000))
        alphas = rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, size=n)
        values[k] = ImageValues(np.arange(n), alphas)
        lists.setdefault(k % 4, []).extend(alphas.tolist())
    got = mean_by_key(values, lambda k: k % 4)
    assert list(got) == sorted(k for k, v in lists.items() if v)
    for k, v in got.items():
        assert v == float(np.mean(lists[k]))
    assert mean_by_key({"a": [(0, 0.5), (1, 1.0)], "b": ImageValues()}) == {"a": 0.75}   # plain pairs too
    assert alphas_of([(0, 0.5)]).tolist() == [0.5]
