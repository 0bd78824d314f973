"""The pool taint rules the checks read come from the registry: a keyed taint's value names a
class only when a trust class of that slug exists (rtvirt k43), seed or created in the admin."""

from __future__ import annotations

import pytest

from tenants.models import TrustClass
from tenants.selectors import pool_taint_rules

pytestmark = pytest.mark.django_db

KEY = "gpuposture.io/trust-class"


def test_a_keyed_value_names_a_class_only_when_the_class_exists():
    rules = pool_taint_rules()
    assert rules.classes_of(KEY, "external", "NoSchedule") == {"external"}
    assert rules.classes_of(KEY, "customers", "NoSchedule") == set()
    assert rules.names_no_class(KEY, "customers", "NoSchedule")
    TrustClass.objects.create(slug="customers", name="Customers")
    rules = pool_taint_rules()
    assert rules.classes_of(KEY, "customers", "NoSchedule") == {"customers"}
    assert not rules.names_no_class(KEY, "customers", "NoSchedule")
    # Not a pool taint key, or not separating: says nothing either way.
    assert not rules.names_no_class("dedicated", "batch", "NoSchedule")
    assert not rules.names_no_class(KEY, "customerz", "PreferNoSchedule")
