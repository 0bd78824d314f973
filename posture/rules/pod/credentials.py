"""POD-008: literal cloud or ML-platform credentials in a tenant container's environment, by
the variable's name and by the value's shape (inventory/credential_shapes.py): literal values,
values taken from a ConfigMap, which keeps them in clear (credentials_configmap.py), and
credentials given on the command line, in `command` or `args` (inventory/credential_args.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.credential_args import ArgumentHit, argument_credentials
from inventory.credential_shapes import CredentialMatch, credential_match, name_rule_holds
from inventory.env_seal import SEALED_VALUE
from inventory.snapshot import Container, EnvVar, Pod
from posture.inputs import PostureInputs
from posture.rules.common import containers_with_paths, hardening_pods
from posture.rules.pod.container_findings import (
    ContainerHit,
    PodHits,
    agree,
    container_drafts,
    containers_named,
    listed,
)
from posture.rules.pod.credentials_configmap import ConfigMaps, configmap_credentials
from posture.rules.pod.visible_devices import env_configmaps_by_name
from posture.rules.registry import FindingDraft, check

# The token JupyterHub's KubeSpawner writes into every single-user server it starts: issued
# by the hub per server start, scoped to that server, and written by the hub itself (the tenant
# has no way to move it into a Secret), so it is not the tenant's pasted credential POD-008 is
# about. Only these names, only in a pod the spawner labels as its own.
HUB_ISSUED_TOKENS = frozenset({"JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN"})


def spawned_by_jupyterhub(pod: Pod) -> bool:
    """KubeSpawner's own labels on a single-user server pod."""
    labels = pod.labels
    return labels.get("component") == "singleuser-server" and "hub.jupyter.org/username" in labels


def literal_credentials(
    container: Container, path: str, hub_issued: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Variables whose literal value is a credential (inventory/credential_shapes.py):
    the name, where, the rule that matched, the value's length and at most the vendor's public
    prefix. The value itself never leaves this function. `hub_issued` names variables written
    by the platform that started the pod, not by the tenant."""
    found = []
    for index, var in enumerate(container.env):
        if var.name in hub_issued:
            continue
        match = stored_match(var)
        if match is None:
            continue  # from a Secret (or other) reference, empty, a placeholder, or no secret
        entry = {
            "name": var.name,
            "field": f"{path}.env[{index}].value",
            "rule": match.rule,
            "kind": match.what,
            "hint": match.hint,
            "value_length": var.length if var.length is not None else len(var.value or ""),
        }
        if match.example:
            # Still a literal secret in the pod spec (the practice reported); say what it is.
            entry["value_kind"] = "documented_example"
            entry["example_of"] = match.example
        found.append(entry)
    return found


def command_line_credentials(container: Container, path: str) -> list[dict[str, Any]]:
    """The credentials given literally in the container's `command` or `args`: where (the
    element's field path), how (`--hf-token`, `HF_TOKEN=`, `aws configure set ...`, or
    `value` for a token known by its shape), the rule and at most the vendor's public prefix;
    never the value."""
    return [
        _argument_entry(hit, path)
        for hit in argument_credentials(container.command, container.args)
    ]


def _argument_entry(hit: ArgumentHit, path: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "field": f"{path}.{hit.field}[{hit.index}]",
        "in": hit.field,
        "index": hit.index,
        "given_as": hit.given_as,
        "rule": hit.match.rule,
        "kind": hit.match.what,
        "hint": hit.match.hint,
    }
    if hit.value_length is not None:
        entry["value_length"] = hit.value_length
    if hit.match.example:
        entry["value_kind"] = "documented_example"
        entry["example_of"] = hit.match.example
    return entry


def stored_match(var: EnvVar) -> CredentialMatch | None:
    """The credential rule a variable matched: judged at the sync from the real value when the
    value was sealed (inventory/env_seal.py), else judged here from the value kept."""
    if var.value == SEALED_VALUE:
        if var.credential_rule is None:
            return None
        if var.credential_rule.startswith("name:") and not name_rule_holds(var.name, var.length):
            return None  # sealed before a name rule asked for a key's length: judged again
        return CredentialMatch(
            var.credential_rule,
            var.credential_kind or "",
            var.credential_hint,
            var.credential_example,
        )
    return credential_match(var.name, var.value)


@check(
    id="POD-008",
    title="Literal cloud or ML-platform credentials in a tenant container's environment",
    severity="high",
    scope="tenant",
    rationale=(
        "A literal `env[].value` is stored in the pod spec in plain text: anyone who can get "
        "or list pods in the namespace, read the owning Deployment or Job, its Helm release "
        "or the GitOps repository, or read etcd backups sees it; it also appears in "
        "`kubectl describe` output and audit logs. Static cloud keys and model-hub tokens "
        "found this way give access to training data, model weights and billing beyond the "
        "cluster (ATT&CK T1552.007, credentials in container API). A credential is known by "
        "the variable SDKs read it from (AWS_SECRET_ACCESS_KEY, AZURE_CLIENT_SECRET and "
        "`AZURE_*_KEY`, HF_TOKEN, OPENAI_API_KEY, WANDB_API_KEY, ...) holding a value long "
        "enough to be the key the vendor issues (16 characters or more: every vendor's key is "
        "longer, so `HF_TOKEN=main` or `WANDB_API_KEY=offline` is none; a secret a person "
        "chooses under a name the rule knows, a platform's `*_PASSWORD` such as "
        "MLFLOW_TRACKING_PASSWORD or AWS_SECRET_ACCESS_KEY, which S3-compatible stores such "
        "as MinIO take, counts at any length; a database's own password variable is no cloud "
        "or ML-platform credential), by the value's shape "
        "(AKIA/ASIA key ids, `hf_`, `sk-`, `sk-ant-`, `ghp_`, `nvapi-`, Slack tokens, a GCP "
        "service-account JSON, a private key, `AccountKey=` in a connection string) whatever "
        "the name, or by a random-looking value in any `*_API_KEY`, `*_TOKEN` or `*_SECRET`; "
        "references, empty values and placeholders (`changeme`, `${VAR}`) are not, nor the "
        "per-server token JupyterHub's spawner itself writes into a single-user server pod "
        "(JUPYTERHUB_API_TOKEN, JPY_API_TOKEN), which the tenant cannot move. A vendor's "
        "documented example key (AWS's `...EXAMPLEKEY`) counts like any value: a literal "
        "secret in a pod spec is the practice reported; its evidence says it is the example. "
        "A variable the container takes from a ConfigMap (`valueFrom.configMapKeyRef`, or "
        "`envFrom.configMapRef`, whose every key becomes a variable after its `prefix`) is "
        "judged the same, by the variable's name and the value's shape: a ConfigMap is no "
        "Secret, and anyone who may read ConfigMaps in the namespace reads it in clear. The "
        "sync keeps no value of it, only each key's length and shape; the evidence names the "
        "ConfigMap and key. A ConfigMap the snapshot does not hold says nothing, and a "
        "Secret reference is what is asked for. A ConfigMap mounted as a volume is not read. "
        "A container's `command` and `args` (init, app, sidecar and debug containers alike) "
        "are read too: a credential on the command line is as readable by anyone who may get "
        "the pod. There a word of a vendor's token shape counts wherever it stands, and a "
        "value counts by the name it is given under, as the variable's would: a flag "
        "(`--hf-token`, `--aws-secret-access-key`, `--openai-api-key`), "
        "`aws configure set aws_secret_access_key`, or a `NAME=value` assignment in a "
        "`sh -c` script (`AWS_SECRET_ACCESS_KEY=... python x.py`); a generic `--token` or "
        "`--api-key` counts only with a value of a token shape (`huggingface-cli login "
        "--token hf_...`). References the kubelet or the shell expands (`$(HF_TOKEN)`, "
        "`$HF_TOKEN`, `${HF_TOKEN}`, `$(cat /run/secrets/...)`), empty values and "
        "placeholders are quiet. On the command line an AWS access key id alone (AKIA... or "
        "ASIA... without its secret) is quiet: it names the key, and grants nothing without "
        "the secret, which is what is reported (in `env` a key id is reported by its shape). "
        "The evidence's `arguments` name the container, `command` or `args` and the index "
        "(`spec.containers[0].args[1]`), how the value was given, the rule and at most the "
        "vendor's public prefix, never the value. The JupyterHub exemption holds only in a "
        "pod KubeSpawner labels as a single-user server (`component=singleuser-server` and a "
        "`hub.jupyter.org/username` label), and only for its env token."
    ),
    remediation=(
        "Rotate the credential now (it must be treated as disclosed), then replace the "
        "`value` at the field path in the evidence with `valueFrom.secretKeyRef` pointing at "
        "a Secret (or mount it as a file); for a ConfigMap's key, move it into a Secret "
        "(`secretKeyRef`, or `envFrom.secretRef` for an `envFrom` ConfigMap) and delete it "
        "from the ConfigMap named in the evidence, whose history (GitOps repository, Helm "
        "release) holds it too; for a command-line credential, give the program the value "
        "from a Secret-backed variable (`$(HF_TOKEN)` in `args` is expanded by the kubelet) or "
        "a mounted file instead of the literal at the `command`/`args` index in the evidence. "
        "Or better drop the static key: use workload "
        "identity (EKS Pod Identity / IRSA, Azure Workload Identity, GKE Workload Identity) "
        "bound to the pod's ServiceAccount. Block regressions with an admission policy that "
        "rejects literal values for these variable names."
    ),
    mappings=("SP800-53:IA-5", "ATT&CK:T1552"),
)
def literal_cloud_credentials(inputs: PostureInputs) -> Iterator[FindingDraft]:
    configmaps = env_configmaps_by_name(inputs)
    found = (
        PodHits(pod, tenant, _credential_hits(pod, configmaps))
        for pod, tenant in hardening_pods(inputs)
    )
    yield from container_drafts("POD-008", inputs, found, title=_credentials_title)


def _credential_hits(pod: Pod, configmaps: ConfigMaps) -> list[ContainerHit]:
    hub_issued = HUB_ISSUED_TOKENS if spawned_by_jupyterhub(pod) else frozenset()
    hits = []
    for container, path in containers_with_paths(pod):
        variables = literal_credentials(container, path, hub_issued)
        variables += configmap_credentials(container, path, pod.namespace, configmaps)
        arguments = command_line_credentials(container, path)
        if not variables and not arguments:
            continue
        evidence = {
            "container": container.name,
            "init_container": container.init,
            "image": container.image,
            "variables": variables,
        }
        if arguments:
            evidence["arguments"] = arguments
        hits.append(ContainerHit(container, evidence))
    return hits


def _credentials_title(ref: str, entries: list[dict[str, Any]], _: list[ContainerHit]) -> str:
    variables = [v for e in entries for v in e["variables"]]
    arguments = [a for e in entries for a in e.get("arguments", ())]
    named = [*map(_variable_named, variables), *map(_argument_named, arguments)]
    names = listed(named, shown=20)
    has = agree(entries, "has", "have")
    # A ConfigMap's value is no literal in the pod spec, but as clear: the title says which.
    what = (
        "credentials in clear"
        if any("configmap" in v for v in variables)
        else "literal credentials"
    )
    where = " and ".join(
        place for place, found in (("env", variables), ("command line", arguments)) if found
    )
    return f"{containers_named(entries)} of {ref} {has} {what} in {where} ({names})"


def _argument_named(argument: dict[str, Any]) -> str:
    """`--hf-token in args[2]`, or by the token's public prefix where no name gave it."""
    given = argument["given_as"]
    if given == "value":
        given = argument["hint"] or argument["kind"]
    return f"{given} in {argument['in']}[{argument['index']}]"


def _variable_named(variable: dict[str, Any]) -> str:
    name = variable["name"]
    if "configmap" in variable:
        name += f" from ConfigMap {variable['configmap']}"
    if "example_of" in variable:
        name += f" ({variable['example_of']}'s documented example)"
    return name
