"""The Pulumi project the commands work on, found as the Pulumi CLI finds it.

Like `pulumi`, the commands work on the project in the current directory or the nearest one
above it that has a `Pulumi.yaml` (or `Pulumi.yml`), so they serve any project whose program
uses the components, not only this repository's. The program is the project's `main` (a
directory holding `__main__.py`, or a `.py` file) or `__main__.py` beside `Pulumi.yaml`; stack
files are `Pulumi.<stack>.yaml` in `stackConfigDir`, or beside `Pulumi.yaml`.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_platform import yaml_documents

PROJECT_FILES = ("Pulumi.yaml", "Pulumi.yml")


class ProjectNotFound(FileNotFoundError):
    """No Pulumi project at or above the directory, or one the commands cannot run."""


@dataclass(frozen=True)
class Project:
    """A Pulumi project: its directory, name, program and stack files."""

    directory: Path
    name: str
    program: Path
    """The Python file Pulumi runs."""
    stack_config_dir: Path

    @classmethod
    def find(cls, start: Path | None = None) -> "Project":
        """The project at `start` (default: the current directory) or its nearest parent."""
        start = (start or Path.cwd()).resolve()
        for directory in (start, *start.parents):
            for name in PROJECT_FILES:
                if (directory / name).is_file():
                    return cls.load(directory / name)
        raise ProjectNotFound(
            f"no Pulumi project (Pulumi.yaml) in {start} or above it: run the command in a"
            " project's directory, or give it with --cwd"
        )

    @classmethod
    def load(cls, project_file: Path) -> "Project":
        directory = project_file.parent
        document = _mapping(project_file)
        name = document.get("name")
        if not isinstance(name, str) or not name:
            raise ProjectNotFound(f"{project_file} has no project `name`")
        runtime = document.get("runtime")
        runtime_name = runtime.get("name") if isinstance(runtime, dict) else runtime
        if not runtime_name:
            raise ProjectNotFound(f"{project_file}: project is missing a 'runtime' attribute")
        if runtime_name != "python":
            raise ProjectNotFound(
                f"{project_file}: runtime {runtime_name!r}: the offline plan runs Python programs"
            )
        main = directory / str(document.get("main") or ".")
        program = main if main.suffix == ".py" else main / "__main__.py"
        if not program.is_file():
            raise ProjectNotFound(f"{project_file}: the program {program} does not exist")
        return cls(
            directory=directory,
            name=name,
            program=program,
            stack_config_dir=directory / str(document.get("stackConfigDir") or "."),
        )

    def stack_file(self, stack: str) -> Path:
        return self.stack_config_dir / f"Pulumi.{stack}.yaml"

    def stacks(self) -> list[str]:
        """The stacks that have a stack file, by name."""
        return sorted(
            path.name.removeprefix("Pulumi.").removesuffix(".yaml")
            for path in self.stack_config_dir.glob("Pulumi.*.yaml")
        )


def _mapping(path: Path) -> dict[str, Any]:
    try:
        document = yaml_documents.load(path.read_text())
    except yaml.YAMLError as error:
        raise ProjectNotFound(f"{path} is not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise ProjectNotFound(f"{path} must be a YAML mapping")
    return document
