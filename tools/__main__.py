"""`python -m tools <command>`: the offline plan, pre-flight and fit checks."""

import typer

from tools import config_reference, fit, plan, preflight

app = typer.Typer(
    help="Plan, check and inspect the GPU platform stacks without touching a cluster.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("plan")(plan.main)
app.command("config-reference")(config_reference.main)
app.command("preflight")(preflight.main)
app.command("fit")(fit.main)


@app.callback()
def tools() -> None:
    """Plan, check and inspect the GPU platform stacks without touching a cluster."""


if __name__ == "__main__":
    app()
