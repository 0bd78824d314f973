"""POD-008 reads a container's `command` and `args`: a token put on the command line is in the pod
spec in clear, as a literal env value is. Judged with the env side's certainty: a vendor's token
shape anywhere, a value given to a flag, `aws configure set` or a `NAME=value` assignment of a
name the SDKs read a secret from; references, placeholders and an access key id alone are quiet.
The evidence names the container, the field and the index, never the value.

Values are made up here from a seeded generator."""

from __future__ import annotations

import json
import random
import string

import pytest

from tests.posture.builders import container, container_entry, env, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
ALNUM = string.ascii_letters + string.digits
_rng = random.Random(29)


def rand(length: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(length))


HF = "hf_" + rand(34)
AWS_SECRET = rand(40, ALNUM + "+/")
KEY_ID = "AKIA" + rand(16, string.ascii_uppercase + "234567")
OPENAI = "sk-proj-" + rand(100, ALNUM + "-_")
PEM_BODY = rand(64)
PEM = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----"
# The secret parts (a PEM's header is the public hint the evidence may show).
SECRETS = (HF, AWS_SECRET, KEY_ID, OPENAI, PEM_BODY)


def judged(command: tuple[str, ...] = (), args: tuple[str, ...] = (), **fields) -> list:
    p = pod("team-a", containers=(container(command=command, args=args, **fields),))
    return run("POD-008", inputs(pods=(p,), tenants=(TEAM,)))


def arguments(drafts) -> list[tuple[str, str, str]]:
    """(field, given_as, rule) of each command-line credential of the only container."""
    (draft,) = drafts
    return [(a["field"], a["given_as"], a["rule"]) for a in container_entry(draft)["arguments"]]


def assert_no_secret(drafts) -> None:
    text = "".join(json.dumps(d.evidence) + d.title for d in drafts)
    for secret in SECRETS:
        assert secret not in text and secret[4:14] not in text


LOUD = {
    "hf-flag-in-command": (
        ("python", "train.py", "--hf-token", HF),
        (),
        [("spec.containers[0].command[3]", "--hf-token", "value:hugging_face_token")],
    ),
    "aws-secret-flag-equals-in-args": (
        ("python", "sync.py"),
        (f"--aws-secret-access-key={AWS_SECRET}", "--bucket=s3://data"),
        [
            (
                "spec.containers[0].args[0]",
                "--aws-secret-access-key",
                "name:AWS_SECRET_ACCESS_KEY",
            )
        ],
    ),
    "aws-configure-set-in-sh-c": (
        ("sh", "-c"),
        (
            f"aws configure set aws_access_key_id {KEY_ID} && "
            f"aws configure set aws_secret_access_key {AWS_SECRET} && python train.py",
        ),
        [
            (
                "spec.containers[0].args[0]",
                "aws configure set aws_secret_access_key",
                "name:AWS_SECRET_ACCESS_KEY",
            )
        ],
    ),
    "huggingface-cli-login-token": (
        ("/bin/bash", "-c", f"huggingface-cli login --token {HF}; python train.py"),
        (),
        [("spec.containers[0].command[2]", "--token", "value:hugging_face_token")],
    ),
    "assignment-before-a-command": (
        ("sh", "-c", f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} python x.py"),
        (),
        [
            (
                "spec.containers[0].command[2]",
                "AWS_SECRET_ACCESS_KEY=",
                "name:AWS_SECRET_ACCESS_KEY",
            )
        ],
    ),
    "export-quoted": (
        ("sh", "-c", f"export OPENAI_API_KEY='{OPENAI}'; exec python serve.py"),
        (),
        [("spec.containers[0].command[2]", "OPENAI_API_KEY=", "value:openai_api_key")],
    ),
    "generic-flag-with-a-token-shape": (
        ("python", "serve.py"),
        ("--api-key", OPENAI),
        [("spec.containers[0].args[1]", "--api-key", "value:openai_api_key")],
    ),
    "pem-in-an-argument": (
        (),
        ("--tls-key", PEM),
        [("spec.containers[0].args[1]", "value", "value:private_key_pem")],
    ),
}


@pytest.mark.parametrize(("command", "args", "expected"), LOUD.values(), ids=LOUD.keys())
def test_a_credential_on_the_command_line_is_reported_by_field_and_index(command, args, expected):
    drafts = judged(command, args)
    assert arguments(drafts) == expected
    assert "command line" in drafts[0].title
    assert_no_secret(drafts)


QUIET = {
    "kubelet-reference": (("python", "train.py"), ("--hf-token", "$(HF_TOKEN)")),
    "kubelet-reference-equals": ((), ("--aws-secret-access-key=$(AWS_SECRET_ACCESS_KEY)",)),
    "shell-references": (
        ("sh", "-c", 'huggingface-cli login --token "$HF_TOKEN" && python x.py --t ${HF_TOKEN}'),
        (),
    ),
    "command-substitution": (
        ("sh", "-c", "AWS_SECRET_ACCESS_KEY=$(cat /run/secrets/aws) python x.py"),
        (),
    ),
    "placeholder": ((), ("--hf-token", "changeme", "--aws-secret-access-key=")),
    "branch-not-a-key": ((), ("--hf-token", "main")),
    "generic-token-without-a-shape": ((), ("--token", rand(32))),
    "unknown-assignment": (("sh", "-c", f"RUN_ID={rand(32)} python x.py"), ()),
    "access-key-id-alone": (
        ("sh", "-c", f"aws configure set aws_access_key_id {KEY_ID} && aws s3 ls"),
        ("--aws-access-key-id", KEY_ID),
    ),
    "a-path-to-the-secret": ((), ("--hf-token-file", "/var/run/secrets/hf/token")),
    "ordinary-training-command": (
        ("torchrun", "--nproc-per-node=8", "train.py"),
        ("--model", "meta-llama/Llama-3.1-8B-Instruct", "--lr=3e-4", "--output=/ckpt"),
    ),
}


@pytest.mark.parametrize(("command", "args"), QUIET.values(), ids=QUIET.keys())
def test_references_placeholders_and_key_ids_alone_are_quiet(command, args):
    assert judged(command, args) == []


def test_init_app_and_env_of_one_workload_make_one_finding():
    """An init container's `sh -c` login and the app's flag: one finding for the Job, each
    container listing where; an env credential beside an argument one shares the entry."""
    init = container(
        "fetch", init=True, command=("sh", "-c", f"huggingface-cli login --token {HF}")
    )
    app = container(
        "train",
        args=("--aws-secret-access-key", AWS_SECRET),
        env=(env("OPENAI_API_KEY", OPENAI),),
    )
    job = dict(owner_kind="Job", owner_name="lora")
    pods = tuple(pod("team-a", f"lora-{i}", containers=(init, app), **job) for i in range(2))
    (draft,) = run("POD-008", inputs(pods=pods, tenants=(TEAM,)))
    assert (draft.subject_kind, draft.subject_name) == ("Job", "lora")
    fetch, train = container_entry(draft, "fetch"), container_entry(draft, "train")
    assert [a["field"] for a in fetch["arguments"]] == ["spec.initContainers[0].command[2]"]
    assert [a["field"] for a in train["arguments"]] == ["spec.containers[0].args[1]"]
    assert [v["name"] for v in train["variables"]] == ["OPENAI_API_KEY"]
    assert "env and command line" in draft.title
    assert_no_secret([draft])


def test_an_ephemeral_containers_command_is_read():
    debug = container("debugger", ephemeral=True, command=("sh", "-c", f"HF_TOKEN={HF} python"))
    p = pod("team-a", containers=(container(), debug))
    (draft,) = run("POD-008", inputs(pods=(p,), tenants=(TEAM,)))
    assert container_entry(draft, "debugger")["arguments"][0]["field"] == (
        "spec.ephemeralContainers[0].command[2]"
    )


def test_the_jupyterhub_exemption_still_covers_only_its_env_token():
    """A spawned server's own JUPYTERHUB_API_TOKEN is exempt in env; a Hugging Face token on
    the same server's command line is the tenant's and fires."""
    spawned = {"component": "singleuser-server", "hub.jupyter.org/username": "ana"}
    server = container(
        env=(env("JUPYTERHUB_API_TOKEN", rand(32, "0123456789abcdef")),),
        args=("start-notebook.sh", f"--hf-token={HF}"),
    )
    p = pod("team-a", "jupyter-ana", containers=(server,), labels=spawned)
    (draft,) = run("POD-008", inputs(pods=(p,), tenants=(TEAM,)))
    assert container_entry(draft)["variables"] == []
    assert [a["given_as"] for a in container_entry(draft)["arguments"]] == ["--hf-token"]


@pytest.mark.django_db
def test_the_stored_finding_holds_no_secret_from_the_command_line(tmp_path):
    """Synced from a snapshot and scored: the finding in the database says where, not what."""
    from inventory.services import cluster_sync_from_snapshot
    from inventory.sync import cluster_get_or_create
    from posture.models import Finding
    from posture.services import posture_evaluate
    from tenants.models import Tenant, TenantNamespace, TrustClass

    team = Tenant.objects.create(
        slug="team", name="Team", trust_class=TrustClass.objects.get(slug="internal")
    )
    TenantNamespace.objects.create(tenant=team, name="team-a")
    trainer = {
        "name": "train",
        "image": "registry.example.com/train:1",
        "command": ["python", "train.py", "--hf-token", HF],
        "args": [f"--aws-secret-access-key={AWS_SECRET}"],
    }
    items = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "train", "namespace": "team-a"},
            "spec": {"nodeName": "gpu-1", "containers": [trainer]},
            "status": {"phase": "Running"},
        },
    ]
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    cluster_sync_from_snapshot(cluster=cluster_get_or_create(name="lab"), paths=[path])
    posture_evaluate()
    finding = Finding.objects.get(check_id="POD-008")
    entry = finding.evidence["containers"][0]
    assert [a["field"] for a in entry["arguments"]] == [
        "spec.containers[0].command[3]",
        "spec.containers[0].args[0]",
    ]
    stored = json.dumps(finding.evidence) + finding.title
    assert HF not in stored and AWS_SECRET not in stored
