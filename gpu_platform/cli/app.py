"""`gpu-platform`: plan, check and inspect the GPU platform's stacks without touching a cluster.

Every command and option is declared here; each command imports its own module only when it
runs, so that `gpu-platform plan` does not pay for boto3 or google-auth (`preflight`), the fit
check's node templates or the config reference, and `--help` answers at once.
"""

import gc
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from gpu_platform.cli.options import options

app = typer.Typer(
    name="gpu-platform",
    help="Plan, check and inspect the GPU platform's stacks without touching a cluster.\n\n"
    "Works on the Pulumi project in the current directory (or --cwd), like `pulumi`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

GC_THRESHOLD = 700_000
"""The collector's first threshold while a command runs (see `main`)."""
EXIT_INTERNAL_ERROR = 70
"""A failure the commands did not expect (BSD's EX_SOFTWARE): a bug, not a problem with the
stack or the account."""


def _stack_names(incomplete: str) -> list[str]:
    """Shell completion: the stacks of the project the command would work on."""
    from gpu_platform.project import Project, ProjectNotFound

    try:
        stacks = Project.find().stacks()
    except (ProjectNotFound, OSError, ValueError):
        return []
    return [stack for stack in stacks if stack.startswith(incomplete)]


Stack = Annotated[
    str,
    typer.Argument(
        help="The stack: Pulumi.<stack>.yaml.", show_default=False, autocompletion=_stack_names
    ),
]
OptionalStack = Annotated[
    str | None,
    typer.Argument(
        help="The stack: Pulumi.<stack>.yaml. Default: the project's only stack, else `dev`.",
        show_default=False,
        autocompletion=_stack_names,
    ),
]
# `--cwd` is taken before the command, as a global option, and after it, as `pulumi preview
# --cwd DIR` takes it.
Cwd = Annotated[
    Path | None,
    typer.Option(
        "--cwd",
        "-C",
        help="Run as if started in this directory.",
        exists=True,
        file_okay=False,
        show_default=False,
    ),
]


def _enter(cwd: Path | None) -> None:
    if cwd is not None:
        os.chdir(cwd)


def _print_version(show: bool) -> None:
    if show:
        from importlib.metadata import version

        typer.echo(f"gpu-platform {version('gpu-platform')}")
        raise typer.Exit()


@app.callback()
def gpu_platform(
    cwd: Cwd = None,
    debug: Annotated[
        bool,
        typer.Option(
            "--debug", help="Show the traceback of an internal error or of a failing program."
        ),
    ] = False,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", help="Print the version and exit.", callback=_print_version, is_eager=True
        ),
    ] = False,
) -> None:
    """Plan, check and inspect the GPU platform's stacks without touching a cluster."""
    options.debug = debug
    _enter(cwd)


@app.command()
def plan(
    stack: OptionalStack = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    policy_pack: Annotated[
        Path | None,
        typer.Option(
            help="The policy pack to run over the plan, as `pulumi preview --policy-pack`;"
            " default: the pack installed with gpu-platform (`gpu-platform policy-pack-path`).",
            show_default=False,
        ),
    ] = None,
    policy_config: Annotated[
        Path | None,
        typer.Option(
            help="Policy pack config (the --policy-pack-config of `pulumi preview`);"
            " default: the project's policy-config/<stack>.json where it exists.",
            show_default=False,
        ),
    ] = None,
    cwd: Cwd = None,
) -> None:
    """Plan a stack offline, with the policy pack's verdicts: no credentials, no Pulumi CLI.

    Exit codes: 0 planned; 1 the program or the policy pack failed; 2 a configuration error, or
    a fact the lock lacks (`gpu-platform lock` fills it); 3 a mandatory policy violation.
    """
    _enter(cwd)
    from gpu_platform.cli import plan as command

    command.run(stack, as_json=as_json, policy_pack=policy_pack, policy_config=policy_config)


@app.command()
def preflight(
    stack: Stack,
    timeout: Annotated[
        float,
        typer.Option(
            min=1,
            help="Seconds the whole check may take, credential lookups and retries included;"
            " past them it exits 4 naming the endpoint that did not answer.",
        ),
    ] = 30,
    cwd: Cwd = None,
) -> None:
    """Check a stack against its cloud: EKS cluster, offerings and quotas; GKE cluster and
    reservations.

    Read-only. Exit codes: 0 nothing blocks; 1 a blocking finding; 2 a bad stack; 4 it cannot
    check (credentials, network, permissions, throttling, no answer by the deadline).
    """
    _enter(cwd)
    from gpu_platform.cli import preflight as command

    command.run(stack, timeout)


@app.command()
def fit(
    stack: Stack,
    pod_file: Annotated[
        Path,
        typer.Argument(
            help="YAML with Pods or workloads (Deployment, Job...).", show_default=False
        ),
    ],
    cwd: Cwd = None,
) -> None:
    """Show which GPU pools each pod in POD_FILE fits from zero nodes, and why not the others.

    Exit codes: 0 every pod fits a pool; 1 some pod fits none; 2 a bad stack or pod file.
    """
    _enter(cwd)
    from gpu_platform.cli import fit as command

    command.run(stack, pod_file)


@app.command()
def lock(
    stacks: Annotated[
        list[str] | None,
        typer.Argument(
            help="The stacks whose facts to read (Pulumi.<stack>.yaml). Default: every stack of"
            " the project, and the lock is pruned of what none of them needs.",
            show_default=False,
            autocompletion=_stack_names,
        ),
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing: print what would change, exit 1 if any."),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            min=1,
            help="Seconds the whole command may take, retries included; past them it exits 4"
            " naming the source that did not answer.",
        ),
    ] = 120,
    cwd: Cwd = None,
) -> None:
    """Read the facts the plan needs from their sources (COS drivers, image digests) into the
    project's gpu-platform.lock, each with its source and when it was read.

    Exit codes: 0 written, or up to date; 1 with --check, the lock would change; 2 a bad
    project, stack or lock file; 4 a fact could not be read (each is named), the others
    written, or, with --check, a fact was left unread (a warning says which).
    """
    _enter(cwd)
    from gpu_platform.cli import lock as command

    command.run(stacks or [], check, timeout)


UpdatePage = Annotated[
    Path | None,
    typer.Option(
        "--update",
        metavar="PAGE",
        help="Rewrite the reference between its markers in this Markdown page instead of"
        " printing it; exit 2 where the page lacks them.",
        dir_okay=False,
        show_default=False,
    ),
]


@app.command("config-reference")
def config_reference(update: UpdatePage = None, cwd: Cwd = None) -> None:
    """Print the stack config reference as Markdown: every key of Pulumi.<stack>.yaml, its type,
    default and what is allowed."""
    _enter(cwd)
    from gpu_platform.cli import config_reference as command
    from gpu_platform.cli.generated_section import print_or_update

    print_or_update(update, command.COMMAND, command.render_reference())


@app.command("cli-reference")
def cli_reference(update: UpdatePage = None, cwd: Cwd = None) -> None:
    """Print this command line reference as Markdown: each command's usage, arguments and
    options."""
    _enter(cwd)
    from gpu_platform.cli import cli_reference as command
    from gpu_platform.cli.generated_section import print_or_update

    print_or_update(update, command.COMMAND, command.render_reference(app))


@app.command("policy-pack-path")
def policy_pack_path() -> None:
    """Print the directory of the policy pack installed with gpu-platform, for
    `pulumi preview --policy-pack "$(gpu-platform policy-pack-path)"`."""
    # The pack's place is computed, not imported: the pack is a directory Pulumi loads, and
    # importing the analyzer would load the Pulumi SDK for one line of output.
    typer.echo(Path(__file__).resolve().parent.parent / "policy_pack")


def main() -> NoReturn:
    """The `gpu-platform` console command."""
    # Importing the provider SDKs creates hundreds of thousands of objects (their classes and
    # type hints), which the collector's default threshold has it walk again and again: a
    # quarter of a plan's time. It still collects, a thousand times less often.
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    code = run(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything the command does is done: skip the interpreter's teardown, which frees the
    # provider SDKs' tens of thousands of classes one by one (0.7 s of a 3 s plan).
    os._exit(code)


def run(args: list[str]) -> int:
    """Run the command line `args`; its exit code. A failure the commands do not expect is an
    internal error: one line saying so, the traceback only with `--debug`."""
    options.debug = False
    try:
        app(args, prog_name="gpu-platform")
    except SystemExit as exit_:
        if isinstance(exit_.code, str):
            print(exit_.code, file=sys.stderr)
            return 1
        return exit_.code or 0
    except Exception as error:
        if options.debug:
            traceback.print_exc()
        print(
            f"gpu-platform: internal error: {type(error).__name__}: {error}\n"
            "This is a bug in gpu-platform, not in your stack. Run the command again with"
            " --debug for the traceback, and report it with that.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL_ERROR
    return 0
