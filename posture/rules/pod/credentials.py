"""POD-008: literal cloud or ML-platform credentials in a tenant container's environment."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from inventory.snapshot import Container
from posture.inputs import PostureInputs
from posture.rules.common import containers_with_paths, tenant_pods
from posture.rules.registry import FindingDraft, check
from posture.rules.subjects import workload_draft

# Variables that the cloud and ML-platform SDKs read a long-lived secret from. Compared in
# upper case. GOOGLE_APPLICATION_CREDENTIALS is a file path, not a secret, so it is absent.
CREDENTIAL_ENV_NAMES = frozenset(
    {
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AZURE_CLIENT_SECRET",
        "AZURE_CLIENT_CERTIFICATE_PASSWORD",
        "AZURE_STORAGE_KEY",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_CONNECTION_STRING",
        "AZURE_STORAGE_SAS_TOKEN",
        "GOOGLE_APPLICATION_CREDENTIALS_JSON",
        "GOOGLE_API_KEY",
        "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
        "OCI_CLI_KEY_CONTENT",
        "DIGITALOCEAN_ACCESS_TOKEN",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "COHERE_API_KEY",
        "MISTRAL_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HUGGINGFACE_TOKEN",
        "WANDB_API_KEY",
        "NGC_API_KEY",
        "NVIDIA_API_KEY",
        "COMET_API_KEY",
        "NEPTUNE_API_TOKEN",
        "MLFLOW_TRACKING_PASSWORD",
        "DATABRICKS_TOKEN",
    }
)


def literal_credentials(container: Container, path: str) -> list[dict[str, Any]]:
    """Credential variables with a literal, non-empty value: the name, where, and the value's
    length. The value itself never leaves this function."""
    found = []
    for index, var in enumerate(container.env):
        if var.name.strip().upper() not in CREDENTIAL_ENV_NAMES:
            continue
        if var.value is None or not var.value.strip():
            continue  # from a Secret (or other) reference, or empty
        found.append(
            {
                "name": var.name,
                "field": f"{path}.env[{index}].value",
                "value_length": len(var.value),
            }
        )
    return found


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
        "cluster (ATT&CK T1552.007, credentials in container API)."
    ),
    remediation=(
        "Rotate the credential now (it must be treated as disclosed), then replace the "
        "`value` at the field path in the evidence with `valueFrom.secretKeyRef` pointing at "
        "a Secret (or mount it as a file), or better drop the static key: use workload "
        "identity (EKS Pod Identity / IRSA, Azure Workload Identity, GKE Workload Identity) "
        "bound to the pod's ServiceAccount. Block regressions with an admission policy that "
        "rejects literal values for these variable names."
    ),
    mappings=("SP800-53:IA-5", "ATT&CK:T1552"),
)
def literal_cloud_credentials(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        for container, path in containers_with_paths(pod):
            variables = literal_credentials(container, path)
            if not variables:
                continue
            evidence = {
                "container": container.name,
                "init_container": container.init,
                "image": container.image,
                "variables": variables,
            }
            names = ", ".join(v["name"] for v in variables)
            title = (
                f"Container {container.name} of {inputs.workload_of(pod).ref()} has literal "
                f"credentials in env ({names})"
            )
            yield workload_draft(
                "POD-008", inputs, pod, tenant, evidence, key=container.name, title=title
            )
