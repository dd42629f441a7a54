"""The state policies of a self-managed S3 backend (docs/iam/state-backend-*-policy.json): each
role reaches its own stack's state and nothing of another stack's, evaluated request by request.

The keys are where the Pulumi CLI keeps a stack (pulumi/pulumi v3.259.0, pkg/backend/diy,
project mode, `.pulumi/meta.yaml` version 1), built below by the same rules as upstream's path
functions. A preview only reads (backend.go `Preview` takes no lock; `apply` writes history and
backups only when not a dry run), but every operation reads the stack's tags file as well as its
state (state.go `getTarget` calls `loadStackTags`, and fails on any error but NotFound).
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


def base_path(stack: str, project: str = PROJECT) -> str:
    # store.go, projectReferenceStore.StackBasePath: `.pulumi/stacks/<project>/<stack>`.
    return f".pulumi/stacks/{project}/{stack}"


def state_paths(stack: str) -> list[str]:
    # state.go `stackPath`: `<base>.json`, or its `.gz` or `.zst` form (sdk/go/common/encoding
    # marshal.go `JSONExt`, `GZIPExt`, `ZSTDExt`), found by listing the prefix `<base>.json`.
    plain = base_path(stack) + ".json"
    return [plain, plain + ".gz", plain + ".zst"]


def backup_of(path: str) -> str:
    # state.go `backupTarget`: `saveCheckpoint` copies the state to `<file>.bak` before writing.
    return path + ".bak"


def tags_path(stack: str) -> str:
    # stack_tags.go `stackTagsPath` (since v3.211.0): `<base>.pulumi-tags`.
    return base_path(stack) + ".pulumi-tags"


def lock_dir(stack: str) -> str:
    # lock.go `stackLockDir` of backend.go `FullyQualifiedName`, `organization/<project>/<stack>`.
    return f".pulumi/locks/organization/{PROJECT}/{stack}/"


def read_by_every_operation(stack: str) -> list[str]:
    return [".pulumi/meta.yaml", *state_paths(stack), tags_path(stack)]


def written_by_an_update(stack: str) -> list[str]:
    # store.go `HistoryDir`, `BackupDir`: `.pulumi/history/<project>/<stack>/` and
    # `.pulumi/backups/<project>/<stack>/`; state.go `addToHistory`, `backupStack` name the files.
    return [
        *state_paths(stack),
        *(backup_of(path) for path in state_paths(stack)),
        f".pulumi/history/{PROJECT}/{stack}/{stack}-1764892800000000000.history.json",
        f".pulumi/history/{PROJECT}/{stack}/{stack}-1764892800000000000.checkpoint.json",
        f".pulumi/backups/{PROJECT}/{stack}/{stack}.1764892800000000000.json",
        lock_dir(stack) + "4f1d.json",
    ]


# Pulumi stack names may hold `.` (sdk/go/common/tokens names.go `NameRegexpPattern`), so a
# wildcard after the stack's name would reach these stacks' keys.
NEIGHBOURS = ["prod", "dev.eu", "dev.json", "dev-eu", "karpenter-dev"]


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
                [(_, keys)] = statement["Condition"].items()
                assert list(keys) == ["s3:prefix"]


@pytest.mark.parametrize("key", read_by_every_operation("dev"))
def test_a_preview_role_reads_the_layout_its_own_state_and_its_tags(key: str) -> None:
    assert reads("dev", "s3:GetObject", key)


def test_a_preview_role_finds_its_own_state_only() -> None:
    # stackPath lists the prefix `<base>.json` to find the compressed forms; a shorter prefix
    # would list the keys of `dev.eu` and `dev-eu` too.
    assert reads("dev", "s3:ListBucket", "", **listing(base_path("dev") + ".json"))
    for prefix in (base_path("dev"), base_path("dev") + ".", base_path("dev") + ".json."):
        assert not reads("dev", "s3:ListBucket", "", **listing(prefix)), prefix


@pytest.mark.parametrize("stack", NEIGHBOURS)
def test_a_preview_role_cannot_read_another_stacks_state(stack: str) -> None:
    keys = read_by_every_operation(stack)[1:] + written_by_an_update(stack)

    assert [key for key in keys if reads("dev", "s3:GetObject", key)] == []


@pytest.mark.parametrize(
    "key",
    [
        ".pulumi/stacks/other-project/dev.json",
        # The legacy layout's, without a project.
        ".pulumi/stacks/dev.json",
        ".pulumi/stacks/dev.pulumi-tags",
    ],
)
def test_a_preview_role_cannot_read_another_projects_state(key: str) -> None:
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
    request = Request(action, obj(state_paths("dev")[0]), untagged)

    assert not allowed(request, [document("read"), document("write")])


@pytest.mark.parametrize("action", ["s3:PutObject", "s3:DeleteObject"])
def test_a_preview_role_writes_nothing(action: str) -> None:
    for key in [*written_by_an_update("dev"), tags_path("dev")]:
        assert not reads("dev", action, key), key


@pytest.mark.parametrize("action", ["s3:PutObject", "s3:DeleteObject"])
@pytest.mark.parametrize("key", written_by_an_update("prod"))
def test_a_deploy_role_writes_its_own_stacks_state_and_lock(action: str, key: str) -> None:
    assert deploys("prod", action, key)
    assert not deploys("dev", action, key)


@pytest.mark.parametrize("action", ["s3:PutObject", "s3:DeleteObject"])
def test_a_deploy_role_sets_and_removes_its_own_stacks_tags(action: str) -> None:
    # `pulumi stack tag set` writes the tags file, removing the last tag deletes it
    # (stack_tags.go `saveStackTags`), and so does `pulumi stack rm` (state.go `removeStack`).
    assert deploys("prod", action, tags_path("prod"))
    assert not deploys("dev", action, tags_path("prod"))


@pytest.mark.parametrize("stack", NEIGHBOURS[1:])
def test_a_deploy_role_writes_nothing_of_another_stack(stack: str) -> None:
    keys = [*written_by_an_update(stack), tags_path(stack)]

    assert [key for key in keys if deploys("dev", "s3:PutObject", key)] == []


def test_a_deploy_role_reads_the_locks_of_its_own_stack_only() -> None:
    # checkForLock lists `<lock dir>/` and reads what it finds before it writes its own lock.
    own = listing(lock_dir("prod"))

    assert deploys("prod", "s3:ListBucket", "", **own)
    assert not deploys("dev", "s3:ListBucket", "", **own)
    assert deploys("prod", "s3:GetObject", lock_dir("prod") + "7a2e.json")
    assert not deploys("dev", "s3:GetObject", lock_dir("prod") + "7a2e.json")


def test_a_deploy_role_cannot_change_the_backends_layout() -> None:
    assert not deploys("prod", "s3:PutObject", ".pulumi/meta.yaml")


def test_the_setup_creates_the_tags_file_every_operation_reads() -> None:
    # S3 answers a GetObject of a missing key with 404 only to a caller that may list the
    # bucket, and with 403 to any other (Amazon S3 API Reference, GetObject, "Permissions");
    # the roles list only their own state's prefix, and `loadStackTags` tolerates only
    # NotFound. So the tags file must exist before a role reads it.
    setup = (ROOT / "docs" / "ci.md").read_text()

    assert "pulumi stack tag set --stack <stack> gpu-platform:stack <stack>" in setup
