"""The command line reference, generated from the commands' declarations (gpu_platform/cli/app.py)
so that it cannot drift from them.

`gpu-platform cli-reference` prints it as Markdown; `--update PAGE` rewrites its section of a
page (the docs site's command line reference, docs/reference/cli.md), which a test compares with
a fresh rendering.
"""

import inspect

import typer

from gpu_platform.cli.generated_section import table_cell

COMMAND = "cli-reference"


def render_reference(app: typer.Typer) -> str:
    """Each command of `app` (the `gpu-platform` command, which passes itself) with its usage,
    description, arguments and options, as `--help` shows them."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    context = typer.Context(group, info_name="gpu-platform")
    lines = _command(group, context)
    for name, command in group.commands.items():
        assert isinstance(command, typer.core.TyperCommand)
        if not command.hidden:
            lines += [
                "",
                *_command(command, typer.Context(command, info_name=name, parent=context)),
            ]
    return "\n".join(lines)


def _command(
    command: typer.core.TyperCommand | typer.core.TyperGroup, context: typer.Context
) -> list[str]:
    usage = command.get_usage(context).removeprefix("Usage: ")
    lines = [f"### `{context.command_path}`", "", "```", usage, "```", ""]
    lines += [_markdown(inspect.cleandoc(command.help or "")), ""]
    lines += ["| argument or option | description |", "| --- | --- |"]
    for param in command.get_params(context):
        record = param.get_help_record(context)
        if record is not None:
            names, help_text = record
            lines.append(f"| `{names}` | {_markdown(table_cell(help_text))} |")
    return lines


def _markdown(text: str) -> str:
    """Help text as Markdown shows it: `<stack>` outside code spans is text, not an HTML tag."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):
        parts[index] = parts[index].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)
