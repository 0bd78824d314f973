"""Product trees that name a GPU-stack component other than NVIDIA's way: full_product_names
with the version in the name, a product known only by its purl or CPE, package spellings
("nvidia-container-toolkit"), and relationships (default_component_of, installed_on) whose
own name states the platform, not the version. Documents are our own, small; judged end to end
on pure functions."""

from __future__ import annotations

from typing import Any

import pytest

from inventory.bulletins.csaf.document import parse_advisory
from inventory.bulletins.csaf.fixes import fixes
from inventory.patching.status import BELOW_BASELINE, CURRENT, node_patch_status
from tests.inventory.test_csaf_shapes import document, version


def flat(products: list[dict[str, Any]], status: dict, relationships=()) -> dict:
    data = document([], status)
    data["product_tree"] = {"full_product_names": products, "relationships": list(relationships)}
    return data


def named(pid: str, name: str, **helper: str) -> dict[str, Any]:
    product: dict[str, Any] = {"product_id": pid, "name": name}
    if helper:
        product["product_identification_helper"] = helper
    return product


def toolkit(data: dict, version: str) -> str:
    status = node_patch_status(
        {"driver_version": "570.172.08", "container_toolkit_version": version},
        fixes(parse_advisory(data))[0],
    )
    return status.status


PAIRS = {
    "the version in the name": (
        named("A", "NVIDIA Container Toolkit 1.17.7"),
        named("F", "NVIDIA Container Toolkit 1.17.8"),
    ),
    "a range in the name after the product": (
        named("A", "NVIDIA Container Toolkit versions prior to 1.17.8"),
        named("F", "NVIDIA Container Toolkit 1.17.8"),
    ),
    "package spelling, 'and earlier'": (
        named("A", "nvidia-container-toolkit v1.17.7 and earlier"),
        named("F", "nvidia-container-toolkit v1.17.8"),
    ),
    "purl only": (
        named("A", "toolkit", purl="pkg:github/NVIDIA/nvidia-container-toolkit@v1.17.7"),
        named("F", "toolkit", purl="pkg:github/NVIDIA/nvidia-container-toolkit@v1.17.8"),
    ),
    "CPE only": (
        named("A", "NVIDIA product", cpe="cpe:2.3:a:nvidia:container_toolkit:1.17.7:*:*:*:*:*:*:*"),
        named("F", "NVIDIA product", cpe="cpe:2.3:a:nvidia:container_toolkit:1.17.8:*:*:*:*:*:*:*"),
    ),
    "an rpm purl (epoch and release dropped)": (
        named("A", "p1", purl="pkg:rpm/vendor/nvidia-container-toolkit@0:1.17.7-1?arch=x86_64"),
        named("F", "p2", purl="pkg:rpm/vendor/nvidia-container-toolkit@0:1.17.8-1?arch=x86_64"),
    ),
}


@pytest.mark.parametrize("shape", sorted(PAIRS))
def test_the_component_and_its_version_are_read(shape):
    affected, fixed = PAIRS[shape]
    data = flat([affected, fixed], {"known_affected": ["A"], "fixed": ["F"]})
    assert toolkit(data, "1.17.7") == BELOW_BASELINE
    assert toolkit(data, "1.17.8") == CURRENT


@pytest.mark.parametrize("category", ["default_component_of", "installed_on"])
def test_a_relationship_takes_the_version_of_the_product_it_refers_to(category):
    products = [
        named("TK7", "NVIDIA Container Toolkit 1.17.7"),
        named("TK8", "NVIDIA Container Toolkit 1.17.8"),
        named("OS", "Ubuntu 22.04"),
    ]
    relationships = [
        {
            "category": category,
            "product_reference": ref,
            "relates_to_product_reference": "OS",
            "full_product_name": {
                "product_id": f"OS:{ref}",
                "name": f"NVIDIA Container Toolkit on Ubuntu 22.04 ({ref})",
            },
        }
        for ref in ("TK7", "TK8")
    ]
    data = flat(products, {"known_affected": ["OS:TK7"], "fixed": ["OS:TK8"]}, relationships)
    assert toolkit(data, "1.17.7") == BELOW_BASELINE
    assert toolkit(data, "1.17.8") == CURRENT


@pytest.mark.parametrize(
    "text", [">=1.16.0 <1.17.8", ">=1.16.0, <1.17.8", ">= 1.16.0 && < 1.17.8", "1.16.0 - 1.17.7"]
)
def test_a_free_text_range_is_read_with_both_ends(text):
    data = document(
        [version("A", text, "product_version_range"), version("F", "1.17.8")],
        {"known_affected": ["A"], "fixed": ["F"]},
    )
    assert toolkit(data, "1.17.4") == BELOW_BASELINE  # inside (a hyphen range: 1.16.0 - 1.17.7)
    assert toolkit(data, "1.17.8") == CURRENT
    assert toolkit(data, "1.15.0") == CURRENT  # below the lower end: not this range's


def test_a_product_family_names_the_component():
    def family_version(pid: str, number: str) -> dict[str, Any]:
        return {
            "category": "product_version",
            "name": number,
            "product": {"product_id": pid, "name": f"Toolkit {number}"},
        }

    data = document([], {"known_affected": ["A"], "fixed": ["F"]})
    data["product_tree"] = {
        "branches": [
            {
                "category": "vendor",
                "name": "NVIDIA",
                "branches": [
                    {
                        "category": "product_family",
                        "name": "NVIDIA Container Toolkit",
                        "branches": [family_version("A", "1.17.7"), family_version("F", "1.17.8")],
                    }
                ],
            }
        ]
    }
    assert toolkit(data, "1.17.7") == BELOW_BASELINE
    assert toolkit(data, "1.17.8") == CURRENT
