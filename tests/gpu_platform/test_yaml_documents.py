"""The YAML the program reads on every run is parsed in C, into what PyYAML's own safe loader
builds."""

from pathlib import Path

import pytest
import yaml

from gpu_platform import yaml_documents
from gpu_platform.kubernetes.monitoring import ALERT_RULES_FILE

REPOSITORY = Path(__file__).resolve().parents[2]
EVERY_RUN = [
    ALERT_RULES_FILE,
    REPOSITORY / "Pulumi.yaml",
    *sorted(REPOSITORY.glob("Pulumi.*.yaml")),
]


def test_the_locked_pyyaml_parses_in_c():
    # The lock file's PyYAML wheels are built with libyaml; a source build without it would
    # quietly fall back to the pure-Python parser, several times slower on the alert rules.
    assert yaml.__with_libyaml__
    assert yaml_documents.SAFE_LOADER is yaml.CSafeLoader


@pytest.mark.parametrize("path", EVERY_RUN, ids=lambda path: path.name)
def test_a_file_read_on_every_run_loads_as_pyyaml_safe_load_reads_it(path: Path):
    text = path.read_text()
    expected = yaml.safe_load(text)
    assert yaml_documents.load(text) == yaml_documents.load_unique_keys(text) == expected


def test_every_document_of_a_stream_loads_as_pyyaml_safe_load_all_reads_them():
    text = "kind: Pod\n---\n---\nkind: Job\nspec: {parallelism: 2}\n"
    assert list(yaml_documents.load_all(text)) == [
        {"kind": "Pod"},
        None,
        {"kind": "Job", "spec": {"parallelism": 2}},
    ]


def test_bad_yaml_raises_pyyaml_s_error_with_its_line():
    with pytest.raises(yaml.YAMLError, match="line 2"):
        yaml_documents.load("config:\n  key: [unclosed\n")


def test_every_key_given_twice_is_named_with_its_lines_in_order():
    text = "pools:\n  - name: a\n    max: 3\n    max: 300\nprotect: true\nprotect: false\n"

    with pytest.raises(yaml_documents.DuplicateKeyError) as refused:
        yaml_documents.load_unique_keys(text)

    assert str(refused.value) == (
        'line 4: mapping key "max" already defined at line 3;'
        ' line 6: mapping key "protect" already defined at line 5'
    )


def test_a_key_given_twice_in_an_anchored_mapping_is_named_once():
    text = "base: &pool {max: 3, max: 300}\nfirst: *pool\nsecond: *pool\n"

    with pytest.raises(yaml_documents.DuplicateKeyError) as refused:
        yaml_documents.load_unique_keys(text)

    assert str(refused.value) == 'line 1: mapping key "max" already defined at line 1'
