"""The state policies of a self-managed S3 backend (docs/iam/state-backend-*-policy.json): each
role reaches its own stack's state and nothing of another stack's, evaluated request by request.

Where the Pulumi CLI keeps a stack in a bucket (pulumi/pulumi pkg/backend/diy, project mode,
`.pulumi/meta.yaml` version 1: store.go `StackBasePath`, `HistoryDir`, `BackupDir`; lock.go
`stackLockDir` with backend.go `FullyQualifiedName`, `organization/<project>/<stack>`; state.go
`stackPath`, which lists the prefix `<stack>.json` for its `.gz` and `.zst` forms, and
`backupTarget`, which copies the state to `<stack>.json.bak`). A preview only reads (backend.go
`Preview` takes no lock; `apply` writes history and backups only when not a dry run).
"""

import json
from typing import Any

import pytest

from tests.aws_service_reference import actions_matching, supports_condition_key
from tests.iam_policy import Request, allowed, as_list, statements
from tests.repository import PROJECT as PULUMI_PROJECT
from tests.repository import ROOT

IAM_DOCS = ROOT / "docs" / "iam"
BUCKET = "acme-pulumi-state"
PROJECT = "gpu-platform"


def document(name: str) -> dict[str, Any]:
    return dict(json.loads((IAM_DOCS / f"state-backend-{name}-policy.json").read_text()))


def role_of(stack: str) -> dict[str, str]:
    """The condition keys of a role tagged for `stack`, as docs/ci.md says to tag it."""
    return {
        "aws:PrincipalTag/gpu-platform-stack": stack,
        "aws:PrincipalTag/gpu-platform-state-bucket": BUCKET,
    }


def reads(stack: str, action: str, key: str, **context: str) -> bool:
    """Whether a preview or plan role of `stack` may make the request."""
    return allowed(Request(action, obj(key), role_of(stack) | context), [document("read")])


def deploys(stack: str, action: str, key: str, **context: str) -> bool:
    """Whether a deploy role of `stack` may make the request."""
    policies = [document("read"), document("write")]
    return allowed(Request(action, obj(key), role_of(stack) | context), policies)


def obj(key: str) -> str:
    return f"arn:aws:s3:::{BUCKET}" if key == "" else f"arn:aws:s3:::{BUCKET}/{key}"


def listing(prefix: str) -> dict[str, str]:
    return {"s3:prefix": prefix}


def test_the_policies_name_the_projects_directory() -> None:
    assert PULUMI_PROJECT.name == PROJECT


def test_every_action_exists_and_the_listing_is_held_by_its_prefix() -> None:
    for name in ("read", "write"):
        for statement in statements(document(name)):
            for action in as_list(statement["Action"]):
                assert actions_matching(action), action
            if as_list(statement["Action"]) == ["s3:ListBucket"]:
                assert supports_condition_key("s3:ListBucket", "s3:prefix")
                assert list(statement["Condition"]["StringLike"]) == ["s3:prefix"]


@pytest.mark.parametrize(
    "key",
    [
        ".pulumi/meta.yaml",
        ".pulumi/stacks/gpu-platform/dev.json",
        ".pulumi/stacks/gpu-platform/dev.json.gz",
        ".pulumi/stacks/gpu-platform/dev.json.zst",
    ],
)
def test_a_preview_role_reads_the_layout_and_its_own_state(key: str) -> None:
    assert reads("dev", "s3:GetObject", key)


def test_a_preview_role_finds_its_own_state() -> None:
    # stackPath lists the prefix `<stack>.json` to find the compressed forms.
    assert reads("dev", "s3:ListBucket", "", **listing(".pulumi/stacks/gpu-platform/dev.json"))


@pytest.mark.parametrize(
    "key",
    [
        ".pulumi/stacks/gpu-platform/prod.json",
        ".pulumi/stacks/gpu-platform/prod.json.bak",
        ".pulumi/stacks/gpu-platform/prod.json.gz",
        ".pulumi/history/gpu-platform/prod/prod-1764892800000000000.checkpoint.json",
        ".pulumi/backups/gpu-platform/prod/prod.1764892800000000000.json",
        ".pulumi/stacks/gpu-platform/karpenter-dev.json",
        ".pulumi/stacks/other-project/dev.json",
        # The legacy layout's, without a project.
        ".pulumi/stacks/dev.json",
    ],
)
def test_a_preview_role_cannot_read_another_stacks_state(key: str) -> None:
    assert not reads("dev", "s3:GetObject", key)


@pytest.mark.parametrize(
    "prefix",
    [".pulumi/stacks/gpu-platform/", ".pulumi/stacks/gpu-platform/prod.json", ".pulumi/", ""],
)
def test_a_preview_role_cannot_list_other_stacks(prefix: str) -> None:
    assert not reads("dev", "s3:ListBucket", "", **listing(prefix))


@pytest.mark.parametrize(
    "action", ["s3:PutObject", "s3:DeleteObject", "s3:GetObject", "s3:ListBucket"]
)
def test_a_role_without_the_stack_tag_reaches_nothing(action: str) -> None:
    untagged = {"aws:PrincipalTag/gpu-platform-state-bucket": BUCKET}
    request = Request(action, obj(".pulumi/stacks/gpu-platform/dev.json"), untagged)

    assert not allowed(request, [document("read"), document("write")])


@pytest.mark.parametrize("action", ["s3:PutObject", "s3:DeleteObject"])
def test_a_preview_role_writes_nothing(action: str) -> None:
    assert not reads("dev", action, ".pulumi/stacks/gpu-platform/dev.json")
    assert not reads("dev", action, ".pulumi/locks/organization/gpu-platform/dev/abc.json")


@pytest.mark.parametrize(
    ("action", "key"),
    [
        ("s3:PutObject", ".pulumi/stacks/gpu-platform/prod.json"),
        ("s3:PutObject", ".pulumi/stacks/gpu-platform/prod.json.bak"),
        ("s3:DeleteObject", ".pulumi/stacks/gpu-platform/prod.json.bak"),
        ("s3:PutObject", ".pulumi/history/gpu-platform/prod/prod-1764892800000000000.history.json"),
        ("s3:PutObject", ".pulumi/backups/gpu-platform/prod/prod.1764892800000000000.json"),
        ("s3:PutObject", ".pulumi/locks/organization/gpu-platform/prod/4f1d.json"),
        ("s3:GetObject", ".pulumi/locks/organization/gpu-platform/prod/7a2e.json"),
        ("s3:DeleteObject", ".pulumi/locks/organization/gpu-platform/prod/4f1d.json"),
    ],
)
def test_a_deploy_role_writes_its_own_stacks_state_and_lock(action: str, key: str) -> None:
    assert deploys("prod", action, key)
    assert not deploys("dev", action, key)


def test_a_deploy_role_finds_the_locks_of_its_own_stack_only() -> None:
    # checkForLock lists `<lock dir>/` before it writes its own lock.
    own = listing(".pulumi/locks/organization/gpu-platform/prod/")

    assert deploys("prod", "s3:ListBucket", "", **own)
    assert not deploys("dev", "s3:ListBucket", "", **own)


def test_a_deploy_role_cannot_change_the_backends_layout() -> None:
    assert not deploys("prod", "s3:PutObject", ".pulumi/meta.yaml")
