"""Names the FiftyOne tests share."""

PLUGIN = "@kalos/agreement"
COMPUTE = f"{PLUGIN}/compute_agreement"
#: operators whose cards need a real Label Studio server: checked in tests/labelstudio/test_label_studio_round.py
REAL_SERVER = ("send_to_label_studio", "load_label_studio_round")
