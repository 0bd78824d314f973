"""POD-006..008: GPU resource declarations, image provenance and literal credentials of
tenant containers (DESIGN §2, §5). Platform pods never count."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from inventory.snapshot import Container, Pod
from posture.inputs import PostureInputs, TenantInfo, TrustClassInfo
from posture.rules.common import container_path, pod_draft, tenant_pods
from posture.rules.registry import FindingDraft, check


def _containers(pod: Pod) -> list[tuple[Container, str]]:
    return [(c, container_path(pod, c)) for c in pod.containers]


# --- POD-006 -------------------------------------------------------------------------------


def _same_quantity(a: str, b: str) -> bool:
    """GPU quantities are whole numbers: "1" and " 01" are the same; other text compares as
    written (the API server would refuse it anyway)."""
    try:
        return int(a.strip()) == int(b.strip())
    except ValueError:
        return a.strip() == b.strip()


def gpu_request_mismatches(container: Container, path: str) -> list[dict[str, Any]]:
    """Each nvidia.com/* request with no limit or a different limit. A limit with no request
    is fine: requests of extended resources default to their limits."""
    found = []
    for name, requested in sorted(container.gpu_requests.items()):
        limit = container.gpu_limits.get(name)
        if limit is not None and _same_quantity(requested, limit):
            continue
        found.append(
            {
                "resource": name,
                "request": requested,
                "limit": limit,
                "problem": "request without a limit" if limit is None else "request != limit",
                "field": f'{path}.resources.requests["{name}"]',
            }
        )
    return found


@check(
    id="POD-006",
    title="GPU resource request differs from its limit, or has no limit",
    severity="medium",
    scope="tenant",
    rationale=(
        "GPUs, time-sliced replicas and MIG devices are extended resources: the scheduler "
        "and ResourceQuota count `requests`, the device plugin allocates by `limits`, and "
        "the API server rejects a pod whose extended-resource request differs from its limit "
        "or lacks one. A manifest or snapshot that carries such a mismatch was either never "
        "admitted (so what runs differs from what the tenant declared) or bypassed admission; "
        "either way quotas and the approved GPU allocation stop describing what the workload "
        "gets."
    ),
    remediation=(
        "In the container at the path in the evidence, set `resources.limits` for each "
        "`nvidia.com/*` resource listed (e.g. `nvidia.com/gpu: 1`, `nvidia.com/mig-1g.10gb: "
        "1`) and either remove the matching `resources.requests` entry (it defaults to the "
        "limit) or make it equal. Validate manifests before deploying with "
        "`kubectl apply --dry-run=server -f <manifest>`, which runs the same admission checks."
    ),
    mappings=("SP800-53:CM-6",),
)
def gpu_request_limit_mismatch(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        for container, path in _containers(pod):
            mismatches = gpu_request_mismatches(container, path)
            if not mismatches:
                continue
            evidence = {
                "container": container.name,
                "init_container": container.init,
                "mismatches": mismatches,
                "requests": dict(container.gpu_requests),
                "limits": dict(container.gpu_limits),
            }
            names = ", ".join(m["resource"] for m in mismatches)
            title = (
                f"Container {container.name} of pod {pod.namespace}/{pod.name}: GPU request "
                f"differs from limit ({names})"
            )
            yield pod_draft("POD-006", pod, tenant, evidence, key=container.name, title=title)


# --- POD-007 -------------------------------------------------------------------------------

DOCKER_HUB = "docker.io"
# Docker Hub's other names: the daemon rewrites them to docker.io.
DOCKER_HUB_ALIASES = ("index.docker.io", "registry-1.docker.io", "registry.hub.docker.com")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class ImageRef:
    registry: str  # host[:port], lower case; docker.io when the reference names none
    repository: str  # registry/path, e.g. "docker.io/library/busybox"
    tag: str | None
    digest: str | None  # "sha256:..." as written after "@"


def _registry_name(host: str) -> str:
    host = host.lower()
    return DOCKER_HUB if host in DOCKER_HUB_ALIASES else host


def parse_image(image: str) -> ImageRef:
    """Split a reference as the container runtime does: the first path component is a
    registry host only when it has a dot or a port, or is `localhost`; otherwise the image is
    on Docker Hub, and a single-component name lives under `library/`."""
    name, _, digest = image.strip().partition("@")
    tag = None
    last = name.rfind("/")
    colon = name.rfind(":")
    if colon > last:  # a colon before the last slash is a registry port, not a tag
        name, tag = name[:colon], name[colon + 1 :]
    first, _, rest = name.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        registry, path = _registry_name(first), rest
    else:
        registry, path = DOCKER_HUB, name if "/" in name else f"library/{name}"
    return ImageRef(registry, f"{registry}/{path}".lower(), tag, digest or None)


def _approved_entry(entry: str) -> str:
    entry = entry.strip().lower().removeprefix("https://").removeprefix("http://").rstrip("/")
    host, sep, rest = entry.partition("/")
    return _registry_name(host) + sep + rest


def approved_by(ref: ImageRef, approved: tuple[str, ...]) -> str | None:
    """The approved entry (a registry host, or a host/path prefix) the image falls under.
    Hosts compare with their port: registry:5000 is a different endpoint from registry."""
    for raw in approved:
        entry = _approved_entry(raw)
        if entry and (ref.repository == entry or ref.repository.startswith(entry + "/")):
            return raw
    return None


def image_problems(ref: ImageRef, cls: TrustClassInfo) -> list[str]:
    problems = []
    if cls.approved_registries and approved_by(ref, cls.approved_registries) is None:
        problems.append(f"registry {ref.registry} is not approved for trust class {cls.slug}")
    if cls.require_image_digest and not (ref.digest and _DIGEST.match(ref.digest)):
        problems.append("not pinned by an @sha256: digest")
    return problems


@check(
    id="POD-007",
    title="Image not from an approved registry, or not pinned by digest",
    severity="medium",
    scope="tenant",
    rationale=(
        "A tenant's trust class names the registries its images may come from and whether "
        "they must be pinned by digest. An image from elsewhere has not passed the scanning, "
        "signing and provenance controls of the approved registries, and runs next to GPUs "
        "that hold other tenants' models and data. A tag is mutable: whoever can push to the "
        "repository can change what runs on the next pull, so only a `@sha256:` digest fixes "
        "the code that was reviewed."
    ),
    remediation=(
        "Mirror the image into one of the approved registries listed in the evidence (e.g. "
        "`crane copy <image> <approved-registry>/<path>:<tag>`), then reference it by digest "
        "in the container's `image` field at the path shown: `<registry>/<path>@sha256:<digest>` "
        "(`crane digest <image>` prints it). Enforce both with an admission policy on the "
        "tenant namespace (Kyverno `verifyImages` / a ValidatingAdmissionPolicy on "
        "`spec.containers[*].image` and `spec.initContainers[*].image`)."
    ),
    mappings=("SP800-53:SR-3", "SP800-53:CM-14"),
)
def unapproved_image(inputs: PostureInputs) -> Iterator[FindingDraft]:
    for pod, tenant in tenant_pods(inputs):
        cls = tenant.trust_class
        if not cls.approved_registries and not cls.require_image_digest:
            continue
        for container, path in _containers(pod):
            ref = parse_image(container.image)
            problems = image_problems(ref, cls)
            if problems:
                yield _image_draft(pod, tenant, container, path, ref, problems)


def _image_draft(
    pod: Pod, tenant: TenantInfo, container: Container, path: str, ref: ImageRef, problems: list
) -> FindingDraft:
    cls = tenant.trust_class
    evidence = {
        "container": container.name,
        "init_container": container.init,
        "field": f"{path}.image",
        "image": container.image,
        "registry": ref.registry,
        "repository": ref.repository,
        "tag": ref.tag,
        "digest": ref.digest,
        "approved_registries": list(cls.approved_registries),
        "require_image_digest": cls.require_image_digest,
        "problems": problems,
    }
    title = (
        f"Container {container.name} of pod {pod.namespace}/{pod.name} runs {container.image}: "
        + "; ".join(problems)
    )
    return pod_draft("POD-007", pod, tenant, evidence, key=container.name, title=title)


# --- POD-008 -------------------------------------------------------------------------------

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
        for container, path in _containers(pod):
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
                f"Container {container.name} of pod {pod.namespace}/{pod.name} has literal "
                f"credentials in env ({names})"
            )
            yield pod_draft("POD-008", pod, tenant, evidence, key=container.name, title=title)
