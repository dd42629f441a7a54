"""The offline plan: what the program would create for a stack, without credentials."""

import typer


def main(stack: str = typer.Argument("dev", help="The stack to plan (Pulumi.<stack>.yaml).")) -> None:
    """Plan a stack offline."""
    raise typer.Exit(0)
