"""The GitHub workflows (`.github/`): actionlint accepts them, every action is pinned to a
commit, every stack is planned, previewed and deployed with its policy config, and credentials
reach only the jobs that use them."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpu_platform.stack_files import stack_config
from tests.repository import PROJECT
from tests.repository import ROOT as PROJECT_DIR

GITHUB_DIR = PROJECT_DIR / ".github"
WORKFLOW_DIR = GITHUB_DIR / "workflows"
WORKFLOWS = sorted(WORKFLOW_DIR.glob("*.yml"))
LOCAL_ACTIONS = sorted((GITHUB_DIR / "actions").glob("*/action.yml"))
STACK_WORKFLOW = "./.github/workflows/pulumi-stack.yml"
# The actionlint binary ships in the dev dependency group, beside the interpreter.
ACTIONLINT = Path(sys.executable).with_name("actionlint")

# `uses: owner/repo[/path]@<40 hex> # vX.Y.Z`
_PINNED = re.compile(r"^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$")
_VERSION_COMMENT = re.compile(r"^#\s*v\d+\.\d+\.\d+$")
_USES_LINE = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<ref>\S+)\s*(?P<comment>#.*)?$")

Document = dict[str, Any]


def load(path: Path) -> Document:
    document = yaml.safe_load(path.read_text())
    # YAML 1.1 reads the bare key `on` as the boolean true.
    if True in document:
        document["on"] = document.pop(True)
    return dict(document)


def workflow(name: str) -> Document:
    return load(WORKFLOW_DIR / name)


def actionlint(*paths: Path, cwd: Path = PROJECT_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ACTIONLINT), "-no-color", *map(str, paths)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def stack_files() -> list[str]:
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for p in PROJECT_DIR.glob("Pulumi.*.yaml")
    )


def deployed_stacks() -> list[str]:
    """The stacks deployed and checked for drift: all but the examples the checks' stack list
    leaves out (`EXAMPLE_STACKS` in checks.yml)."""
    step = next(s for s in workflow("checks.yml")["jobs"]["stacks"]["steps"] if "run" in s)
    examples = json.loads(step["env"]["EXAMPLE_STACKS"])
    return [stack for stack in stack_files() if stack not in examples]


def stack_jobs(document: Document) -> Iterator[tuple[str, Document]]:
    """The jobs that run `pulumi` through the stack workflow."""
    for name, job in document["jobs"].items():
        if job.get("uses") == STACK_WORKFLOW:
            yield name, job


def uses_lines() -> Iterator[tuple[Path, str, str]]:
    """Every action used from another repository: the file, the reference and its comment."""
    for path in [*WORKFLOWS, *LOCAL_ACTIONS]:
        for line in path.read_text().splitlines():
            match = _USES_LINE.match(line)
            if match and not match["ref"].startswith("./"):
                yield path, match["ref"], (match["comment"] or "").strip()


def needs_of(job: Document) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


# --- actionlint ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", WORKFLOWS, ids=[p.name for p in WORKFLOWS])
def test_actionlint_accepts_the_workflow(path: Path) -> None:
    result = actionlint(path)

    assert result.returncode == 0, result.stdout + result.stderr


def lint_deploy_job(tmp_path: Path, *job_lines: str) -> subprocess.CompletedProcess[str]:
    """actionlint over a workflow of one job, `deploy`, with `job_lines` (indented) in it."""
    broken = tmp_path / "broken.yml"
    lines = ["on: push", "jobs:", "  deploy:", "    runs-on: ubuntu-24.04", *job_lines]
    broken.write_text("\n".join([*lines, "    steps:", "      - run: echo deploying", ""]))
    return actionlint(broken, cwd=tmp_path)


def test_actionlint_reports_a_job_that_needs_a_missing_job(tmp_path: Path) -> None:
    result = lint_deploy_job(tmp_path, "    needs: build")

    assert result.returncode != 0
    assert 'needs job "build" which does not exist' in result.stdout


def test_actionlint_reports_a_stack_workflow_call_without_its_environment(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "pulumi-stack.yml").write_text((WORKFLOW_DIR / "pulumi-stack.yml").read_text())
    caller = workflows / "caller.yml"
    caller.write_text(
        "on: push\n"
        "jobs:\n"
        "  dev:\n"
        f"    uses: {STACK_WORKFLOW}\n"
        "    with:\n"
        "      stack: dev\n"
        "      command: up\n"
    )

    result = actionlint(caller, cwd=tmp_path)

    assert result.returncode != 0
    assert '"environment" is required' in result.stdout


def test_actionlint_knows_the_concurrency_queue_the_stack_workflow_uses(tmp_path: Path) -> None:
    # GitHub's `queue: single | max`; upstream actionlint v1.7.12 would refuse the key itself
    # (parse.go, parseConcurrency), this build checks its value.
    result = lint_deploy_job(
        tmp_path, "    concurrency:", "      group: pulumi-dev", "      queue: all"
    )

    assert result.returncode != 0
    assert 'invalid value "all" for "queue"' in result.stdout


# --- pinned actions -----------------------------------------------------------------------


def test_every_action_is_pinned_to_a_commit_with_its_version() -> None:
    unpinned = [
        f"{path.relative_to(PROJECT_DIR)}: {ref} {comment}"
        for path, ref, comment in uses_lines()
        if not (_PINNED.match(ref) and _VERSION_COMMENT.match(comment))
    ]

    assert unpinned == []


def test_each_action_is_pinned_to_one_commit_everywhere() -> None:
    pins: dict[str, set[str]] = {}
    for _, ref, comment in uses_lines():
        action, _, sha = ref.partition("@")
        pins.setdefault(action, set()).add(f"{sha} {comment}")

    assert {action: pin for action, pin in pins.items() if len(pin) > 1} == {}


def test_the_pulumi_cli_is_at_least_the_locked_sdk() -> None:
    lock = tomllib.loads((PROJECT_DIR / "uv.lock").read_text())
    sdk = next(p["version"] for p in lock["package"] if p["name"] == "pulumi")
    cli = workflow("pulumi-stack.yml")["env"]["PULUMI_CLI_VERSION"]

    def version(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    assert version(cli) >= version(sdk), f"Pulumi CLI {cli} is older than the SDK {sdk}"


def test_gcloud_is_installed_at_an_exact_release() -> None:
    # google-github-actions/setup-gcloud v3.0.1 action.yml: `version` defaults to `latest`.
    steps = workflow("pulumi-stack.yml")["jobs"]["pulumi"]["steps"]
    (step,) = [s for s in steps if "setup-gcloud" in s.get("uses", "")]
    pinned = workflow("pulumi-stack.yml")["env"]["GCLOUD_VERSION"]

    assert step["with"]["version"] == "${{ env.GCLOUD_VERSION }}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", str(pinned)), pinned


def test_dependabot_updates_every_pinned_action_and_the_lock_file() -> None:
    updates = yaml.safe_load((GITHUB_DIR / "dependabot.yml").read_text())["updates"]
    actions = next(u for u in updates if u["package-ecosystem"] == "github-actions")
    files_with_uses = {path for path, _, _ in uses_lines()}
    action_dirs = {"/"} | {
        "/" + str(p.parent.relative_to(PROJECT_DIR)) for p in LOCAL_ACTIONS if p in files_with_uses
    }

    assert all(any(fnmatch(d, pattern) for pattern in actions["directories"]) for d in action_dirs)
    assert any(u["package-ecosystem"] == "uv" and u["directory"] == "/" for u in updates)


# --- stacks -------------------------------------------------------------------------------


def test_the_checks_list_every_stack_file(tmp_path: Path) -> None:
    step = next(s for s in workflow("checks.yml")["jobs"]["stacks"]["steps"] if "run" in s)
    output = tmp_path / "github-output"

    subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=PROJECT_DIR,
        env={**os.environ, **step.get("env", {}), "GITHUB_OUTPUT": str(output)},
        check=True,
    )

    assert output.read_text() == (
        f"stacks={json.dumps(stack_files())}\ndeployed={json.dumps(deployed_stacks())}\n"
    )


def test_the_undeployed_stacks_are_the_examples_creating_a_cluster_or_on_auto_mode() -> None:
    # The deployed stacks' clusters have no EKS Auto Mode compute, so the Auto Mode example is
    # planned but not deployed (docs/ci.md).
    examples = set(stack_files()) - set(deployed_stacks())
    creating = {
        stack
        for stack in stack_files()
        if "create" in stack_config(stack, PROJECT)["gpu-platform:cluster"]
    }
    auto_mode = {
        stack
        for stack in stack_files()
        if stack_config(stack, PROJECT).get("gpu-platform:provisioner") == "eks-auto-mode"
    }

    assert {"gke-new", "auto-dev"} <= examples
    assert examples == creating | auto_mode


def test_the_offline_plan_runs_with_the_stack_policy_config() -> None:
    plan = workflow("checks.yml")["jobs"]["plan"]
    run = next(s["run"] for s in plan["steps"] if "run" in s)

    assert plan["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert run.startswith("./uvw run --locked gpu-platform plan ")
    assert '--policy-config "policy-config/$STACK.json"' in run


def test_every_stack_has_the_policy_config_the_workflows_pass() -> None:
    missing = [
        stack
        for stack in stack_files()
        if not (PROJECT_DIR / "policy-config" / f"{stack}.json").is_file()
    ]

    assert missing == []


def test_pulumi_runs_with_the_policy_pack_and_the_stack_policy_config() -> None:
    steps = workflow("pulumi-stack.yml")["jobs"]["pulumi"]["steps"]
    command = next(s for s in steps if "command" in s.get("with", {}))

    assert command["with"]["policyPacks"] == "gpu_platform/policy_pack"
    assert command["with"]["policyPackConfigs"] == "policy-config/${{ inputs.stack }}.json"


def test_every_stack_file_is_deployed_behind_its_own_environment() -> None:
    deploys = {
        job["with"]["stack"]: job["with"]["environment"]
        for _, job in stack_jobs(workflow("deploy.yml"))
        if job["with"]["command"] == "up"
    }

    assert sorted(deploys) == deployed_stacks()
    assert all(stack == environment for stack, environment in deploys.items())


def test_prod_is_previewed_and_deployed_only_after_every_other_stack_is_up() -> None:
    jobs = dict(stack_jobs(workflow("deploy.yml")))
    updates = {name for name, job in jobs.items() if job["with"]["command"] == "up"}
    (prod_preview,) = needs_of(jobs["prod"])

    assert set(needs_of(jobs[prod_preview])) == updates - {"prod"}


def test_every_update_applies_the_plan_of_its_own_plan_job() -> None:
    jobs = dict(stack_jobs(workflow("deploy.yml")))
    for name, job in jobs.items():
        if job["with"]["command"] != "up":
            continue
        stack = job["with"]["stack"]
        (before,) = needs_of(job)
        assert before == f"{stack}-plan", name
        assert jobs[before]["with"] == {
            "stack": stack,
            "command": "plan",
            "environment": f"{stack}-plan",
        }, name
        assert job["with"]["plan-artifact-id"] == (
            f"${{{{ needs.{stack}-plan.outputs.plan-artifact-id }}}}"
        ), name


def pulumi_job() -> Document:
    return dict(workflow("pulumi-stack.yml")["jobs"]["pulumi"])


def pulumi_steps() -> list[Document]:
    return list(pulumi_job()["steps"])


def step_named(name: str) -> Document:
    (step,) = [s for s in pulumi_steps() if s.get("name") == name]
    return step


def step_index(name: str) -> int:
    return [s.get("name") for s in pulumi_steps()].index(name)


PULUMI_STEP = "pulumi ${{ inputs.command }}"


def test_the_plan_job_saves_its_plan_as_an_artifact_of_the_run() -> None:
    stack_workflow = workflow("pulumi-stack.yml")
    save = step_named("Save the plan for the update")

    # pulumi/actions v7.0.0 action.yml: `plan`, "Where to either save an Update Plan or read
    # an Update Plan from"; src/config.ts passes it to the Automation API, whose preview adds
    # `--save-plan <plan>` and whose up adds `--plan <plan>` (sdk/nodejs/automation/stack.ts).
    assert step_named(PULUMI_STEP)["with"]["plan"] == (
        "${{ (inputs.command == 'plan' || inputs.command == 'up') "
        "&& format('{0}/plan.json', runner.temp) || '' }}"
    )
    assert step_named(PULUMI_STEP)["with"]["command"] == (
        "${{ inputs.command == 'up' && 'up' || 'preview' }}"
    )
    assert save["if"] == "inputs.command == 'plan'"
    assert save["uses"].startswith("actions/upload-artifact@")
    assert save["with"]["path"] == "${{ runner.temp }}/plan.json"
    assert save["with"]["if-no-files-found"] == "error"
    assert step_index("Save the plan for the update") > step_index(PULUMI_STEP)
    assert pulumi_job()["outputs"]["plan-artifact-id"] == (
        "${{ steps.save-plan.outputs.artifact-id }}"
    )
    assert stack_workflow["on"]["workflow_call"]["outputs"]["plan-artifact-id"]["value"] == (
        "${{ jobs.pulumi.outputs.plan-artifact-id }}"
    )


def test_the_update_runs_with_the_plan_artifact_it_was_given() -> None:
    refuse = step_named("Refuse an update without its approved plan")
    fetch = step_named("Fetch the approved plan")

    assert refuse["if"] == "inputs.command == 'up' && inputs.plan-artifact-id == ''"
    assert refuse["run"].rstrip().endswith("exit 1")
    assert fetch["if"] == "inputs.command == 'up'"
    assert fetch["uses"].startswith("actions/download-artifact@")
    # One artifact ID: download-artifact v8.0.1 (src/download-artifact.ts) extracts it into
    # `path` itself, where the pulumi step reads `<runner.temp>/plan.json`, and checks its
    # digest (`digest-mismatch` defaults to `error`).
    assert fetch["with"] == {
        "artifact-ids": "${{ inputs.plan-artifact-id }}",
        "path": "${{ runner.temp }}",
    }
    assert step_index("Refuse an update without its approved plan") < step_index(
        "Fetch the approved plan"
    )
    assert step_index("Fetch the approved plan") < step_index(PULUMI_STEP)


# --- the head guard -----------------------------------------------------------------------

GUARD = "Refuse a commit that a newer deploy supersedes"

FAKE_GH_API = """\
#!/usr/bin/env python3
import json, os, sys
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if "/actions/workflows/" in sys.argv[2] and os.environ["GH_RUNS"]:
    print(os.environ["GH_RUNS"])
if "/compare/" in sys.argv[2]:
    status = json.loads(os.environ["GH_COMPARE"]).get(sys.argv[2].rpartition("...")[2])
    if status is None:
        sys.exit(1)
    print(status)
"""
# GitHub's `github.workflow_ref` in a called workflow is the caller's ("Reuse workflows": "the
# github context is always associated with the caller workflow").
DEPLOY_REF = "acme/gpu-platform/.github/workflows/deploy.yml@refs/heads/main"
THIS_RUN = "7001 aaa111 2026-12-05T10:00:05Z"


def run_with_fake_gh(
    tmp_path: Path, fake_gh: str, script: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """A step's script as GitHub's runner runs it (`bash -e`), with `fake_gh` as `gh`, logging
    each call's arguments to `gh.log`, for the run of commit aaa111 of acme/gpu-platform."""
    fake = tmp_path / "bin" / "gh"
    fake.parent.mkdir()
    fake.write_text(fake_gh)
    fake.chmod(0o755)
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=tmp_path,
        env={
            "PATH": f"{fake.parent}:{os.environ['PATH']}",
            "GH_LOG": str(tmp_path / "gh.log"),
            "GITHUB_REPOSITORY": "acme/gpu-platform",
            "GITHUB_SHA": "aaa111",
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


def run_guard(
    tmp_path: Path, *runs: str, compare: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The guard's script in run 7001 of deploy.yml for commit aaa111, with `gh` listing `runs`
    (`<run id> <commit> <created at> <conclusion>`, as its `--jq` prints them, newest first; jq
    prints a run's null conclusion as `null`) for deploy.yml's
    runs on main, and answering `compare[<commit>]` for the status of aaa111...<commit>."""
    env = {
        "GH_RUNS": "\n".join(runs),
        "GH_COMPARE": json.dumps(compare or {}),
        "GITHUB_RUN_ID": "7001",
        "GITHUB_WORKFLOW_REF": DEPLOY_REF,
    }
    return run_with_fake_gh(tmp_path, FAKE_GH_API, step_named(GUARD)["run"], env)


def guard_calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]


def test_the_guard_runs_before_any_credential_and_only_for_updates() -> None:
    guard = step_named(GUARD)

    assert guard["if"] == "inputs.command == 'up'"
    assert step_index(GUARD) < step_index("Pulumi Cloud token (OIDC)")
    assert step_index(GUARD) < step_index("AWS credentials (OIDC)")
    assert step_index(GUARD) < step_index("Google Cloud credentials (OIDC)")


def test_the_guard_compares_this_commit_with_those_of_the_deploy_workflows_runs_on_main(
    tmp_path: Path,
) -> None:
    # GitHub REST, "List workflow runs for a workflow": the workflow by its file name, runs of
    # pushes to and dispatches on `branch`, newest first. "Compare two commits": BASE...HEAD,
    # `status` "ahead" where HEAD follows BASE, "behind" where it precedes it, else "diverged".
    result = run_guard(
        tmp_path, THIS_RUN, "6990 fff000 2026-12-04T09:00:00Z", compare={"fff000": "behind"}
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert guard_calls(tmp_path) == [
        [
            "api",
            "repos/acme/gpu-platform/actions/workflows/deploy.yml/runs?branch=main&per_page=20",
            "--jq",
            '.workflow_runs[] | "\\(.id) \\(.head_sha) \\(.created_at) \\(.conclusion)"',
        ],
        ["api", "repos/acme/gpu-platform/compare/aaa111...fff000", "--jq", ".status"],
    ]


def test_the_guard_applies_the_newest_deploy_whatever_was_pushed_after_it(
    tmp_path: Path,
) -> None:
    # Main has moved on with pushes that started no run: documentation only (deploy.yml's
    # paths-ignore), a `[skip ci]` commit (GitHub docs, "Skipping workflow runs"), a push made
    # with GITHUB_TOKEN ("Triggering a workflow from a workflow"). No newer deploy will come.
    result = run_guard(tmp_path, THIS_RUN)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no deploy.yml run on main deploys a commit after aaa111: applying it" in result.stdout


# GitHub REST, "List workflow runs for a workflow": a run's `conclusion` is null until it
# completes (jq prints `null`), then one of success, failure, cancelled, skipped, timed_out,
# startup_failure, neutral, stale, action_required.
@pytest.mark.parametrize(
    ("conclusion", "outcome"),
    [
        # Queued, in progress or waiting for approval: it will deploy bbb222. Also a re-run of
        # an old deploy: it keeps its run ID, and newer runs exist.
        ("null", "deploys bbb222, which follows aaa111 (ahead)"),
        ("success", "deploys bbb222, which follows aaa111 (ahead)"),
        # It failed or was cancelled before its `prod` job and will never deploy bbb222: this
        # run, waiting for `prod` approval, is the one that will.
        ("failure", "for bbb222 ended failure: it deploys nothing"),
        ("cancelled", "for bbb222 ended cancelled: it deploys nothing"),
        ("skipped", "for bbb222 ended skipped: it deploys nothing"),
    ],
)
def test_the_guard_weighs_a_newer_deploy_run_by_its_conclusion(
    tmp_path: Path, conclusion: str, outcome: str
) -> None:
    result = run_guard(
        tmp_path,
        f"7002 bbb222 2026-12-05T10:30:00Z {conclusion}",
        f"{THIS_RUN} null",
        compare={"bbb222": "ahead"},
    )

    assert f"run 7002 of deploy.yml {outcome}" in result.stdout
    assert result.returncode == (0 if "deploys nothing" in outcome else 1)


def test_the_guard_refuses_a_commit_that_an_older_run_follows(tmp_path: Path) -> None:
    # Two pushes seconds apart: GitHub created the run of the later commit bbb222 first, so
    # this run is listed newest, yet bbb222's deploy applies what this one would.
    result = run_guard(
        tmp_path, THIS_RUN, "7000 bbb222 2026-12-05T10:00:04Z", compare={"bbb222": "ahead"}
    )

    assert result.returncode == 1
    assert "run 7000 of deploy.yml deploys bbb222, which follows aaa111 (ahead)" in result.stdout


def test_the_guard_refuses_a_commit_a_force_push_left_behind(tmp_path: Path) -> None:
    result = run_guard(
        tmp_path, "7002 ccc333 2026-12-05T11:00:00Z", THIS_RUN, compare={"ccc333": "diverged"}
    )

    assert result.returncode == 1
    assert "run 7002 of deploy.yml deploys ccc333, pushed after this run" in result.stdout


def test_the_guard_applies_over_an_older_run_of_a_rewritten_history(tmp_path: Path) -> None:
    result = run_guard(
        tmp_path, THIS_RUN, "6990 ccc333 2026-12-04T09:00:00Z", compare={"ccc333": "diverged"}
    )

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_guard_refuses_when_this_run_is_not_among_the_newest(tmp_path: Path) -> None:
    result = run_guard(tmp_path, "7002 aaa111 2026-12-05T11:00:00Z")

    assert result.returncode == 1
    assert "this run is not among the 20 newest deploy.yml runs on main" in result.stdout


def test_the_guard_refuses_when_github_lists_no_run(tmp_path: Path) -> None:
    result = run_guard(tmp_path)

    assert result.returncode == 1
    assert "applying" not in result.stdout


def test_the_guard_refuses_when_github_cannot_compare(tmp_path: Path) -> None:
    result = run_guard(tmp_path, "7002 bbb222 2026-12-05T10:30:00Z", THIS_RUN)

    assert result.returncode != 0
    assert "applying" not in result.stdout


def test_every_update_may_list_the_deploy_workflows_runs() -> None:
    # GitHub REST: listing workflow runs needs the token's `actions: read`; a job that sets
    # `permissions` has none it does not name.
    deploy = workflow("deploy.yml")
    updates = [job for _, job in stack_jobs(deploy) if job["with"]["command"] == "up"]

    assert len(updates) == len(deployed_stacks())
    assert all(job["permissions"]["actions"] == "read" for job in updates)


# --- drift --------------------------------------------------------------------------------


def test_drift_is_checked_every_day_for_every_stack_with_the_plan_credentials() -> None:
    drift = workflow("drift.yml")
    ((_, job),) = stack_jobs(drift)

    assert drift["on"]["schedule"]
    assert job["with"] == {
        "stack": "${{ matrix.stack }}",
        "command": "drift",
        "environment": "${{ matrix.stack }}-plan",
    }
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.checks.outputs.deployed) }}"


def test_drift_compares_the_cloud_with_the_state_without_writing_it() -> None:
    step = step_named("Drift (the cloud against the stack's state)")

    # Pulumi's drift guide: `pulumi refresh --preview-only` "does not modify the state file".
    assert step["if"] == "inputs.command == 'drift'"
    assert "pulumi refresh --preview-only --expect-no-changes" in step["run"]


def test_a_change_never_deployed_is_reported_apart_from_drift() -> None:
    step = step_named("Undeployed changes (main against the stack's state)")

    assert step["if"] == (
        "inputs.command == 'drift' && (success() || steps.drift.outcome == 'failure')"
    )
    assert "pulumi preview --expect-no-changes" in step["run"]
    assert "--refresh" not in step["run"]
    assert '--policy-pack-config "policy-config/$STACK.json"' in step["run"]
    assert step_named(PULUMI_STEP)["if"] == "inputs.command != 'drift'"


# --- sessions and concurrency -------------------------------------------------------------


def test_only_an_update_runs_and_holds_credentials_for_three_hours() -> None:
    job = pulumi_job()
    aws = step_named("AWS credentials (OIDC)")
    pulumi = step_named("Pulumi Cloud token (OIDC)")
    # STS's default maximum session is one hour; docs/ci.md raises it to three on the deploy
    # roles only, so nothing else may ask for more.
    per_command = "${{ inputs.command == 'up' && 10800 || 3600 }}"

    assert job["timeout-minutes"] == "${{ inputs.command == 'up' && 180 || 60 }}"
    assert aws["with"]["role-duration-seconds"] == per_command
    assert pulumi["with"]["token-expiration"] == per_command


def update_timeout_minutes() -> int:
    match = re.fullmatch(
        r"\$\{\{ inputs.command == 'up' && (\d+) \|\| \d+ \}\}", pulumi_job()["timeout-minutes"]
    )
    assert match is not None
    return int(match[1])


def test_the_esc_credentials_last_as_long_as_an_update_may_run() -> None:
    # Pulumi ESC, aws-login provider: `duration` "Defaults to 2 hours", and AWS refuses more
    # than the role's maximum session duration (IAM: one hour unless raised, 12 at most), which
    # the example's comment says to raise.
    example = load(PROJECT_DIR / "docs" / "esc-example.yaml")
    oidc = example["values"]["aws"]["login"]["fn::open::aws-login"]["oidc"]
    hours = re.fullmatch(r"(\d+)h", oidc["duration"])

    assert hours is not None
    assert update_timeout_minutes() == 180
    assert 60 * int(hours[1]) >= update_timeout_minutes()
    assert int(hours[1]) <= 12
    assert "--max-session-duration 10800" in (PROJECT_DIR / "docs" / "esc-example.yaml").read_text()


def test_every_deploy_waits_for_the_checks() -> None:
    deploy = workflow("deploy.yml")

    def after_checks(name: str) -> bool:
        needs = needs_of(deploy["jobs"][name])
        return "checks" in needs or any(after_checks(n) for n in needs)

    assert all(after_checks(name) for name, _ in stack_jobs(deploy))


def test_every_command_on_a_stack_waits_for_the_one_running() -> None:
    assert pulumi_job()["concurrency"] == {
        "group": "pulumi-${{ inputs.stack }}",
        "cancel-in-progress": False,
        "queue": "max",
    }


@pytest.mark.parametrize("name", ["deploy.yml", "drift.yml"])
def test_no_other_concurrency_group_holds_a_stack_command(name: str) -> None:
    document = workflow(name)
    groups = [document.get("concurrency")] + [
        job.get("concurrency") for job in document["jobs"].values()
    ]

    assert [group for group in groups if group] == []


# --- credentials and permissions ----------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["pull-request.yml", "deploy.yml", "checks.yml", "drift.yml", "lock-refresh.yml"]
)
def test_workflows_default_to_reading_the_repository_only(name: str) -> None:
    assert workflow(name)["permissions"] == {"contents": "read"}


@pytest.mark.parametrize("name", ["pull-request.yml", "deploy.yml", "drift.yml"])
def test_only_jobs_that_run_pulumi_get_an_oidc_token(name: str) -> None:
    jobs = workflow(name)["jobs"]
    with_token = {
        n for n, job in jobs.items() if job.get("permissions", {}).get("id-token") == "write"
    }

    assert with_token == {n for n, _ in stack_jobs(workflow(name))}


def stack_workflow_secrets() -> set[str]:
    return set(workflow("pulumi-stack.yml")["on"]["workflow_call"]["secrets"])


def test_the_stack_workflow_reads_only_the_secrets_it_declares() -> None:
    read = set(re.findall(r"secrets\.(\w+)", (WORKFLOW_DIR / "pulumi-stack.yml").read_text()))

    assert read == stack_workflow_secrets() == {"PULUMI_ACCESS_TOKEN", "PULUMI_CONFIG_PASSPHRASE"}


@pytest.mark.parametrize("name", ["pull-request.yml", "deploy.yml", "drift.yml"])
def test_every_stack_job_is_passed_its_secrets_by_name(name: str) -> None:
    # `secrets: inherit` would hand the job every repository and organization secret; named,
    # only those the stack workflow reads cross (GitHub docs, "Reuse workflows": secrets).
    passed = {job_name: job.get("secrets") for job_name, job in stack_jobs(workflow(name))}

    assert passed
    assert {
        job_name: {key: f"${{{{ secrets.{key} }}}}" for key in sorted(stack_workflow_secrets())}
        for job_name in passed
    } == passed


def test_no_workflow_inherits_every_secret() -> None:
    inheriting = [
        (path.name, name)
        for path in WORKFLOWS
        for name, job in load(path)["jobs"].items()
        if job.get("secrets") == "inherit"
    ]

    assert inheriting == []


def test_only_the_preview_may_comment_on_the_pull_request() -> None:
    writers = {
        (workflow_path.name, name)
        for workflow_path in WORKFLOWS
        for name, job in load(workflow_path)["jobs"].items()
        if job.get("permissions", {}).get("pull-requests") == "write"
    }

    assert writers == {("pull-request.yml", "preview"), ("lock-refresh.yml", "refresh")}


def test_the_tests_run_with_promtool_and_the_registry_required() -> None:
    # The alert rule tests and the image resolver's tests skip where promtool or
    # docker-registry is missing (tests/oci_registry.py): GitHub's runners install both, and
    # the variables make a missing one fail the run rather than skip its tests.
    job = workflow("checks.yml")["jobs"]["tests"]
    install = next(step["run"] for step in job["steps"] if "apt-get install" in step.get("run", ""))
    run = next(step for step in job["steps"] if step.get("run") == "./uvw run --locked pytest")

    assert {"prometheus", "docker-registry"} <= set(install.split())
    assert "sudo systemctl disable --now docker-registry || true" in install
    assert run["env"] == {
        "GPU_PLATFORM_REQUIRE_PROMTOOL": "1",
        "GPU_PLATFORM_REQUIRE_REGISTRY": "1",
    }


def test_the_lock_is_refreshed_every_day_as_a_pull_request_of_the_lock_and_awaited_images() -> None:
    document = workflow("lock-refresh.yml")
    steps = document["jobs"]["refresh"]["steps"]
    (propose,) = [s for s in steps if "create-pull-request" in s.get("uses", "")]

    assert document["on"]["schedule"] == [{"cron": "41 5 * * *"}]
    assert "gpu-platform lock" in next(s["run"] for s in steps if s.get("id") == "lock")
    # An image the refresh locks by digest leaves the policy configs' awaitingDigests in the
    # same pull request (gpu_platform/lock/awaiting.py), else the tests fail on it.
    assert propose["with"]["add-paths"].split() == ["gpu-platform.lock", "policy-config/*.json"]
    assert any(
        s.get("run")
        == "./uvw run --locked python -m gpu_platform.lock.awaiting policy-config/*.json"
        for s in steps
    )
    # The lock is proposed before the job fails on a fact it could not read.
    assert steps[-1]["if"] == "steps.lock.outputs.status != '0'"


def refresh_steps() -> list[Document]:
    steps: list[Document] = workflow("lock-refresh.yml")["jobs"]["refresh"]["steps"]
    return steps


def test_one_refresh_runs_at_a_time() -> None:
    assert workflow("lock-refresh.yml")["concurrency"] == {
        "group": "lock-refresh",
        "cancel-in-progress": False,
    }


def test_the_refresh_opens_its_pull_request_as_the_github_app_where_one_is_set() -> None:
    # A pull request opened with GITHUB_TOKEN starts no workflow, so its checks never run
    # (create-pull-request v8.1.1 docs/concepts-guidelines.md, "Triggering further workflow
    # runs"); one opened with a GitHub App's token does.
    steps = refresh_steps()
    (app,) = [s for s in steps if "create-github-app-token" in s.get("uses", "")]
    (propose,) = [s for s in steps if "create-pull-request" in s.get("uses", "")]

    assert app["if"] == "vars.LOCK_REFRESH_APP_CLIENT_ID != ''"
    assert app["with"]["private-key"] == "${{ secrets.LOCK_REFRESH_APP_PRIVATE_KEY }}"
    assert propose["with"]["token"] == "${{ steps.app.outputs.token || github.token }}"
    assert steps.index(app) < steps.index(propose)


def test_the_refresh_pull_request_lists_the_facts_not_read(tmp_path: Path) -> None:
    (read,) = [s for s in refresh_steps() if s.get("id") == "lock"]
    (propose,) = [s for s in refresh_steps() if "create-pull-request" in s.get("uses", "")]
    unread = 'could not read cos_drivers["cos-125-19216-220-44/l4"]: ... answered 404'
    uvw = tmp_path / "uvw"
    uvw.write_text(f"#!/bin/sh\necho '{unread}' >&2\nexit 4\n")
    uvw.chmod(0o755)
    output = tmp_path / "output"
    environment = {**os.environ, "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(output)}

    subprocess.run(["bash", "-e", "-c", read["run"]], cwd=tmp_path, env=environment, check=True)

    assert propose["with"]["body-path"] == "${{ runner.temp }}/body.md"
    assert f"Not read this time (each keeps the entry it had):\n\n```\n{unread}\n```" in (
        (tmp_path / "body.md").read_text()
    )
    assert output.read_text() == "status=4\n"


def test_the_lock_refresh_reads_ecr_with_an_optional_aws_role() -> None:
    # EKS's EFA device plugin image is in Amazon ECR, which answers AWS credentials only
    # (gpu_platform/lock/ecr.py): without the role the refresh warns, with it reads the digest.
    steps = workflow("lock-refresh.yml")["jobs"]["refresh"]["steps"]
    names = [s.get("id") or s.get("uses", "").split("@")[0] for s in steps]
    (aws,) = [s for s in steps if "configure-aws-credentials" in s.get("uses", "")]

    assert aws["if"] == "vars.LOCK_REFRESH_AWS_ROLE_ARN != ''"
    assert aws["with"]["role-to-assume"] == "${{ vars.LOCK_REFRESH_AWS_ROLE_ARN }}"
    assert names.index("aws-actions/configure-aws-credentials") < names.index("lock")


def test_the_preview_runs_only_for_branches_of_this_repository() -> None:
    preview = workflow("pull-request.yml")["jobs"]["preview"]

    assert "github.event.pull_request.head.repo.full_name == github.repository" in preview["if"]
    assert "vars.PULUMI_PREVIEW_ENABLED == 'true'" in preview["if"]
    assert preview["with"]["environment"] == "${{ matrix.stack }}-preview"


def test_a_pull_request_previews_only_the_stacks_deployed_without_approval() -> None:
    # On pull_request the workflow files are the pull request's own, so any environment a job
    # there names is in every branch's reach: prod's are never among them.
    preview = workflow("pull-request.yml")["jobs"]["preview"]
    deploy = dict(stack_jobs(workflow("deploy.yml")))

    assert preview["strategy"]["matrix"]["stack"] == ["dev", "gke-dev", "karpenter-dev"]
    assert set(preview["strategy"]["matrix"]["stack"]) == set(needs_of(deploy["prod-plan"]))


def test_no_workflow_a_pull_request_runs_names_a_prod_environment() -> None:
    environments = {
        (path.name, str(job.get("with", {}).get("environment") or job.get("environment")))
        for path in WORKFLOWS
        if "pull_request" in load(path)["on"]
        for job in load(path)["jobs"].values()
        if job.get("with", {}).get("environment") or job.get("environment")
    }

    assert environments == {("pull-request.yml", "${{ matrix.stack }}-preview")}


def test_preview_environments_serve_pull_requests_only() -> None:
    # A `<stack>-preview` environment has no branch rule (a pull request runs on
    # refs/pull/<n>/merge); deploys and drift use the main-only `<stack>-plan` and `<stack>`.
    named = {
        (path.name, str(job["with"]["environment"]))
        for path in WORKFLOWS
        for _, job in stack_jobs(load(path))
    }

    assert {env for name, env in named if env.endswith("-preview")} == {
        "${{ matrix.stack }}-preview"
    }
    assert {name for name, env in named if env.endswith("-preview")} == {"pull-request.yml"}


# --- CODEOWNERS ---------------------------------------------------------------------------


def code_owners(path: str) -> list[str]:
    """The owners of a path: the last CODEOWNERS line whose pattern matches it (GitHub's rule).
    Only the pattern forms the file uses: a root-anchored directory (`/dir/`) or a root file
    glob whose `*` stays within one path segment (`/Pulumi.*.yaml`)."""
    owners: list[str] = []
    for line in (GITHUB_DIR / "CODEOWNERS").read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        pattern, *names = line.split()
        assert pattern.startswith("/"), pattern
        anchored = pattern[1:]
        if anchored.endswith("/"):
            matched = path.startswith(anchored)
        else:
            matched = re.fullmatch(re.escape(anchored).replace(r"\*", "[^/]*"), path) is not None
        if matched:
            owners = names
    return owners


@pytest.mark.parametrize(
    "path",
    [
        ".github/workflows/pulumi-stack.yml",
        ".github/actions/setup-project/action.yml",
        ".github/CODEOWNERS",
        "gpu_platform/policy_pack/pod_security.py",
        "gpu_platform/policy_pack/requirements.txt",
        "policy-config/prod.json",
        "Pulumi.prod.yaml",
        "Pulumi.yaml",
        "gpu-platform.lock",
    ],
)
def test_code_owners_review_what_decides_credentials_policies_and_stacks(path: str) -> None:
    assert code_owners(path) == ["@acme/gpu-platform-maintainers"]


def test_code_owners_leave_the_rest_to_the_usual_review() -> None:
    assert code_owners("gpu_platform/eks/node_groups.py") == []
    assert code_owners("docs/Pulumi.prod.yaml") == []


def test_code_owners_cover_every_stack_file() -> None:
    assert all(code_owners(f"Pulumi.{stack}.yaml") for stack in stack_files())


FAKE_GH_CODEOWNERS = """\
#!/usr/bin/env python3
import json, os, sys
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
print(os.environ["GH_ERRORS"], end="")
"""


def run_code_owners_check(tmp_path: Path, errors: str) -> subprocess.CompletedProcess[str]:
    """The check's script, with `gh` answering GitHub's "List CODEOWNERS errors" (after --jq)."""
    (step,) = workflow("checks.yml")["jobs"]["code-owners"]["steps"]
    return run_with_fake_gh(tmp_path, FAKE_GH_CODEOWNERS, step["run"], {"GH_ERRORS": errors})


def test_the_code_owners_check_fails_on_an_owner_github_does_not_know(tmp_path: Path) -> None:
    # What GitHub lists for the placeholder team: kind "Unknown owner", one error per line.
    errors = (
        ".github/CODEOWNERS line 13: Unknown owner: /.github/ @acme/gpu-platform-maintainers\n"
        ".github/CODEOWNERS line 15: Unknown owner: /gpu_platform/policy_pack/ "
        "@acme/gpu-platform-maintainers\n"
    )

    result = run_code_owners_check(tmp_path, errors)

    assert result.returncode == 1
    assert result.stdout.count("::error::.github/CODEOWNERS line ") == 2
    (call,) = [json.loads(line) for line in (tmp_path / "gh.log").read_text().splitlines()]
    assert call[:2] == ["api", "repos/acme/gpu-platform/codeowners/errors?ref=aaa111"]


def test_the_code_owners_check_passes_when_github_reads_every_line(tmp_path: Path) -> None:
    assert run_code_owners_check(tmp_path, "").returncode == 0


def test_the_placeholder_team_is_marked_for_replacement() -> None:
    text = (GITHUB_DIR / "CODEOWNERS").read_text()

    assert "# SET THIS: @acme/gpu-platform-maintainers is a placeholder." in text
    assert "Checks / Code owners" in text


def test_no_workflow_runs_a_fork_with_the_repository_credentials() -> None:
    triggers = {path.name: load(path)["on"] for path in WORKFLOWS}

    assert [name for name, on in triggers.items() if "pull_request_target" in on] == []


def test_a_dependabot_pull_request_is_held_until_a_maintainer_previews_it() -> None:
    jobs = workflow("pull-request.yml")["jobs"]
    held = jobs["preview-held"]

    assert "github.actor != 'dependabot[bot]'" in jobs["preview"]["if"]
    assert held["if"] == "github.actor == 'dependabot[bot]'"
    assert held["steps"][-1]["run"].rstrip().endswith("exit 1")


# --- the preview comment on a failure --------------------------------------------------------

FAKE_GH = """\
#!/usr/bin/env python3
import json, os, sys
with open(os.environ["GH_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
if "--paginate" in sys.argv:
    print(os.environ.get("GH_FOUND", ""))
"""


def failed_preview_step() -> Document:
    steps = workflow("pulumi-stack.yml")["jobs"]["pulumi"]["steps"]
    (step,) = [s for s in steps if str(s.get("if", "")).startswith("failure()")]
    return step


def run_failed_preview_step(tmp_path: Path, found: str) -> list[list[str]]:
    """The step's script, with `gh` standing in for GitHub's API: the calls it made."""
    fake = tmp_path / "bin" / "gh"
    fake.parent.mkdir()
    fake.write_text(FAKE_GH)
    fake.chmod(0o755)
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    log = tmp_path / "gh.log"
    step = failed_preview_step()
    env = {
        "PATH": f"{fake.parent}:{os.environ['PATH']}",
        "GH_LOG": str(log),
        "GH_FOUND": found,
        "STACK_NAME": "acme/dev",
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "acme/gpu-platform",
        "GITHUB_RUN_ID": "77",
        "PR_NUMBER": "12",
        "HEAD_SHA": "0123abc",
    }
    subprocess.run(["bash", "-e", "-c", step["run"]], cwd=tmp_path, env=env, check=True, timeout=30)
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_a_failed_preview_runs_only_for_a_pull_requests_preview() -> None:
    assert failed_preview_step()["if"] == (
        "failure() && inputs.command == 'preview' && github.event_name == 'pull_request'"
    )


def test_a_failed_preview_replaces_the_comment_pulumi_actions_made(tmp_path: Path) -> None:
    (listing, update) = run_failed_preview_step(tmp_path, found="4242")

    assert listing[:3] == ["api", "--paginate", "repos/acme/gpu-platform/issues/12/comments"]
    assert update[:4] == [
        "api",
        "--method",
        "PATCH",
        "repos/acme/gpu-platform/issues/comments/4242",
    ]
    body = update[-1].removeprefix("body=")
    # The comment pulumi/actions v7 finds again (src/libs/pr.ts): it starts with
    # "#### :tropical_drink: `<command>` on <project>/<stack>" and holds its summary tag.
    assert body.startswith("#### :tropical_drink: `preview` on gpu-platform/acme/dev\n")
    assert "<summary>Pulumi report</summary>" in body
    assert "The preview of 0123abc failed" in body
    assert "https://github.com/acme/gpu-platform/actions/runs/77" in body


def test_a_failed_preview_comments_when_no_preview_commented_before(tmp_path: Path) -> None:
    (_, create) = run_failed_preview_step(tmp_path, found="")

    assert create[:4] == [
        "api",
        "--method",
        "POST",
        "repos/acme/gpu-platform/issues/12/comments",
    ]


def test_the_pulumi_token_comes_from_oidc_where_the_environment_asks_for_it() -> None:
    steps = workflow("pulumi-stack.yml")["jobs"]["pulumi"]["steps"]
    (exchange,) = [s for s in steps if s.get("id") == "pulumi-token"]
    (pulumi,) = [s for s in steps if s.get("name") == "pulumi ${{ inputs.command }}"]

    assert exchange["uses"].startswith("pulumi/auth-actions@")
    assert exchange["if"] == "vars.PULUMI_TOKEN_TYPE != ''"
    assert pulumi["env"]["PULUMI_ACCESS_TOKEN"] == (
        "${{ steps.pulumi-token.outputs.pulumi-access-token || secrets.PULUMI_ACCESS_TOKEN }}"
    )


# --- OIDC trust (docs/ci.md) ----------------------------------------------------------------

CI_DOC = PROJECT_DIR / "docs" / "ci.md"


def doc_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", CI_DOC.read_text(), re.DOTALL)


def test_the_subject_template_carries_the_ref_the_run_started_from() -> None:
    # GitHub's OIDC reference (docs.github.com/en/actions/reference/security/oidc):
    # job_workflow_ref is the called reusable workflow's ref, which a caller on any branch
    # chooses (`uses: .../pulumi-stack.yml@main`); `ref` is the ref the run started from.
    template = next(
        json.loads(block.split("<<'JSON'\n", 1)[1].split("JSON\n", 1)[0])
        for block in doc_blocks("sh")
        if "oidc/customization/sub" in block
    )

    assert template == {
        "use_default": False,
        "include_claim_keys": [
            "repository_owner_id",
            "repository_id",
            "context",
            "ref",
            "job_workflow_ref",
        ],
    }


def trusted_subjects(sid: str) -> list[str]:
    """The OIDC subjects a trust policy of docs/ci.md admits, by its statement's Sid."""
    trusts = [json.loads(b) for b in doc_blocks("json") if "AssumeRoleWithWebIdentity" in b]
    (statement,) = [s for trust in trusts for s in trust["Statement"] if s.get("Sid") == sid]
    return list(statement["Condition"]["StringEquals"]["token.actions.githubusercontent.com:sub"])


def main_subject(environment: str) -> str:
    workflow_ref = "acme/gpu-platform/.github/workflows/pulumi-stack.yml@refs/heads/main"
    return (
        f"repository_owner_id:1234:repository_id:5678:environment:{environment}"
        f":ref:refs/heads/main:job_workflow_ref:{workflow_ref}"
    )


def test_the_deploy_role_trusts_only_runs_started_from_main() -> None:
    assert trusted_subjects("ProdUpdateFromMain") == [main_subject("prod")]


def test_prods_plan_cannot_assume_the_role_that_writes_prod() -> None:
    # The plan runs on every push to main, before anyone approves `prod`: only `prod`'s
    # approved update gets the deploy role; the plan gets a role of its own.
    assert trusted_subjects("ProdPlanFromMain") == [main_subject("prod-plan")]
    assert main_subject("prod-plan") not in trusted_subjects("ProdUpdateFromMain")


def test_google_admits_only_previews_from_another_ref_than_main() -> None:
    provider = next(b for b in doc_blocks("sh") if "providers create-oidc" in b)
    condition = re.search(r'--attribute-condition="([^"]*)"', provider)

    assert condition is not None
    assert condition[1] == (
        "assertion.repository_id == '5678' && assertion.repository_owner_id == '1234' && "
        "(assertion.ref == 'refs/heads/main' || assertion.environment.endsWith('-preview'))"
    )
