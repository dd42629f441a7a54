"""What the scripts deriving committed files from a chart version's own files share
(`chart_keys/derive.py`, `crd_schemas/derive.py`): naming the chart and version on the command
line, and writing the derived file beside the script, which the EKS add-on schemas'
`derive.py` does too."""

from pathlib import Path
from typing import Annotated

import typer

ChartName = Annotated[str, typer.Option(help="The chart the files belong to")]
ChartVersion = Annotated[str, typer.Option(help="The chart version the files belong to")]


def write_derived(target: Path, text: str, what: str) -> None:
    """Write `text` to `target`, a file to commit, and say what it holds."""
    target.write_text(text)
    typer.echo(f"wrote {what} to {target}")
