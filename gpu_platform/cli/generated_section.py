"""A generated section of a Markdown page: what lies between a command's two markers, which
`--update PAGE` rewrites and a test compares with a fresh rendering."""

from pathlib import Path

import typer

from gpu_platform.cli.cli import fail

EXIT_BAD_PAGE = 2


def markers(command: str) -> tuple[str, str]:
    """The lines that open and close `gpu-platform <command>`'s section of a page."""
    return (
        f"<!-- {command}:start (gpu-platform {command} --update PAGE) -->",
        f"<!-- {command}:end -->",
    )


def section(text: str, command: str) -> str:
    """What lies between the command's markers in `text`."""
    start, end = markers(command)
    return text.split(start, 1)[1].split(end, 1)[0]


def print_or_update(page: Path | None, command: str, rendered: str) -> None:
    """Print `rendered`, or with a page rewrite the command's section of it."""
    if page is None:
        typer.echo(rendered)
    else:
        update(page, command, rendered)


def update(page: Path, command: str, rendered: str) -> None:
    """Rewrite the command's section of `page` with `rendered`, leaving the rest as written."""
    start, end = markers(command)
    try:
        text = page.read_text()
    except OSError as error:
        fail(f"cannot read {page}: {error.strerror}", EXIT_BAD_PAGE)
    if text.count(start) != 1 or text.count(end) != 1:
        fail(
            f"{page} needs the markers of `gpu-platform {command}`, once each, to rewrite what"
            f" is between them:\n{start}\n{end}",
            EXIT_BAD_PAGE,
        )
    head, rest = text.split(start)
    tail = rest.split(end)[1]
    page.write_text(f"{head}{start}\n{rendered}\n{end}{tail}")


def table_cell(text: str) -> str:
    """`text` on one line, with `|` escaped, as a cell of a Markdown table."""
    return " ".join(text.split()).replace("|", "\\|")
