"""LEAK-001: consecutive exclusive tenants on a GPU with no reset attestation between them."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from telemetry.attribution import Attributed, attribute
from telemetry.leak import (
    Attestation,
    Handover,
    Tenancy,
    tenancies_from,
    unattested_handovers,
)
from telemetry.samples import GpuSample

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
OWNERS = {"ns-a": "a", "ns-b": "b", "ns-c": "c"}
PLATFORM = frozenset({"kube-system", "gpu-operator"})


def m(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def at(minutes: float, ns: str = "ns-a", pod: str = "p", **kw) -> Attributed:
    fields = {"hostname": "n1", "gpu": "0", "uuid": "GPU-1", "util": 50.0, **kw}
    sample = GpuSample(time=m(minutes), namespace=ns, pod=pod, **fields)
    [a] = attribute([sample], owners=OWNERS, shared_nodes=("ts-node",), platform=PLATFORM)
    return a


def every(start: float, end: float, ns: str = "ns-a", **kw) -> list[Attributed]:
    """A sample each minute from `start` to `end` minutes, both included."""
    return [at(start + i, ns, **kw) for i in range(int(end - start) + 1)]


def ten(tenant: str, start: float, end: float, device="GPU-1", node="n1") -> Tenancy:
    return Tenancy(device, node, tenant, m(start), m(end))


def reset(minutes: float, uuid: str = "GPU-1", node: str = "n1") -> Attestation:
    return Attestation(node, uuid, m(minutes))


# --- tenancies_from -------------------------------------------------------------------------


def test_one_tenant_continuously_is_one_tenancy():
    assert tenancies_from(every(0, 30)) == [ten("a", 0, 30)]


def test_a_different_tenant_starts_a_new_tenancy():
    samples = every(0, 10) + every(11, 20, "ns-b") + every(21, 25)
    assert tenancies_from(samples) == [ten("a", 0, 10), ten("b", 11, 20), ten("a", 21, 25)]


def test_a_gap_longer_than_max_gap_starts_a_new_tenancy():
    assert tenancies_from(every(0, 10) + every(16, 20)) == [ten("a", 0, 10), ten("a", 16, 20)]
    assert tenancies_from(every(0, 10) + every(15, 20)) == [ten("a", 0, 20)]
    got = tenancies_from(every(0, 10) + every(15, 20), max_gap=timedelta(minutes=4))
    assert got == [ten("a", 0, 10), ten("a", 15, 20)]


def test_platform_and_unattributed_samples_neither_start_nor_end_a_tenancy():
    samples = every(0, 5) + [at(6, "gpu-operator"), at(7, "", "")] + every(8, 12)
    assert tenancies_from(samples) == [ten("a", 0, 12)]


def test_only_exact_samples_with_a_uuid_count():
    samples = [
        at(0, hostname="ts-node"),  # time-sliced: shared confidence
        at(0, pod=""),  # no pod label: no confidence
        at(0, uuid="", gi_id="1"),  # cannot be matched to a reset by UUID
        at(0, "kube-system"),
        at(0, ""),
    ]
    assert tenancies_from(samples) == []


def test_each_mig_instance_is_its_own_device_under_its_parent_uuid():
    # DCGM-Exporter reports a MIG instance under its parent GPU's UUID with its GPU_I_ID: the
    # instance is handed from tenant to tenant as a whole GPU is, apart from its siblings.
    samples = (
        every(0, 10, gi_id="1", gi_profile="3g.40gb")
        + every(0, 30, "ns-c", gi_id="2", gi_profile="3g.40gb")
        + every(20, 30, "ns-b", gi_id="1", gi_profile="3g.40gb")
    )
    random.Random(3).shuffle(samples)
    assert tenancies_from(samples) == [
        Tenancy("GPU-1", "n1", "a", m(0), m(10), "1"),
        Tenancy("GPU-1", "n1", "b", m(20), m(30), "1"),
        Tenancy("GPU-1", "n1", "c", m(0), m(30), "2"),
    ]


def test_a_mig_instance_passed_on_needs_a_reset_of_its_parent_gpu_or_node():
    tenancies = [
        Tenancy("GPU-1", "n1", "a", m(0), m(10), "1"),
        Tenancy("GPU-1", "n1", "b", m(20), m(30), "1"),
        Tenancy("GPU-1", "n1", "c", m(0), m(30), "2"),  # a sibling: no handover with it
    ]
    assert unattested_handovers(tenancies, []) == [
        Handover("GPU-1", "n1", "a", "b", m(10), m(20), "1")
    ]
    assert unattested_handovers(tenancies, [reset(15)]) == []
    assert unattested_handovers(tenancies, [reset(15, uuid="")]) == []
    assert len(unattested_handovers(tenancies, [reset(15, uuid="GPU-2")])) == 1


def test_overlapping_tenants_each_keep_their_tenancy():
    samples = every(0, 10) + every(5, 15, "ns-b")
    assert tenancies_from(samples) == [ten("a", 0, 10), ten("b", 5, 15)]


def test_devices_are_separate_and_sorted():
    samples = every(0, 5, uuid="GPU-2", hostname="n2") + every(0, 5, "ns-b") + every(6, 9, "ns-c")
    random.Random(5).shuffle(samples)
    assert tenancies_from(samples) == [
        ten("b", 0, 5),
        ten("c", 6, 9),
        ten("a", 0, 5, device="GPU-2", node="n2"),
    ]


# --- unattested_handovers -------------------------------------------------------------------


def test_handover_without_attestation():
    assert unattested_handovers([ten("b", 20, 30), ten("a", 0, 10)], []) == [
        Handover("GPU-1", "n1", "a", "b", m(10), m(20))
    ]


def test_reset_of_that_gpu_between_attests_the_handover():
    tenancies = [ten("a", 0, 10), ten("b", 20, 30)]
    for minute in (10, 15, 20):  # both ends included
        assert unattested_handovers(tenancies, [reset(minute)]) == []
    for minute in (9, 21):  # during a tenancy is not between them
        assert len(unattested_handovers(tenancies, [reset(minute)])) == 1


def test_a_reset_recorded_to_the_minute_covers_that_minute():
    # The reset form's datetime-local input records minutes: "10:00" is a reset some time in
    # 10:00-10:01, which fits between A's last sample (10:00:45) and B's first (10:01:10).
    a_end, b_start = T0 + timedelta(seconds=45), T0 + timedelta(seconds=70)
    tenancies = [Tenancy("GPU-1", "n1", "a", T0 - timedelta(hours=1), a_end)]
    tenancies.append(Tenancy("GPU-1", "n1", "b", b_start, b_start + timedelta(hours=1)))
    assert unattested_handovers(tenancies, [Attestation("n1", "GPU-1", T0)]) == []
    assert unattested_handovers(tenancies, [Attestation("n1", "", T0)]) == []
    # A time given to the second is taken as given: 10:00:30 was while A still ran.
    during = Attestation("n1", "GPU-1", T0 + timedelta(seconds=30))
    assert len(unattested_handovers(tenancies, [during])) == 1
    # The minute before A's last sample's minute ended before it: no cover.
    before = Attestation("n1", "GPU-1", T0 - timedelta(minutes=1))
    assert len(unattested_handovers(tenancies, [before])) == 1


def test_a_reset_names_the_gpu_whatever_the_case_of_its_uuid():
    tenancies = [ten("a", 0, 10, device="GPU-ab12"), ten("b", 20, 30, device="GPU-ab12")]
    assert unattested_handovers(tenancies, [reset(15, uuid=" gpu-AB12 ")]) == []


def test_reset_found_by_uuid_whatever_node_it_names():
    tenancies = [ten("a", 0, 10), ten("b", 20, 30)]
    assert unattested_handovers(tenancies, [reset(15, node="renamed")]) == []


def test_reset_of_another_gpu_does_not_attest():
    tenancies = [ten("a", 0, 10), ten("b", 20, 30)]
    assert len(unattested_handovers(tenancies, [reset(15, uuid="GPU-9")])) == 1


def test_reset_of_the_whole_node_attests():
    tenancies = [ten("a", 0, 10), ten("b", 20, 30)]
    assert unattested_handovers(tenancies, [reset(15, uuid="")]) == []
    assert len(unattested_handovers(tenancies, [reset(15, uuid="", node="n2")])) == 1


def test_same_tenant_twice_is_not_a_handover():
    assert unattested_handovers([ten("a", 0, 10), ten("a", 20, 30)], []) == []


def test_three_tenants_in_a_row():
    tenancies = [ten("a", 0, 10), ten("b", 20, 30), ten("c", 40, 50)]
    assert unattested_handovers(tenancies, []) == [
        Handover("GPU-1", "n1", "a", "b", m(10), m(20)),
        Handover("GPU-1", "n1", "b", "c", m(30), m(40)),
    ]
    assert unattested_handovers(tenancies, [reset(15)]) == [
        Handover("GPU-1", "n1", "b", "c", m(30), m(40))
    ]
    assert unattested_handovers(tenancies, [reset(15), reset(35, uuid="")]) == []


def test_handover_counts_from_the_last_tenancy_of_the_previous_tenant():
    tenancies = [ten("a", 0, 10), ten("a", 20, 30), ten("b", 40, 50)]
    assert unattested_handovers(tenancies, [reset(15)]) == [
        Handover("GPU-1", "n1", "a", "b", m(30), m(40))
    ]


def test_overlapping_tenancies_are_always_a_handover():
    tenancies = [ten("a", 0, 10), ten("b", 5, 15)]
    assert unattested_handovers(tenancies, [reset(7), reset(7, uuid="")]) == [
        Handover("GPU-1", "n1", "a", "b", m(10), m(5))
    ]


def test_handovers_per_device_sorted():
    tenancies = [
        ten("a", 0, 10, device="GPU-2"),
        ten("b", 20, 30, device="GPU-2"),
        ten("b", 0, 10),
        ten("c", 20, 30),
        ten("a", 15, 18, device="GPU-3"),  # alone on its GPU
    ]
    random.Random(1).shuffle(tenancies)
    got = unattested_handovers(tenancies, [reset(15, uuid="GPU-2")])
    assert got == [Handover("GPU-1", "n1", "b", "c", m(10), m(20))]
    assert unattested_handovers([], [reset(1)]) == []


def test_from_samples_to_handovers():
    samples = every(0, 10) + every(12, 20, "ns-b") + every(30, 40) + every(0, 40, uuid="GPU-2")
    tenancies = tenancies_from(samples)
    resets = [reset(25), reset(11, uuid="GPU-7")]
    assert unattested_handovers(tenancies, resets) == [
        Handover("GPU-1", "n1", "a", "b", m(10), m(12))
    ]


def test_a_platform_job_between_two_tenants_is_no_reset_in_telemetry_either():
    """a's samples, then the platform's burn-in for half an hour, then b's, no reset: a and b are
    consecutive tenants (the platform is none, and its job resets nothing); a reset recorded
    after a's last sample clears it; the platform alone before b is nothing."""
    samples = every(0, 10) + every(20, 50, "gpu-operator") + every(60, 70, "ns-b")
    tenancies = tenancies_from(samples)
    assert unattested_handovers(tenancies, []) == [Handover("GPU-1", "n1", "a", "b", m(10), m(60))]
    assert unattested_handovers(tenancies, [reset(55)]) == []
    assert (
        unattested_handovers(
            tenancies_from(every(20, 50, "gpu-operator") + every(60, 70, "ns-b")), []
        )
        == []
    )
