"""Write the metric names the DCGM exporter accepts in its metrics CSV, for the tests.

The exporter looks each CSV row's name up in go-dcgm's field maps (`dcgmFields`, then the
legacy aliases in `legacyDCGMFields`), then among its own computed metrics (`DCGM_EXP_*`), and
exits on any other name (dcgm-exporter internal/pkg/counters/counter_config.go,
`ExtractCounters`; pkg/cmd/app.go, `getCounters`), so the exporter pod crash-loops. A name is
safe only if every exporter version the platform may run knows it: give go-dcgm's
`pkg/dcgm/const_fields.go` and the exporter's `internal/pkg/counters/const.go` of each version,
and the list holds the names that all of them know. Re-run when the pinned GPU Operator moves to
another exporter version, with that version's pair of files (the exporter's go.mod names its
go-dcgm version):

    python derive_dcgm_fields.py \\
        --go-dcgm go-dcgm@ec245c09fe3e/const_fields.go \\
        --go-dcgm go-dcgm@v1.4601.1/const_fields.go \\
        --exporter dcgm-exporter@4.5.3-4.8.2/const.go \\
        --exporter dcgm-exporter@7ad58324/const.go > dcgm-known-fields.txt
"""

import argparse
import re
from collections.abc import Iterable
from functools import reduce
from pathlib import Path

_FIELD_MAPS = ("dcgmFields", "legacyDCGMFields")
_MAP_ENTRY = re.compile(r'^\s*"(?P<name>[A-Za-z0-9_]+)"\s*:\s*\d+\s*,', re.MULTILINE)
_EXPORTER_NAME = re.compile(r'=\s*"(?P<name>DCGM_EXP_[A-Z0-9_]+)"')


def go_dcgm_field_names(const_fields_go: str) -> set[str]:
    """The names in go-dcgm's current and legacy field maps."""
    names: set[str] = set()
    for map_name in _FIELD_MAPS:
        start = re.search(rf"^var {map_name} = map\[string\]Short\{{$", const_fields_go, re.M)
        if start is None:
            raise ValueError(f"no `var {map_name} = map[string]Short{{` in the file")
        end = const_fields_go.index("\n}", start.end())
        names |= {m["name"] for m in _MAP_ENTRY.finditer(const_fields_go, start.end(), end)}
    return names


def exporter_metric_names(const_go: str) -> set[str]:
    """The exporter's own computed metrics (`DCGM_EXP_*`) named in its counters package."""
    return {m["name"] for m in _EXPORTER_NAME.finditer(const_go)}


def known_names(go_dcgm_files: Iterable[str], exporter_files: Iterable[str]) -> list[str]:
    """The sorted names every given go-dcgm version and every given exporter version know."""
    fields = reduce(set.intersection, map(go_dcgm_field_names, go_dcgm_files))
    exporter = reduce(set.intersection, map(exporter_metric_names, exporter_files))
    return sorted(fields | exporter)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--go-dcgm", type=Path, action="append", required=True)
    parser.add_argument("--exporter", type=Path, action="append", required=True)
    args = parser.parse_args()
    names = known_names(
        (path.read_text() for path in args.go_dcgm), (path.read_text() for path in args.exporter)
    )
    sources = ", ".join(str(path) for path in [*args.go_dcgm, *args.exporter])
    print(f"# Derived by derive_dcgm_fields.py from {sources}; do not edit.")
    print("\n".join(names))


if __name__ == "__main__":
    main()
