"""A run scheduled for a worker (delegated) announces itself in the open panel: while it waits the
panel says so and polls (a timer); once it ended, the panel says it finished (once), the App
reloads the dataset (its new fields show) and the panel lists the new run."""

import pytest

from tests.fiftyone.helpers import Panel, agreement_dataset, rater_fields

URI = "@kalos/agreement/compute_agreement"


@pytest.fixture(scope="module")
def ds(fo_isolated, demo):  # noqa: F811
    return agreement_dataset(fo_isolated, demo, "rater_fields")


def test_a_scheduled_run_is_announced_once_when_it_ends(ds):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService

    p = Panel(ds, "kalos_agreement_overview").call("on_load")
    assert p.state.get("scheduled_pending") is None and "scheduled_timer" not in p.rendered()
    queued = foo.get_operator(URI)(ds, delegate=True, rater_fields=rater_fields(ds), run_key="sched", bootstrap=0)
    assert queued.delegated and not ds.has_field("sched_alpha")

    p.call("refresh")
    assert p.state["scheduled_pending"].startswith(
        "1 scheduled KaLOS run waiting or running: compute_agreement (run key **sched**) (queued ")
    assert "scheduled_timer" in p.rendered() and p.state["runs"] == ["kalos"]
    timer = p.output["type"]["properties"]["scheduled_timer"]["view"]
    assert timer["interval"] == 5000 and timer["on_interval"].endswith("#check_scheduled")
    p.call("check_scheduled")   # still queued: nothing ended, nothing reloaded
    assert not p.ops("reload_dataset") and p.state.get("scheduled_notice") is None

    DelegatedOperationService().execute_queued_operations(dataset_name=ds.name, log=False)
    p.call("check_scheduled")
    notice = p.state["scheduled_notice"]
    assert notice.startswith("**Scheduled run finished**: compute_agreement (run key **sched**) at "), notice
    assert p.ops("reload_dataset") and "Scheduled run finished" in p.ops("notify")[0]["message"]
    assert p.state["scheduled_pending"] is None and "scheduled_timer" not in p.rendered()
    assert p.state["runs"] == ["kalos", "sched"] and p.state["run_key"] == "kalos"   # the chosen run stays
    assert {"scheduled_notice", "dismiss_notice"} <= set(p.output["type"]["properties"]["scheduled_bar"]["type"]
                                                          ["properties"])

    # announced once: another panel, or this one again, does not repeat it (nor reload again)
    other = Panel(ds, "kalos_annotator_vitality").call("on_load")
    assert not other.ops("reload_dataset") and other.state.get("scheduled_notice") is None
    p.call("dismiss_notice")
    assert p.state["scheduled_notice"] is None and "scheduled_bar" not in p.rendered()


def test_a_failed_scheduled_run_says_how_to_see_why(ds):
    import fiftyone.operators as foo
    from fiftyone.operators.delegated import DelegatedOperationService

    svc = DelegatedOperationService()
    foo.get_operator(URI)(ds, delegate=True, rater_fields=rater_fields(ds), run_key="broken", bootstrap=0)
    (op,) = svc.get_queued_operations(dataset_name=ds.name)
    svc.set_failed(op.id)
    p = Panel(ds, "kalos_agreement_overview").call("on_load")
    notice = p.state["scheduled_notice"]
    assert notice.startswith("**Scheduled run failed**: compute_agreement (run key **broken**) at "), notice
    assert f"`fiftyone delegated info {op.id}` says why" in notice
