"""gpuposture's admission policy pack as a demo cluster runs it (DRIFT-005, K8S-009). PURE.

The pack is the one gpuposture generates for the cluster (the demo command asks for it after a
first sync, through posture.policy_packs, and syncs again); here it is made to look as the API
server returns it (server metadata and defaults, which are no drift) and given the two drifts
a platform team really leaves behind after rolling a pack out in Enforce:
- one binding still in `Audit, Warn`: research asked to keep the class-pool placement rule in
  Audit while its jobs move onto the research pool (a weaker mode);
- one policy edited in the cluster: SYS_ADMIN taken out of no-sys-admin's expression so that a
  DCGM profiling job would be admitted (only ALL is still refused).
Pure Python: no Django, no network.
"""

from __future__ import annotations

import copy
import re

from demo.k8s_base import Ids, Obj

AUDITED_BINDING = "gpuposture-class-pool-placement-research"
EDITED_POLICY = "gpuposture-no-sys-admin"
AUDIT_ACTIONS = ["Audit", "Warn"]  # what the generated pack binds with in audit mode
# The capability list in no-sys-admin's expression, and what the hand edit left of it.
_CAPABILITY_LIST = re.compile(r"a in \[[^\]]*\]")
EDITED_CAPABILITIES = "a in ['ALL', 'all', 'All']"
_APPLIED_HOURS = (30.0, 60.0)  # the pack was applied this week, before the snapshot


def deployed_pack(
    cluster: str, pack: list[Obj], *, drifts: bool = True, seed: int = 7
) -> list[Obj]:
    """The generated pack's objects as read back from the cluster, with the demo's drifts."""
    ids = Ids(seed, f"{cluster}/pack")  # its own sequence: the world's objects keep theirs
    objects = [_as_served(ids, o) for o in copy.deepcopy(pack)]
    if drifts:
        _weaker_binding(_named(objects, "ValidatingAdmissionPolicyBinding", AUDITED_BINDING))
        _edited_policy(_named(objects, "ValidatingAdmissionPolicy", EDITED_POLICY))
    return objects


def _as_served(ids: Ids, obj: Obj) -> Obj:
    """Server-set metadata and the defaults the API server fills in."""
    m = obj["metadata"]
    key = f"{obj['kind']}/{m.get('namespace', '')}/{m['name']}"
    m.update(
        creationTimestamp=ids.ago(*_APPLIED_HOURS),
        resourceVersion=ids.resource_version(),
        uid=ids.uid(key),
    )
    spec = obj.get("spec")
    if obj["kind"] == "ValidatingAdmissionPolicy":
        m["generation"] = 1
        match = spec["matchConstraints"]
        _selector_defaults(match)
        for rule in match.get("resourceRules", []):
            rule.setdefault("scope", "*")
        obj["status"] = {"observedGeneration": 1, "typeChecking": {}}
    elif obj["kind"] == "ValidatingAdmissionPolicyBinding":
        m["generation"] = 1
        if "matchResources" in spec:
            _selector_defaults(spec["matchResources"])
    return obj


def _selector_defaults(match: Obj) -> None:
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})


def _weaker_binding(binding: Obj) -> None:
    binding["spec"]["validationActions"] = list(AUDIT_ACTIONS)
    binding["metadata"]["generation"] += 1


def _edited_policy(policy: Obj) -> None:
    validation = policy["spec"]["validations"][0]
    edited, count = _CAPABILITY_LIST.subn(EDITED_CAPABILITIES, validation["expression"])
    # The generator changed shape: say so rather than deploy the pack without its drift.
    if count != 1:
        raise ValueError(f"{EDITED_POLICY}: no capability list to edit in its expression")
    validation["expression"] = edited
    policy["metadata"]["generation"] += 1
    policy["status"]["observedGeneration"] += 1


def _named(objects: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    if len(found) != 1:
        raise ValueError(f"the generated pack has no {kind} {name} to drift")
    return found[0]
