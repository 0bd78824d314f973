"""K8S-008's severity: high (risk points weigh the victim's class), critical only where a less
trusted tenant writes in a namespace whose class guards sensitive data, told from the class's
data (a reset attestation, approvals that expire), never from its slug."""

from __future__ import annotations

from dataclasses import replace

import pytest

import posture.rules  # noqa: F401  (registers the checks)
from inventory.sources.normalise import normalise
from posture.inputs import PostureInputs, TenantInfo, TrustClassInfo
from posture.rules.registry import CHECKS, run_checks
from tests.posture.builders import trust_class
from tests.posture.test_rules_cross_tenant import BASE, binding, namespace

INTERNAL = trust_class("internal")
EXTERNAL = trust_class("external")
SENSITIVE = trust_class("sensitive")
# A class the admin named otherwise that asks what sensitive data needs...
REGULATED = replace(
    EXTERNAL, slug="regulated", rank=SENSITIVE.rank, requires_reset_attestation=True
)
# ...and one slugged "sensitive" that asks nothing of it.
RELABELLED = replace(SENSITIVE, requires_reset_attestation=False, approval_expiry_days=None)


def severity_of(writer: TrustClassInfo, *victims: TrustClassInfo) -> tuple[str, dict]:
    """The severity and evidence of an `edit` ClusterRoleBinding held by the writer's group,
    reaching one namespace per victim."""
    tenants = [TenantInfo("w", "Writer", writer, ("writer",), ("group:writers",))]
    tenants += [
        TenantInfo(f"v{i}", f"Victim {i}", cls, (f"victim-{i}",)) for i, cls in enumerate(victims)
    ]
    objects = [*BASE, namespace("writer"), *(namespace(t.namespaces[0]) for t in tenants[1:])]
    objects.append(binding("writers-edit-everywhere", "edit", "Group:writers"))
    world = PostureInputs("lab", normalise(objects), tuple(tenants))
    (draft,) = run_checks(world, only=["K8S-008"])
    return draft.severity or CHECKS["K8S-008"].severity, draft.evidence


@pytest.mark.parametrize(
    ("writer", "victims", "severity", "stricter", "sensitive"),
    [
        # An internal team editing everywhere, an external tenant among its victims: high, and
        # so no cap at F for the internal victims beside it.
        pytest.param(
            INTERNAL, (INTERNAL, EXTERNAL), "high", True, False, id="internal-to-external"
        ),
        pytest.param(INTERNAL, (INTERNAL,), "high", False, False, id="same-class"),
        pytest.param(EXTERNAL, (SENSITIVE,), "critical", True, True, id="external-to-sensitive"),
        pytest.param(
            INTERNAL, (INTERNAL, SENSITIVE), "critical", True, True, id="internal-to-sensitive"
        ),
        pytest.param(INTERNAL, (REGULATED,), "critical", True, True, id="sensitive-by-its-data"),
        pytest.param(INTERNAL, (RELABELLED,), "high", True, False, id="slug-alone-is-not-data"),
        # A sensitive tenant writing in another sensitive tenant's namespace: no less trusted.
        pytest.param(SENSITIVE, (SENSITIVE,), "high", False, False, id="sensitive-to-sensitive"),
    ],
)
def test_critical_only_where_a_less_trusted_class_writes_where_sensitive_data_lives(
    writer, victims, severity, stricter, sensitive
):
    found, evidence = severity_of(writer, *victims)
    assert found == severity
    assert evidence["stricter_class"] is stricter
    assert evidence["sensitive_class"] is sensitive
