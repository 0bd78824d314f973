"""POD-008 by name and by value shape: the major clouds and model hubs, generic names with a
random-looking value, and the references, empty values and placeholders that must stay quiet.

Every value is real-shaped but made up here from a seeded generator, so no string in the repo
looks like a live token to a secret scanner."""

from __future__ import annotations

import json
import random
import string

import pytest

from inventory.credential_shapes import credential_match, is_placeholder, looks_random
from tests.posture.builders import container, container_entry, env, inputs, pod, run, tenant

TEAM = tenant("team", namespaces=("team-a",))
ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
HEX = "0123456789abcdef"
BASE32 = string.ascii_uppercase + "234567"
_rng = random.Random(17)


def rand(length: int, alphabet: str = ALNUM) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(length))


PEM_BEGIN = "-----BEGIN PRIVATE KEY-----"
GCP_KEY = json.dumps(
    {
        "type": "service_account",
        "project_id": "acme-ml-prod",
        "private_key_id": rand(40, HEX),
        "private_key": f"{PEM_BEGIN}\n{rand(64, BASE64)}\n-----END PRIVATE KEY-----",
        "client_email": "trainer@acme-ml-prod.iam.gserviceaccount.com",
    },
    indent=2,
)
AZURE_CONNECTION = (
    "DefaultEndpointsProtocol=https;AccountName=acmemlsets;"
    f"AccountKey={rand(86, BASE64)}==;EndpointSuffix=core.windows.net"
)
SLACK_WEBHOOK = (
    f"https://hooks.slack.com/services/T{rand(8, BASE32)}/B{rand(10, BASE32)}/{rand(24)}"
)

SLACK_BOT = f"xoxb-{rand(12, string.digits)}-{rand(13, string.digits)}-{rand(24)}"
POSITIVE = {
    # name, value, rule, hint
    "aws-secret": ("AWS_SECRET_ACCESS_KEY", rand(40, BASE64), "name:AWS_SECRET_ACCESS_KEY", None),
    "aws-session": ("AWS_SESSION_TOKEN", rand(300, BASE64), "name:AWS_SESSION_TOKEN", None),
    "aws-key-id": (
        "AWS_ACCESS_KEY_ID",
        "AKIA" + rand(16, BASE32),
        "value:aws_access_key_id",
        "AKIA…",
    ),
    "aws-temp-id-any-name": (
        "S3_KEY",
        "ASIA" + rand(16, BASE32),
        "value:aws_access_key_id",
        "ASIA…",
    ),
    "azure-client-secret": (
        "AZURE_CLIENT_SECRET",
        rand(3) + "8Q~" + rand(34, URLSAFE),
        "name:AZURE_CLIENT_SECRET",
        None,
    ),
    "azure-openai-key": ("AZURE_OPENAI_API_KEY", rand(32, HEX), "name:AZURE_*_KEY", None),
    "azure-storage-key": ("AZURE_STORAGE_KEY", rand(86, BASE64) + "==", "name:AZURE_*_KEY", None),
    "azure-search-key": ("AZURE_SEARCH_ADMIN_KEY", rand(52), "name:AZURE_*_KEY", None),
    "azure-connection": (
        "BLOB_CONN",
        AZURE_CONNECTION,
        "value:azure_connection_string",
        "AccountKey=…",
    ),
    "gcp-json-in-gac": (
        "GOOGLE_APPLICATION_CREDENTIALS",
        GCP_KEY,
        "value:gcp_service_account_json",
        None,
    ),
    "gcp-json-any-name": ("GCP_SA_KEY", GCP_KEY, "value:gcp_service_account_json", None),
    "google-api-key": ("GEMINI_KEY", "AIza" + rand(35, URLSAFE), "value:google_api_key", "AIza…"),
    "hf-token": ("HF_TOKEN", "hf_" + rand(34), "value:hugging_face_token", "hf_…"),
    "hf-hub-token": (
        "HUGGING_FACE_HUB_TOKEN",
        "hf_" + rand(34),
        "value:hugging_face_token",
        "hf_…",
    ),
    "hf-lower-name": ("hf_token", "hf_" + rand(34), "value:hugging_face_token", "hf_…"),
    "openai-project": (
        "OPENAI_API_KEY",
        "sk-proj-" + rand(156, URLSAFE),
        "value:openai_api_key",
        "sk-proj-…",
    ),
    "openai-legacy": ("LLM_KEY", "sk-" + rand(48), "value:openai_api_key", "sk-…"),
    "anthropic": (
        "ANTHROPIC_API_KEY",
        "sk-ant-api03-" + rand(93, URLSAFE) + "AA",
        "value:anthropic_api_key",
        "sk-ant-…",
    ),
    "wandb": ("WANDB_API_KEY", rand(40, HEX), "value:wandb_api_key", None),
    "github-classic": ("GITHUB_TOKEN", "ghp_" + rand(36), "value:github_token", "ghp_…"),
    "github-fine-grained": (
        "GIT_PAT",
        "github_pat_" + rand(82, ALNUM + "_"),
        "value:github_token",
        "github_pat_…",
    ),
    "slack-bot": ("SLACK_BOT_TOKEN", SLACK_BOT, "value:slack_token", "xoxb-…"),
    "slack-webhook": (
        "ALERT_WEBHOOK",
        SLACK_WEBHOOK,
        "value:slack_webhook",
        "https://hooks.slack.com/…",
    ),
    "ngc": ("NGC_API_KEY", "nvapi-" + rand(64, URLSAFE), "value:nvidia_api_key", "nvapi-…"),
    "pem": (
        "TLS_KEY",
        "-----BEGIN RSA PRIVATE KEY-----\n" + rand(64, BASE64),
        "value:private_key_pem",
        "-----BEGIN RSA PRIVATE KEY-----…",
    ),
    "generic-api-key-uuid": (
        "PINECONE_API_KEY",
        "3f2504e0-4f89-41d3-9a0c-0305e82c3301",
        "generic:*_API_KEY",
        None,
    ),
    "generic-token": ("MODEL_REGISTRY_TOKEN", rand(32, URLSAFE), "generic:*_TOKEN", None),
    "generic-secret": ("JWT_SECRET", rand(48, BASE64), "generic:*_SECRET", None),
    "generic-secret-key": (
        "DJANGO_SECRET_KEY",
        rand(50, ALNUM + "!@#%^&*(-_=+)"),
        "generic:*_SECRET_KEY",
        None,
    ),
}


@pytest.mark.parametrize(("name", "value", "rule", "hint"), POSITIVE.values(), ids=POSITIVE.keys())
def test_credential_by_name_or_shape(name, value, rule, hint):
    match = credential_match(name, value)
    assert match is not None and (match.rule, match.hint) == (rule, hint)


NEGATIVE = {
    "reference": ("HF_TOKEN", None),
    "empty": ("AWS_SECRET_ACCESS_KEY", ""),
    "blank": ("AWS_SECRET_ACCESS_KEY", "   "),
    "changeme": ("OPENAI_API_KEY", "changeme"),
    "change-me": ("AZURE_CLIENT_SECRET", "CHANGE_ME"),
    "shell-var": ("HF_TOKEN", "${HF_TOKEN}"),
    "dollar-var": ("HF_TOKEN", "$HF_TOKEN"),
    "kubernetes-var": ("WANDB_API_KEY", "$(WANDB_KEY_FROM_SECRET)"),
    "helm-template": ("ANTHROPIC_API_KEY", "{{ .Values.anthropic.apiKey }}"),
    "angle-placeholder": ("OPENAI_API_KEY", "<your-openai-api-key>"),
    "your-key-here": ("NGC_API_KEY", "your-ngc-api-key-here"),
    "masked": ("AWS_SECRET_ACCESS_KEY", "********"),
    "xxx": ("AZURE_STORAGE_KEY", "xxxxxxxxxxxxxxxxxxxx"),
    "hf-xxx": ("HF_TOKEN", "hf_" + "x" * 34),
    "truncated": ("OPENAI_API_KEY", "sk-proj-..."),
    "none-word": ("HF_TOKEN", "none"),
    "gac-path": ("GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/key.json"),
    "token-path": ("HF_TOKEN", "/var/run/secrets/hf/token"),
    "region": ("AWS_REGION", "eu-west-1"),
    "key-id-name-only": ("AWS_ACCESS_KEY_ID", "minio"),
    "model": ("MODEL_ID", "meta-llama/Llama-3.1-8B-Instruct"),
    "git-sha": ("GIT_COMMIT", "9fceb02d0ae598e95dc970b74767f19372d61af8"),
    "wandb-run-id": ("WANDB_RUN_ID", "a1b2c3d4"),
    "wandb-project": ("WANDB_PROJECT", "llama-finetune-2024"),
    "generic-words": ("OAUTH_CLIENT_SECRET", "ml-platform-inference-service-v1"),
    "generic-short": ("GRAFANA_API_KEY", "grafana-ro"),
    "generic-flag": ("USE_TOKEN", "true"),
    "generic-audience": ("SERVICE_TOKEN", "kafka-consumer-token-v2-prod"),
    "generic-url": (
        "DISCOVERY_TOKEN",
        "https://auth.example.com/realms/ml/protocol/openid-connect",
    ),
    "not-a-credential-name": ("NVIDIA_VISIBLE_DEVICES", "GPU-3f2504e0-4f89-41d3-9a0c-0305e82c3301"),
}


@pytest.mark.parametrize(("name", "value"), NEGATIVE.values(), ids=NEGATIVE.keys())
def test_not_a_credential(name, value):
    assert credential_match(name, value) is None


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("changeme", True),
        ("REPLACE-ME", True),
        ("${SECRET}", True),
        ("$(API_KEY)", True),
        ("{{ secret }}", True),
        ("<token>", True),
        ("x", True),
        ("0000000000", True),
        ("sk-...", True),
        ("your_token", True),
        ("redacted", True),
        ("hf_" + rand(34), False),
        (rand(40, BASE64), False),
    ],
)
def test_is_placeholder(value, placeholder):
    assert is_placeholder(value) is placeholder


@pytest.mark.parametrize(
    ("value", "random_looking"),
    [
        (rand(40, HEX), True),
        (rand(24, URLSAFE), True),
        ("supersecretpassword2024", True),  # a literal password is a secret too
        ("consumer-group-2024", False),
        ("aaaaaaaaaaaaaaaaaaaaaaaa1", False),
        ("s3://bucket/path/2024/run-7", False),
        ("/etc/secrets/token", False),
        ("a random token value", False),
        ("ALLCAPSLETTERSONLYHERE", False),
    ],
)
def test_looks_random(value, random_looking):
    assert looks_random(value) is random_looking


def test_pod008_evidence_names_the_rule_and_never_the_value():
    hf, key_id = "hf_" + rand(34), "AKIA" + rand(16, BASE32)
    variables = (
        env("HF_TOKEN", hf),
        env("AWS_ACCESS_KEY_ID", key_id),
        env("AWS_SECRET_ACCESS_KEY", None, "secretKeyRef:aws/secret"),
        env("OPENAI_API_KEY", "${OPENAI_API_KEY}"),
    )
    p = pod("team-a", containers=(container(env=variables),))
    (draft,) = run("POD-008", inputs(pods=(p,), tenants=(TEAM,)))
    text = json.dumps(draft.evidence) + draft.title
    assert hf not in text and key_id not in text and hf[3:10] not in text
    assert [(v["name"], v["rule"], v["hint"]) for v in container_entry(draft)["variables"]] == [
        ("HF_TOKEN", "value:hugging_face_token", "hf_…"),
        ("AWS_ACCESS_KEY_ID", "value:aws_access_key_id", "AKIA…"),
    ]
    assert container_entry(draft)["variables"][0]["field"] == "spec.containers[0].env[0].value"


def test_pod008_gcp_json_in_google_application_credentials_fires():
    variable = env("GOOGLE_APPLICATION_CREDENTIALS", GCP_KEY)
    p = pod("team-a", containers=(container(env=(variable,)),))
    (draft,) = run("POD-008", inputs(pods=(p,), tenants=(TEAM,)))
    assert container_entry(draft)["variables"][0]["rule"] == "value:gcp_service_account_json"
    assert "PRIVATE KEY" not in json.dumps(draft.evidence)


def test_demo_world_pasted_tokens():
    from tests.posture.test_rules_rbac import demo_worlds

    worlds = demo_worlds()
    (draft,) = run("POD-008", worlds["prod-east"])
    assert (draft.subject_kind, draft.subject_name, draft.tenants) == (
        "Job",
        "lora-sweep",
        ("research",),
    )
    assert [(v["name"], v["rule"]) for v in container_entry(draft)["variables"]] == [
        ("HF_TOKEN", "value:hugging_face_token"),
        ("WANDB_API_KEY", "value:wandb_api_key"),
    ]
    # neo-west's protein-train takes its AWS key from a Secret: the clean contrast. Its only
    # POD-008 is research's vcluster fine-tune, whose token is on the command line.
    (west,) = run("POD-008", worlds["neo-west"])
    assert west.subject_name.startswith("finetune-") and "protein" not in west.subject_name
    assert container_entry(west)["arguments"] and container_entry(west)["variables"] == []


def test_pod008_jupyterhub_server_token_is_the_hubs_not_the_tenants():
    """KubeSpawner writes JUPYTERHUB_API_TOKEN into each single-user server it starts; a
    pasted cloud key in the same pod still fires, and the same token name elsewhere too."""
    hub_token, aws_secret = rand(32, HEX), rand(40, BASE64)
    spawned = {
        "app": "jupyterhub",
        "component": "singleuser-server",
        "hub.jupyter.org/username": "ana",
    }
    variables = (
        env("JUPYTERHUB_API_TOKEN", hub_token),
        env("JPY_API_TOKEN", hub_token),
        env("AWS_SECRET_ACCESS_KEY", aws_secret),
    )
    server = pod("team-a", "jupyter-ana", containers=(container(env=variables),), labels=spawned)
    (draft,) = run("POD-008", inputs(pods=(server,), tenants=(TEAM,)))
    assert [v["name"] for v in container_entry(draft)["variables"]] == ["AWS_SECRET_ACCESS_KEY"]

    hand_made = pod("team-a", "worker", containers=(container(env=variables[:1]),))
    (draft,) = run("POD-008", inputs(pods=(hand_made,), tenants=(TEAM,)))
    assert [v["name"] for v in container_entry(draft)["variables"]] == ["JUPYTERHUB_API_TOKEN"]
