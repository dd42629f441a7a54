"""The schemas of the custom resources the platform creates, from the CRDs of the pinned charts:
the GPU Operator's NVIDIADriver, Karpenter's NodePool and EC2NodeClass, Kueue's ResourceFlavor,
ClusterQueue, LocalQueue, Cohort, AdmissionCheck, ProvisioningRequestConfig and
WorkloadPriorityClass.

The API server checks a custom resource against its CRD's `openAPIV3Schema` and drops the fields
the schema does not know, so a misspelt field does nothing; no Kubernetes release's OpenAPI
document knows these kinds, so nothing else checks them. `derive.py` reads the CRDs a chart
version installs and writes one JSON file per CRD beside this file
(`<chart>-<version>-<crd name>.json`: group, kind, scope and each served version's schema);
`validation_errors` checks an object against them, refusing unknown fields as well.

EKS Auto Mode's NodeClass (`eks.amazonaws.com/v1`) is the exception: AWS installs its CRD in
the cluster and publishes it nowhere, so `eks-auto-mode-docs-nodeclasses.eks.amazonaws.com.json`
is written by hand from the fields, ranges and required fields the EKS user guide lists
(awsdocs/amazon-eks-user-guide `latest/ug/automode/create-node-class.adoc`, "Node Class
Specification", and `auto-odcr.adoc` for `capacityReservationSelectorTerms`). Compare it with
`kubectl get crd nodeclasses.eks.amazonaws.com -o yaml` of an Auto Mode cluster when AWS adds
fields.
"""

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS_DIR = Path(__file__).parent


def schema_file(chart: str, version: str, crd: str) -> Path:
    """Where the schemas of CRD `crd` (`nvidiadrivers.nvidia.com`) of `chart` at `version` are
    committed."""
    return SCHEMAS_DIR / f"{chart}-{version}-{crd}.json"


@cache
def chart_crds(chart: str, version: str) -> tuple[Mapping[str, Any], ...]:
    """The committed CRDs of `chart` at `version`."""
    return tuple(
        json.loads(path.read_text()) for path in sorted(SCHEMAS_DIR.glob(f"{chart}-{version}-*"))
    )


def validation_errors(obj: Mapping[str, Any], chart: str, version: str) -> list[str]:
    """Why the API server, with one of `chart` `version`'s CRDs installed, would refuse `obj`
    or drop part of it; empty when it would take it whole. The CRDs' CEL rules
    (`x-kubernetes-validations`) are not evaluated."""
    group, _, api_version = obj["apiVersion"].rpartition("/")
    crd = next(
        (c for c in chart_crds(chart, version) if (c["group"], c["kind"]) == (group, obj["kind"])),
        None,
    )
    if crd is None or api_version not in crd["versions"]:
        return [f"{chart} {version} installs no CRD for {obj['apiVersion']} {obj['kind']}"]
    errors = []
    metadata = obj.get("metadata", {})
    if not metadata.get("name"):
        errors.append("metadata.name: missing")
    if ("namespace" in metadata) != (crd["scope"] == "Namespaced"):
        errors.append(f"metadata.namespace: the {obj['kind']} CRD's scope is {crd['scope']}")
    validator = jsonschema.Draft7Validator(closed(crd["versions"][api_version]))
    for error in validator.iter_errors({k: v for k, v in obj.items() if k != "metadata"}):
        errors.append(f"{'.'.join(map(str, error.absolute_path)) or '(root)'}: {error.message}")
    return errors


def closed(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with every object that lists its properties refusing others, as the API
    server drops them (structural schemas prune unknown fields, unless marked
    `x-kubernetes-preserve-unknown-fields`)."""
    closed_schema = dict(schema)
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern.startswith("^(?i)"):
        # The API server's RE2 takes a flag group after `^` (Kueue's AdmissionCheck
        # `parameters.kind`, `^(?i)[a-z]...`); Python only at the start, where it means the same.
        closed_schema["pattern"] = "(?i)^" + pattern.removeprefix("^(?i)")
    if "properties" in schema:
        closed_schema["properties"] = {k: closed(v) for k, v in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            closed_schema["additionalProperties"] = False
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            closed_schema[key] = closed(schema[key])
    for key in ("anyOf", "allOf", "oneOf"):
        if key in schema:
            closed_schema[key] = [closed(s) for s in schema[key]]
    return closed_schema


def without_descriptions(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema without its `description`s, which no check reads (a property named
    `description` stays)."""
    return dict(_without_descriptions(schema))


def _without_descriptions(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in schema.items():
        if key == "description":
            continue
        if key in ("properties", "definitions", "$defs"):
            yield key, {name: without_descriptions(s) for name, s in value.items()}
        elif key in ("items", "additionalProperties", "not") and isinstance(value, Mapping):
            yield key, without_descriptions(value)
        elif key in ("anyOf", "allOf", "oneOf"):
            yield key, [without_descriptions(s) for s in value]
        else:
            yield key, value
