import os, pytest
import fiftyone  # top-level import at collection time
import kalos_core

def test_dbdir():
    print("DBDIR", fiftyone.config.database_dir, fiftyone.config.database_uri, fiftyone.list_datasets())
    assert fiftyone.list_datasets() == []

@pytest.mark.realdata
def test_real(lvis_subset_path):
    assert lvis_subset_path.exists()
