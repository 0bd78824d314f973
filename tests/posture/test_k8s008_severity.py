"""K8S-008's severity: high whatever the victims' classes (DESIGN §5; the risk points weigh
each victim's class, §6). A namespace of a class guarding sensitive data is still said in the
evidence and the title, told from the class's data (a reset attestation, approvals that
expire), never from its slug."""

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


def severity_of(writer: TrustClassInfo, *victims: TrustClassInfo) -> tuple[str, dict, str]:
    """The severity, evidence and title of an `edit` ClusterRoleBinding held by the writer's
    group, reaching one namespace per victim."""
    tenants = [TenantInfo("w", "Writer", writer, ("writer",), ("group:writers",))]
    tenants += [
        TenantInfo(f"v{i}", f"Victim {i}", cls, (f"victim-{i}",)) for i, cls in enumerate(victims)
    ]
    objects = [*BASE, namespace("writer"), *(namespace(t.namespaces[0]) for t in tenants[1:])]
    objects.append(binding("writers-edit-everywhere", "edit", "Group:writers"))
    world = PostureInputs("lab", normalise(objects), tuple(tenants))
    (draft,) = run_checks(world, only=["K8S-008"])
    return draft.severity or CHECKS["K8S-008"].severity, draft.evidence, draft.title


@pytest.mark.parametrize(
    ("writer", "victims", "severity", "stricter", "sensitive"),
    [
        # An internal team editing everywhere, an external tenant among its victims: high, and
        # so no cap at F for the internal victims beside it.
        pytest.param(
            INTERNAL, (INTERNAL, EXTERNAL), "high", True, False, id="internal-to-external"
        ),
        pytest.param(INTERNAL, (INTERNAL,), "high", False, False, id="same-class"),
        # A sensitive victim: still high (its class weight raises its own risk points, and a
        # critical would cap every other victim of the binding at F).
        pytest.param(EXTERNAL, (SENSITIVE,), "high", True, True, id="external-to-sensitive"),
        pytest.param(
            INTERNAL, (INTERNAL, SENSITIVE), "high", True, True, id="internal-to-sensitive"
        ),
        pytest.param(INTERNAL, (REGULATED,), "high", True, True, id="sensitive-by-its-data"),
        pytest.param(INTERNAL, (RELABELLED,), "high", True, False, id="slug-alone-is-not-data"),
        # A sensitive tenant writing in another sensitive tenant's namespace: no less trusted.
        pytest.param(SENSITIVE, (SENSITIVE,), "high", False, False, id="sensitive-to-sensitive"),
    ],
)
def test_high_with_the_sensitive_class_said_in_the_evidence(
    writer, victims, severity, stricter, sensitive
):
    found, evidence, _ = severity_of(writer, *victims)
    assert found == severity
    assert evidence["stricter_class"] is stricter
    assert evidence["sensitive_class"] is sensitive


def test_title_names_only_the_namespaces_of_a_sensitive_or_stricter_class():
    """Seven namespaces, one sensitive and one stricter: the title says which, not that all
    seven are of a sensitive class."""
    victims = (SENSITIVE, EXTERNAL, *(INTERNAL,) * 5)
    _, evidence, title = severity_of(INTERNAL, *victims)
    assert evidence["namespace_count"] == 7
    assert (
        "in 7 namespaces (1 of a sensitive class: victim-0; 1 of a stricter class: victim-1)"
        in title
    )
    assert "of a sensitive trust class" not in title


def test_title_of_one_namespace_says_its_class():
    _, _, title = severity_of(EXTERNAL, SENSITIVE)
    assert "in victim-0 of a sensitive trust class (owned by v0)" in title


def test_title_counts_the_classed_namespaces_past_three():
    _, _, title = severity_of(EXTERNAL, *(SENSITIVE,) * 5)
    assert "5 namespaces (5 of a sensitive class: victim-0, victim-1, victim-2 and 2 more)" in title
