"""The component the package's provider constructs: `GpuPlatform`, from the schema's inputs.

The provider host hands the component its inputs as one dict, each key by its Python name
(`gpus_per_node`) and numbers as the engine sends them, as floats: `map_input_properties`
(pulumi v3.272.0 `sdk/python/lib/pulumi/provider/experimental/component.py`) converts an
`integer` property with `int()` and then stores the value it was sent over it. This component
turns them back into the stack file's keys, whole numbers into integers, and validates them as
`GpuPlatformArgs.from_settings` does: every problem in one report, each by its key as the
schema spells it (`pools[0].gpusPerNode: got 1.5`).
"""

import types
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

import pulumi
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gpu_platform import platform
from gpu_platform.cluster_facts import EksClusterFacts, GkeClusterFacts
from gpu_platform.config import ConfigProblem, StackConfig
from gpu_platform.package.inputs import GpuPlatformInputs
from gpu_platform.platform import GpuPlatformArgs


class GpuPlatform(platform.GpuPlatform):
    """GPU node pools, the NVIDIA GPU Operator, GPU monitoring and tenant namespaces on an existing
    EKS or GKE cluster, or on one the platform creates (`cluster.create`). Its inputs are the
    stack file's `gpu-platform:` keys (docs/reference/config.md), plain values, all validated
    before any resource is registered; and where the program creates the cluster, its facts
    (`eksClusterFacts`, `gkeClusterFacts`), the cluster's outputs among them. Give the AWS or
    Google Cloud provider, and a Kubernetes one, in the resource's `providers` option where the
    program disables default providers."""

    def __init__(
        self, name: str, args: GpuPlatformInputs, opts: pulumi.ResourceOptions | None = None
    ):
        inputs: dict[str, Any] = dict(args)
        part_names_under_it = bool(inputs.pop("part_names_under_it", False))
        given = [
            facts(**inputs.pop(name))
            for name, facts in (
                ("eks_cluster_facts", EksClusterFacts),
                ("gke_cluster_facts", GkeClusterFacts),
            )
            if name in inputs
        ]
        if len(given) > 1:
            raise platform.PlatformConfigError(
                [
                    ConfigProblem(
                        "gkeClusterFacts",
                        "GkeClusterFacts",
                        "the facts of one cluster: eksClusterFacts or gkeClusterFacts",
                    )
                ]
            )
        settings = _stack_keys(inputs, StackConfig)
        super().__init__(
            name,
            GpuPlatformArgs.from_settings(
                settings,
                part_names_under_it=part_names_under_it,
                cluster_facts=given[0] if given else None,
            ),
            opts,
        )


def _stack_keys(value: Any, annotation: Any) -> Any:
    """`value`, given for a field of type `annotation`, keyed and numbered as in a stack file:
    each model's fields by their keys (`gpusPerNode`), a map's own keys (node labels) as given,
    whole floats where the model takes an integer or anything at all as integers. A value of
    the wrong shape is left as it is, for the loader to report by its key."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _stack_keys(value, get_args(annotation)[0])
    if isinstance(value, Mapping):
        fields = _model_fields(annotation)
        if fields is not None:
            return {
                fields[key].alias or key if key in fields else key: _stack_keys(
                    item, fields[key].annotation if key in fields else None
                )
                for key, item in value.items()
            }
        if origin in (dict, Mapping) or annotation in (Any, None):
            of = get_args(annotation)[1] if get_args(annotation) else annotation
            return {key: _stack_keys(item, of) for key, item in value.items()}
    if isinstance(value, list):
        of = get_args(annotation)[0] if origin is list else annotation
        return [_stack_keys(item, of) for item in value]
    if isinstance(value, float) and value.is_integer() and _takes_integers(annotation):
        return int(value)
    return value


def _model_fields(annotation: Any) -> dict[str, FieldInfo] | None:
    """The fields of a model, or of every model of a union of models (a pool's `sharing`)."""
    if get_origin(annotation) in (Union, types.UnionType):
        models = [member for member in get_args(annotation) if is_model(member)]
    else:
        models = [annotation] if is_model(annotation) else []
    if not models:
        return None
    return {name: info for model in models for name, info in model.model_fields.items()}


def _takes_integers(annotation: Any) -> bool:
    if annotation in (int, Any, None):
        return True
    members = get_args(annotation) if get_origin(annotation) in (Union, types.UnionType) else ()
    return any(_takes_integers(member) for member in members)


def is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
