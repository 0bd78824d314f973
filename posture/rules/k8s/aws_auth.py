"""What a tenant's workloads sign in to Kubernetes as through EKS's aws-auth ConfigMap. PURE.

A role that aws-auth maps to a username and groups (inventory/sources/aws_auth.py) gives its
holder those Kubernetes identities: a tenant whose workloads assume the role (the IRSA
annotation `eks.amazonaws.com/role-arn` on a ServiceAccount of its namespaces, or the
`AWS_ROLE_ARN` a pod there carries) can act as them, so the RBAC checks (rbac_eval) judge
their rights as the tenant's. `system:masters` needs no binding: the API server's authoriser
lets the group do everything before RBAC is asked, so it stands for one grant of every verb on
everything, "through" aws-auth. A role ARN is compared without its IAM path: aws-auth's
`rolearn` takes none (AWS documents it; the authenticator drops it from the role an STS token
names), while an IRSA annotation names the role with it (`role/teams/team-x`). Evidence keeps
both as written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.env_seal import SEALED_VALUE
from inventory.snapshot import PolicyRule
from inventory.sources.aws_auth import AWS_AUTH, role_mappings
from inventory.sources.service_accounts import IRSA_ANNOTATION
from posture.inputs import PostureInputs

SYSTEM_MASTERS = "system:masters"
# The grant system:masters stands for: every verb on every resource, cluster-wide.
EVERYTHING = PolicyRule(api_groups=("*",), resources=("*",), verbs=("*",))
MASTERS_ROLE = "(the API server authorises system:masters before RBAC)"


@dataclass(frozen=True)
class MappedRole:
    """An IRSA role of a tenant's workloads that aws-auth maps to Kubernetes identities."""

    role: str
    username: str
    groups: tuple[str, ...]
    assumed_by: tuple[str, ...]  # "ServiceAccount NS/NAME", "pod NS/NAME (env AWS_ROLE_ARN)"

    @property
    def principals(self) -> tuple[str, ...]:
        """As a tenant lists principals: "user:NAME", "group:NAME"."""
        user = (f"user:{self.username}",) if self.username else ()
        return (*user, *(f"group:{g}" for g in self.groups))

    def via(self) -> str:
        where = ", ".join(self.assumed_by[:3]) + (" ..." if len(self.assumed_by) > 3 else "")
        return (
            f"ConfigMap {'/'.join(AWS_AUTH)} maps IAM role {self.role}, assumed by {where}, "
            f"to {', '.join(self.principals)}"
        )


def mapped_roles(inputs: PostureInputs, namespaces: Iterable[str]) -> list[MappedRole]:
    """The aws-auth mapped roles the workloads of `namespaces` assume, by aws-auth's ARN."""
    mappings = role_mappings(inputs.snapshot.configmaps)
    if not mappings:
        return []
    by_key: dict[str, str] = {}
    for arn in sorted(mappings):  # a path aws-auth cannot match yields to the ARN without
        if role_key(arn) not in by_key or role_key(arn) == arn:
            by_key[role_key(arn)] = arn
    owned = set(namespaces)
    assumed: dict[str, set[str]] = {}

    def assume(role: str, who: str) -> None:
        mapped = by_key.get(role_key(role))
        if mapped is not None:
            as_written = f" (role {role})" if role != mapped else ""
            assumed.setdefault(mapped, set()).add(who + as_written)

    for account in inputs.snapshot.service_accounts:
        role = account.identities.get(IRSA_ANNOTATION, "").strip()
        if account.namespace in owned and role:
            assume(role, f"ServiceAccount {account.namespace}/{account.name}")
    for pod in inputs.snapshot.pods:
        if pod.namespace not in owned or not pod.is_active:
            continue
        for var in (v for c in pod.containers for v in c.env if v.name == "AWS_ROLE_ARN"):
            role = (var.value or "").strip()
            if role and var.value != SEALED_VALUE:
                assume(role, f"pod {pod.namespace}/{pod.name} (env AWS_ROLE_ARN)")
    return [
        MappedRole(role, *mappings[role], tuple(sorted(where)))
        for role, where in sorted(assumed.items())
    ]


def role_key(arn: str) -> str:
    """`arn:<partition>:iam::<account>:role/<name>`: the role without its IAM path, as aws-auth
    matches it; anything not a role ARN as written."""
    head, sep, name = arn.partition(":role/")
    if not sep or not head.startswith("arn:"):
        return arn
    return f"{head}:role/{name.rsplit('/', 1)[-1]}"
