"""Smoke test: fiftyone imports and its bundled mongod really runs (write, index, sort)."""


def test_mongod_roundtrip(fo_isolated):
    fo = fo_isolated
    ds = fo.Dataset()  # non-persistent: removed when the process exits
    try:
        ds.add_samples(
            [fo.Sample(filepath="/tmp/nonexistent_a.jpg"), fo.Sample(filepath="/tmp/nonexistent_b.jpg")]
        )
        ids = ds.values("id")
        ds.set_values("kalos_score", [0.9, 0.1])
        ds.create_index("kalos_score")
        assert "kalos_score" in ds.list_indexes()

        ordered = ds.sort_by("kalos_score")
        assert ordered.values("kalos_score") == [0.1, 0.9]
        assert ordered.values("id") == [ids[1], ids[0]]
    finally:
        ds.delete()
