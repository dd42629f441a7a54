"""Kubernetes objects as the policies read them: where the pods are in each kind that carries
them, the containers of a pod, and the namespace an object lands in.

A Pod is itself the pod; the workload controllers carry a pod template, a CronJob one level
deeper. Every API version of these kinds is recognised (`kubernetes:apps/v1:Deployment`,
`kubernetes:apps/v1beta2:Deployment`, ...). Their `...Patch` kinds (server-side apply patches of
an existing object), and those of the custom kinds below, carry a partial pod: `Pod.partial`
tells the policies to judge only the values it sets.

GPU jobs mostly arrive as custom resources of the batch and serving operators (KubeRay,
Kubeflow, JobSet, LeaderWorkerSet), which carry several pod templates each: `GPU_WORKLOAD_CRDS`
says where, by API group and kind, as their CRDs define them. A `*` step is every element of a
list or every value of a map there. A stack's policy config adds its own kinds, or replaces an
entry of the table, through the policy `gpu-workload-kinds` (`custom_kinds_from`), as pod
templates or as inline pod specs.

Each pod is its own: a value not known yet (at preview) on the way to one pod template, or in
one container, is read, and raises, only when a check reads that pod or that container.
"""

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import argo
from props import (
    UNKNOWN_SENTINELS,
    Step,
    elements,
    entries,
    field_path,
    flag,
    indexed,
    is_list,
    keys,
    mapping,
    text,
    value_at,
)
from pulumi_policy.proxy import UnknownValueError
from type_tokens import api_group_and_kind, kubernetes_type

POD_TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Pod": (),
    "PodTemplate": ("template",),
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


@dataclass(frozen=True)
class PodPath:
    """Where a custom resource keeps a pod: a dotted pattern (`*` for every element of a list
    or every value of a map) and what it leads to."""

    steps: tuple[str, ...]
    inline: bool = False
    """A pod spec itself (KServe's `spec.predictor`), not a template of metadata and spec."""
    partial: bool = False
    """A patch of a pod (Trainer v2's runtime patches): only the values it sets."""
    containers: tuple[tuple[str, ...], ...] = ()
    """For a template that runs containers of its own fields rather than a pod spec's list
    (Argo Workflows' `container`, `script`, `sidecars`): their dotted patterns from `steps`. The
    template then holds the pod's other fields (`securityContext`, `volumes`,
    `initContainers`, ...) inline, and is a pod only where one of them finds a container."""
    inherits: tuple[str, ...] | None = None
    """Where the resource keeps pod fields the template takes when it sets none of its own
    (`INHERITED_FIELDS`, Argo's workflow-level spec)."""


def _templates(*patterns: tuple[str, ...], partial: bool = False) -> tuple[PodPath, ...]:
    return tuple(PodPath(pattern, partial=partial) for pattern in patterns)


# KubeRay (ray.io/v1, ray-project/kuberay v1.7.0 ray-operator/apis/ray/v1/): where each kind
# keeps its RayClusterSpec (raycluster_types.go: headGroupSpec.template, workerGroupSpecs[]
# .template), and the RayJob spec a RayCronJob schedules (raycronjob_types.go: jobTemplate).
RAY_CLUSTER_SPECS: Mapping[str, tuple[str, ...]] = {
    "RayCluster": ("spec",),
    "RayJob": ("spec", "rayClusterSpec"),
    "RayService": ("spec", "rayClusterConfig"),
    "RayCronJob": ("spec", "jobTemplate", "rayClusterSpec"),
}
_RAY_SUBMITTERS: Mapping[str, tuple[str, ...]] = {
    # rayjob_types.go: submitterPodTemplate, the pod that runs `ray job submit`.
    "RayJob": ("spec", "submitterPodTemplate"),
    "RayCronJob": ("spec", "jobTemplate", "submitterPodTemplate"),
}
_HEAD = ("headGroupSpec", "template")

# Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1, kubeflow/trainer v2.3.0
# pkg/apis/trainer/v1alpha1/): a runtime's JobSet template (trainingruntime_types.go:
# TrainingRuntimeSpec.template is a JobSetTemplateSpec), and a TrainJob's patches of it
# (trainjob_types.go: runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]
# .template.spec.template, a PodTemplatePatch of the pod fields a TrainJob may set).
_TRAINING_RUNTIME = _templates(
    ("spec", "template", "spec", "replicatedJobs", "*", "template", "spec", "template")
)

ARGO_WORKFLOWS: Mapping[str, tuple[str, ...]] = {
    "Workflow": ("spec",),
    "WorkflowTemplate": ("spec",),
    "ClusterWorkflowTemplate": ("spec",),
    "CronWorkflow": ("spec", "workflowSpec"),
}
"""Where each Argo kind keeps its WorkflowSpec."""
_ARGO_CONTAINERS = (
    ("container",),
    ("script",),
    ("containerSet", "containers", "*"),
    ("sidecars", "*"),
)


# Where each Dynamo kind keeps its v1alpha1 component specs (DynamoComponentDeploymentSharedSpec).
DYNAMO_COMPONENTS: Mapping[str, tuple[str, ...]] = {
    "DynamoGraphDeployment": ("spec", "services", "*"),
    "DynamoComponentDeployment": ("spec",),
}


def _dynamo(kind: str, v1beta1: tuple[str, ...]) -> tuple[PodPath, ...]:
    """The pods of a Dynamo kind: each v1alpha1 component's `extraPodSpec` (its main container
    and frontend sidecar added by `_dynamo_mains`) and each v1beta1 component's `podTemplate`,
    at `v1beta1`."""
    built = PodPath((*DYNAMO_COMPONENTS[kind], "extraPodSpec"), inline=True)
    return (built, PodPath((*v1beta1, "podTemplate")))


GPU_WORKLOAD_CRDS: Mapping[tuple[str, str], tuple[PodPath, ...]] = {
    **{
        ("ray.io", kind): _templates(
            (*cluster, *_HEAD),
            (*cluster, "workerGroupSpecs", "*", "template"),
            *((_RAY_SUBMITTERS[kind],) if kind in _RAY_SUBMITTERS else ()),
        )
        for kind, cluster in RAY_CLUSTER_SPECS.items()
    },
    # Kubeflow training operator (kubeflow.org/v1): a pod template per replica type.
    ("kubeflow.org", "PyTorchJob"): _templates(("spec", "pytorchReplicaSpecs", "*", "template")),
    ("kubeflow.org", "TFJob"): _templates(("spec", "tfReplicaSpecs", "*", "template")),
    ("kubeflow.org", "MPIJob"): _templates(("spec", "mpiReplicaSpecs", "*", "template")),
    ("kubeflow.org", "XGBoostJob"): _templates(("spec", "xgbReplicaSpecs", "*", "template")),
    ("kubeflow.org", "JAXJob"): _templates(("spec", "jaxReplicaSpecs", "*", "template")),
    ("kubeflow.org", "PaddleJob"): _templates(("spec", "paddleReplicaSpecs", "*", "template")),
    ("trainer.kubeflow.org", "TrainingRuntime"): _TRAINING_RUNTIME,
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): _TRAINING_RUNTIME,
    # JobSet (jobset.x-k8s.io): each replicated Job's pod template.
    ("jobset.x-k8s.io", "JobSet"): _templates(
        ("spec", "replicatedJobs", "*", "template", "spec", "template")
    ),
    # Volcano (batch.volcano.sh/v1alpha1, volcano-sh/volcano v1.15.1
    # staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/job.go): each task's pod template.
    ("batch.volcano.sh", "Job"): _templates(("spec", "tasks", "*", "template")),
    # KServe (serving.kserve.io/v1beta1, kserve/kserve v0.20.0 pkg/apis/serving/v1beta1/): the
    # predictor, its multi-node workers, the transformer and the explainer each inline a PodSpec
    # (predictor.go, transformer.go, explainer.go: `PodSpec json:",inline"`).
    ("serving.kserve.io", "InferenceService"): tuple(
        PodPath(path, inline=True)
        for path in (
            ("spec", "predictor"),
            ("spec", "predictor", "workerSpec"),
            ("spec", "transformer"),
            ("spec", "explainer"),
        )
    ),
    # A serving runtime's pod spec is a part of the predictor's pod (servingruntime_types.go,
    # ServingRuntimePodSpec, and WorkerSpec's), which KServe merges with the predictor's: only
    # the values it sets are judged, the pod's security context being the predictor's.
    **{
        ("serving.kserve.io", kind): tuple(
            PodPath(path, inline=True, partial=True) for path in (("spec",), ("spec", "workerSpec"))
        )
        for kind in ("ServingRuntime", "ClusterServingRuntime")
    },
    # LeaderWorkerSet (leaderworkerset.x-k8s.io): multi-node inference.
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): _templates(
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
    # Kubeflow Trainer v2.1 (kubeflow/trainer v2.1.0 pkg/apis/trainer/v1alpha1/
    # trainjob_types.go): a TrainJob's podTemplateOverrides[].spec, a PodTemplateSpecOverride of
    # the runtime's pods (node selection, tolerations, volumes, containers' env and mounts),
    # merged into them; v2.2 replaced it by runtimePatches.
    ("trainer.kubeflow.org", "TrainJob"): (
        *_templates(
            (
                "spec",
                "runtimePatches",
                "*",
                "trainingRuntimeSpec",
                "template",
                "spec",
                "replicatedJobs",
                "*",
                "template",
                "spec",
                "template",
            ),
            partial=True,
        ),
        PodPath(("spec", "podTemplateOverrides", "*", "spec"), inline=True, partial=True),
    ),
    # KServe's LLMInferenceService (serving.kserve.io v1alpha1 and v1alpha2, kserve/kserve v0.20.0
    # pkg/apis/serving/v1alpha1/llm_inference_service_types.go): the WorkloadSpec inlined in the
    # spec and the prefill's each hold a PodSpec at `template` (the main or decode pods) and
    # `worker` (multi-node workers), and the router's scheduler one at `template` (the endpoint
    # picker). Both are judged on the values they set: KServe merges every service, by strategic
    # merge patch, over the well-known LLMInferenceServiceConfig of its layout, then its
    # baseRefs (pkg/controller/v1alpha2/llmisvc/config_merge.go, combineBaseRefsConfig,
    # mergeSpecs), and those configs hold the rest of the pod: config/llmisvcconfig/
    # config-llm-template.yaml gives the `main` container runAsNonRoot, RuntimeDefault seccomp,
    # no privilege escalation and no capabilities.
    **{
        ("serving.kserve.io", kind): tuple(
            PodPath(path, inline=True, partial=True)
            for path in (
                ("spec", "template"),
                ("spec", "worker"),
                ("spec", "prefill", "template"),
                ("spec", "prefill", "worker"),
                ("spec", "router", "scheduler", "template"),
            )
        )
        for kind in ("LLMInferenceService", "LLMInferenceServiceConfig")
    },
    # Kubeflow Notebooks (kubeflow.org/v1, kubeflow/kubeflow at 0708d13 components/
    # notebook-controller/api/v1/notebook_types.go): NotebookSpec.template, a
    # NotebookTemplateSpec of a PodSpec at `spec`.
    ("kubeflow.org", "Notebook"): _templates(("spec", "template")),
    # Seldon Core (machinelearning.seldon.io/v1, SeldonIO/seldon-core at 00908a9
    # operator/apis/machinelearning.seldon.io/v1/seldondeployment_types.go): each predictor's
    # componentSpecs[], a SeldonPodSpec of metadata and a PodSpec.
    ("machinelearning.seldon.io", "SeldonDeployment"): _templates(
        ("spec", "predictors", "*", "componentSpecs", "*")
    ),
    # Argo Workflows (argoproj.io/v1alpha1, argoproj/argo-workflows v4.1.2
    # pkg/apis/workflow/v1alpha1/): a WorkflowSpec's templates[] each run one pod of their own
    # fields (workflow_types.go, Template: `container` or `script`, a ScriptTemplate of a
    # Container inline, or `containerSet.containers[]`, with `sidecars[]` and `initContainers[]`
    # beside it, and the pod's securityContext, volumes, nodeSelector, tolerations and affinity);
    # the workflow's spec holds the defaults (`INHERITED_FIELDS`). A CronWorkflow's WorkflowSpec
    # is its spec.workflowSpec (cron_workflow_types.go).
    **{
        ("argoproj.io", kind): (
            PodPath(
                (*workflow, "templates", "*"),
                inline=True,
                containers=_ARGO_CONTAINERS,
                inherits=workflow,
            ),
        )
        for kind, workflow in ARGO_WORKFLOWS.items()
    },
    # NVIDIA Dynamo (nvidia.com, ai-dynamo/dynamo at 015d780 deploy/operator/api/): a
    # DynamoGraphDeployment's components and a DynamoComponentDeployment, the one component it
    # reconciles each into. v1alpha1 (v1alpha1/dynamographdeployment_types.go: spec.services, a
    # map of DynamoComponentDeploymentSharedSpec) holds each pod's overrides in `extraPodSpec`,
    # a PodSpec inline beside `mainContainer`, a Container (common.go, ExtraPodSpec), from which
    # the operator builds the whole pod (`_dynamo_mains`), so it is judged whole. v1beta1
    # (v1beta1/dynamocomponentdeployment_types.go) replaced them by `podTemplate`, a whole
    # PodTemplateSpec whose `main` container the operator only adds its command, env, ports,
    # probes, resources and mounts to; a DynamoGraphDeployment's are in spec.components[].
    ("nvidia.com", "DynamoGraphDeployment"): _dynamo(
        "DynamoGraphDeployment", ("spec", "components", "*")
    ),
    ("nvidia.com", "DynamoComponentDeployment"): _dynamo("DynamoComponentDeployment", ("spec",)),
}

# argoproj/argo-workflows v4.1.2 workflow/controller/workflowpod.go: the pod fields a template
# takes from the workflow's spec where it sets none (addSchedulingConstraints: nodeSelector,
# affinity, tolerations, securityContext), the workflow's alone (hostNetwork), and the
# workflow's volumes, which a template's pod gets beside its own (addVolumeReferences adds
# those its containers mount; the pack judges them all, so a workflow volume that no template
# mounts is still judged in each template's pod).
INHERITED_FIELDS = (
    "nodeSelector",
    "affinity",
    "tolerations",
    "securityContext",
    "hostNetwork",
    "volumes",
)


class _Joined(Sequence[Any]):
    """Two lists read as one, item by item, so an item not known yet raises only when read."""

    def __init__(self, first: Sequence[Any], second: Sequence[Any]) -> None:
        self._parts = (first, second)

    def __len__(self) -> int:
        return sum(map(len, self._parts))

    def __getitem__(self, index: Any) -> Any:
        first, second = self._parts
        if not isinstance(index, int):
            raise TypeError("a joined list is read by index")
        return first[index] if index < len(first) else second[index - len(first)]


# In the order the built-in admission visits them, which is the order violations are listed.
CONTAINER_COLLECTIONS = ("initContainers", "containers", "ephemeralContainers")
_COLLECTION_NOUNS = {
    "initContainers": "init container",
    "containers": "container",
    "ephemeralContainers": "ephemeral container",
}


@dataclass(frozen=True)
class Container:
    collection: str
    index: int
    """Its place in its list; -1 for one that stands for a whole list not known yet, or that
    the operator adds."""
    props: Any
    """Its fields, or the engine's unknown value when the container is not known yet."""
    root: tuple[Step, ...] | None = None
    """Where the container's fields are in the resource, when not in its pod's spec (the
    KubeRay autoscaler's, from `autoscalerOptions`)."""
    fixed_name: str | None = None
    resources_key: str = "resources"
    """The key of its resource requirements (`resourcesPerNode` for a TrainJob's trainer)."""
    lent: tuple[tuple[Step, ...], ...] = ()
    """The paths of its fields that the operator takes from elsewhere in the resource, at
    `lender` (the fields of a v1alpha1 Dynamo component's own probes that its main container
    keeps), each with all it holds."""
    lender: tuple[Step, ...] = ()
    fix_note: str | None = None
    """Where a Pod Security fix goes when the container's own fields cannot hold it (a v1alpha1
    Dynamo frontend sidecar has no securityContext)."""

    @property
    def name(self) -> str:
        """Its name, or its place in the list while the name is not known (at preview)."""
        if self.fixed_name is not None:
            return self.fixed_name
        try:
            return text(self.props, "name") or self._place
        except UnknownValueError:
            return self._place

    @property
    def _place(self) -> str:
        # A template's own container (Argo's `container`) is named by the field holding it.
        last = self.root[-1] if self.root else None
        return last if isinstance(last, str) else f"#{self.index if last is None else last}"

    @property
    def label(self) -> str:
        """`container "app"`, `init container "setup"`."""
        return f'{_COLLECTION_NOUNS[self.collection]} "{self.name}"'


@dataclass(frozen=True)
class Pod:
    """The pod a resource describes: its metadata and spec, and where they are in the resource."""

    kind: str
    props: Mapping[str, Any]
    path: tuple[Step, ...]
    partial: bool = False
    """A patch's pod: only the fields it changes, the rest of the object unseen."""
    inline: bool = False
    """`path` leads to the pod spec itself, with no metadata of its own."""
    metadata_path: tuple[Step, ...] | None = None
    """Where the metadata of an inline pod is, when the resource keeps it beside the spec (a
    v1alpha1 Dynamo component's `extraPodMetadata`)."""
    added: tuple[Container, ...] = ()
    """Containers the operator adds to the pod from elsewhere in the resource."""
    replaced: str | None = None
    """The name of a container of the pod's own list that the operator drops for one it adds
    (a v1alpha1 Dynamo component's `main`)."""
    inherits: tuple[Step, ...] | None = None
    """Where the pod fields it takes when it sets none of its own are (`PodPath.inherits`)."""
    unread: str | None = None
    """Why what it sets cannot be read before the pod is built, and the fix: an Argo
    podSpecPatch that is neither JSON nor YAML until its `{{...}}` expressions are substituted,
    a resource template's manifest that is not literal. Never known before the pod runs."""
    own_namespace: bool = False
    """Whether it lands in a namespace of its own rather than the resource's: an object an
    Argo resource template creates, in `namespace`, or one not known where that is None."""
    namespace: str | None = None

    @property
    def metadata(self) -> Mapping[str, Any]:
        if self.metadata_path is not None:
            return mapping(self.props, *self.metadata_path) or {}
        if self.inline:
            return {}
        return mapping(self.props, *self.path, "metadata") or {}

    @property
    def spec(self) -> Mapping[str, Any]:
        own = mapping(self.props, *self._spec_path) or {}
        if self.inherits is None:
            return own
        inherited = self._inherited
        spec = {**{key: inherited[key] for key in INHERITED_FIELDS if key in inherited}, **own}
        if is_list(own.get("volumes")) and is_list(inherited.get("volumes")):
            spec["volumes"] = _Joined(own["volumes"], inherited["volumes"])
        return spec

    @property
    def _inherited(self) -> Mapping[str, Any]:
        return {} if self.inherits is None else mapping(self.props, *self.inherits) or {}

    @property
    def _spec_path(self) -> tuple[Step, ...]:
        return self.path if self.inline else (*self.path, "spec")

    def spec_field(self, *steps: Step) -> str:
        """The path of a spec field in the resource, for messages: an inherited one where the
        workflow holds it."""
        if self.inherits is not None and steps and steps[0] in INHERITED_FIELDS:
            own = mapping(self.props, *self._spec_path) or {}
            if steps[0] == "volumes" and len(steps) > 1 and isinstance(steps[1], int):
                count = len(own["volumes"]) if is_list(own.get("volumes")) else 0
                if steps[1] >= count:
                    return field_path(*self.inherits, "volumes", steps[1] - count, *steps[2:])
            elif steps[0] not in own and steps[0] in self._inherited:
                return field_path(*self.inherits, *steps)
        return field_path(*self._spec_path, *steps)

    def metadata_field(self, *steps: Step) -> str:
        if self.metadata_path is not None:
            return field_path(*self.metadata_path, *steps)
        return field_path(*self.path, "metadata", *steps)

    def container_field(self, container: Container, *steps: Step) -> str:
        if any(steps[: len(lent)] == lent for lent in container.lent):
            return field_path(*container.lender, *steps)
        if container.root is not None:
            if steps[:1] == ("resources",):
                steps = (container.resources_key, *steps[1:])
            return field_path(*container.root, *steps)
        if container.index < 0:
            return self.spec_field(container.collection, *steps)
        return self.spec_field(container.collection, container.index, *steps)

    def containers(self, collections: tuple[str, ...] = CONTAINER_COLLECTIONS) -> list[Container]:
        """The pod's containers. One not known yet as a whole (at preview) is still listed, as
        an unknown value that raises when a check reads it: the checks that judge containers
        one at a time (`checks.each`) then skip that one alone."""
        spec = self.spec
        found = []
        for collection in collections:
            try:
                items = indexed(spec, collection)
            except UnknownValueError as unknown:
                # The whole list is not known: one unknown stands for all its containers.
                found.append(Container(collection, -1, unknown.unknown_type_sentinel))
                continue
            found += [
                Container(collection, index, item)
                for index, item in items
                if isinstance(item, Mapping) or item in UNKNOWN_SENTINELS
            ]
        if self.replaced is not None:
            found = [c for c in found if (c.collection, c.name) != ("containers", self.replaced)]
        return found + [c for c in self.added if c.collection in collections]

    @property
    def label(self) -> str:
        """Where the pod is in its resource, for notes: `spec.template`, or `the pod`."""
        return field_path(*self.path) or "the pod"


def pods_of(resource_type: str, props: Mapping[str, Any]) -> list[Pod]:
    """The pods a resource of this type carries: one for the built-in kinds, one per pod
    template for the GPU workload CRDs, none for other kinds. A `...Patch` of any of them (a
    server-side apply patch of an existing object) carries partial pods."""
    found = kubernetes_type(resource_type)
    if found is None:
        return []
    group, kind, patched = found.group, found.name, found.patched_kind
    path = POD_TEMPLATE_PATHS.get(patched)
    if path is not None and group in _CORE_GROUPS:
        return [Pod(patched, props, path, partial=patched != kind)]
    paths = pod_paths(group, kind)
    patch = False
    if paths is None and patched != kind:
        kind, paths, patch = patched, pod_paths(group, patched), True
    workflow = ARGO_WORKFLOWS.get(kind) if group == "argoproj.io" and paths else None
    if workflow is not None and (group, kind) not in CUSTOM_KINDS:
        return _argo_pods(kind, props, workflow, paths or ())
    pods = _found(kind, props, paths or (), patch)
    if group == "ray.io" and kind in RAY_CLUSTER_SPECS:
        head = (*RAY_CLUSTER_SPECS[kind], *_HEAD)
        autoscaler = _ray_autoscaler(props, RAY_CLUSTER_SPECS[kind])
        pods = [replace(p, added=autoscaler) if p.path == head else p for p in pods]
    if (group, kind) == ("serving.kserve.io", "InferenceService"):
        pods = [
            replace(p, added=_kserve_servers(props, p.path)) if p.path in _KSERVE_SERVERS else p
            for p in pods
        ]
    if group == "nvidia.com" and kind in DYNAMO_COMPONENTS and (group, kind) not in CUSTOM_KINDS:
        pods = _dynamo_mains(kind, props, pods, patch)
    return pods


def _found(
    kind: str, props: Mapping[str, Any], paths: Sequence[PodPath], patch: bool = False
) -> list[Pod]:
    return [
        Pod(
            kind,
            props,
            found,
            partial=patch or where.partial,
            inline=where.inline,
            added=_own_containers(props, found, where.containers),
            inherits=where.inherits,
        )
        for where in paths
        for found in found_pods(props, where)
    ]


def _argo_pods(
    kind: str, props: Mapping[str, Any], workflow: tuple[str, ...], paths: Sequence[PodPath]
) -> list[Pod]:
    """The pods an Argo workflow's templates run, each under the workflow's `templateDefaults`
    (`argo.with_defaults`), and as partial pods what the podSpecPatches set. A workflow whose
    own templates run no pod (one that only references a WorkflowTemplate, by
    `workflowTemplateRef` or its steps' `templateRef`) still gives the pods it runs elsewhere
    its pod fields, its templateDefaults and its podSpecPatch (workflow/util/merge.go,
    JoinWorkflowSpec: the Workflow's spec over the template's): those are judged as a partial
    pod of their own, whose containers are templateDefaults'."""
    props = _argo_defaulted(props, workflow)
    pods = _found(kind, props, paths)
    if not pods:
        inherited = PodPath(
            (*workflow, "templateDefaults"),
            inline=True,
            partial=True,
            containers=_ARGO_CONTAINERS,
            inherits=workflow,
        )
        pods = _found(kind, props, [inherited]) or [
            Pod(kind, props, workflow, partial=True, inline=True)
        ]
    # The artifact-GC pod takes the workflow-level artifactGC's podSpecPatch (argo-workflows
    # v4.1.2 workflow/controller/artifact_gc.go, createArtifactGCPod); an artifact's own
    # artifactGC has none.
    patched = [
        *(pod.path for pod in pods if pod.path != workflow),
        workflow,
        (*workflow, "artifactGC"),
    ]
    patches = [p for path in patched if (p := _argo_patch(kind, props, path)) is not None]
    return pods + patches + _argo_resources(kind, props, workflow)


_UNREAD_PATCH = (
    "is not a literal PodSpec: it holds {{...}} expressions, or is neither JSON nor YAML. Argo "
    "substitutes the expressions when it builds the pod, after every policy has run, and a "
    "parameter's quotes come out unescaped in the patch, so even an expression in a value can "
    "set any field (privileged containers, host paths, GPUs), which is never judged. Fix: "
    "write it as a literal JSON or YAML PodSpec without expressions, or set those fields on "
    "the template itself, where an expression stays a value"
)


def _argo_resources(kind: str, props: Mapping[str, Any], workflow: tuple[str, ...]) -> list[Pod]:
    """The pods of the objects each `resource` template creates or changes
    (`argo.resource_manifests`), as the pack judges those objects declared on their own, in the
    namespace they land in, at their place in the manifest (`manifest[0]`, its first
    document); a template whose objects cannot be read is one unread pod."""
    pods = []
    for template in expand(props, (*workflow, "templates", "*", "resource")):
        try:
            found = argo.resource_manifests(mapping(props, *template) or {})
        except UnknownValueError as unknown:
            # Read, and skipped, by each check.
            unknown_props = argo.placed(props, template, unknown.unknown_type_sentinel)
            pods.append(Pod(kind, unknown_props, template, partial=True, inline=True))
            continue
        if isinstance(found, str):
            unread = Pod(kind, {}, template, partial=True, inline=True, unread=found)
            pods.append(replace(unread, own_namespace=True))
            continue
        for manifest in found:
            where = (*template, "manifest", *manifest.steps)
            for pod in pods_of(manifest.resource_type, manifest.props):
                pods.append(_moved(pod, props, where, manifest.namespace))
    return pods


def _moved(
    pod: Pod, props: Mapping[str, Any], where: tuple[Step, ...], namespace: str | None
) -> Pod:
    """`pod`, of an object at `where` in `props`, as a pod of `props`: its paths from there."""

    def under(path: tuple[Step, ...]) -> tuple[Step, ...]:
        return (*where, *path)

    return replace(
        pod,
        props=argo.placed(props, where, pod.props),
        path=under(pod.path),
        inherits=None if pod.inherits is None else under(pod.inherits),
        added=tuple(c if c.root is None else replace(c, root=under(c.root)) for c in pod.added),
        own_namespace=namespace is not None or pod.own_namespace,
        namespace=namespace if namespace is not None else pod.namespace,
    )


def _argo_defaulted(props: Mapping[str, Any], workflow: tuple[str, ...]) -> Mapping[str, Any]:
    """`props` with each template of the workflow under its `templateDefaults`; each template
    not known yet where the defaults are not (at preview), so that each check skips it."""
    templates: Any = None
    try:
        templates = value_at(props, *workflow, "templates")
        if not is_list(templates):
            return props
        defaults = mapping(props, *workflow, "templateDefaults")
        if not defaults:
            return props
        defaulted = [
            argo.with_defaults(defaults, argo.read(templates, i)) for i in range(len(templates))
        ]
    except UnknownValueError as unknown:
        if not is_list(templates):
            return props
        defaulted = [unknown.unknown_type_sentinel] * len(templates)
    return argo.placed(props, (*workflow, "templates"), defaulted)


def _argo_patch(kind: str, props: Mapping[str, Any], holder: tuple[Step, ...]) -> Pod | None:
    """The partial pod of the podSpecPatch at `holder` (a template, the workflow), if any."""
    path = (*holder, "podSpecPatch")
    try:
        patch = text(props, *path)
    except UnknownValueError as unknown:
        # Read, and skipped, by each check.
        return Pod(
            kind,
            argo.placed(props, path, unknown.unknown_type_sentinel),
            path,
            partial=True,
            inline=True,
        )
    if patch is None:
        return None
    parsed = None if argo.EXPRESSION in patch else argo.parsed_patch(patch)
    if parsed is None:
        return Pod(kind, {}, path, partial=True, inline=True, unread=_UNREAD_PATCH)
    return Pod(kind, argo.placed(props, path, parsed), path, partial=True, inline=True)


def found_pods(props: Mapping[str, Any], where: PodPath) -> list[tuple[Step, ...]]:
    """The paths of the pods `where` finds in `props`: a container template only where one of
    its container paths finds a container."""
    return [
        found
        for found in expand(props, where.steps)
        if not where.containers or _own_containers(props, found, where.containers)
    ]


def _own_containers(
    props: Mapping[str, Any], template: tuple[Step, ...], patterns: tuple[tuple[str, ...], ...]
) -> tuple[Container, ...]:
    """The containers a template runs of its own fields (`PodPath.containers`)."""
    found = []
    for pattern in patterns:
        for root in expand(props, (*template, *pattern)):
            container: Any
            try:
                container = value_at(props, *root)
            except UnknownValueError as unknown:
                container = unknown.unknown_type_sentinel
            found.append(Container("containers", -1, container, root=root))
    return tuple(found)


def pod_paths(group: str, kind: str) -> tuple[PodPath, ...] | None:
    """Where a custom kind keeps its pods: the stack's own entry, else the pack's."""
    return CUSTOM_KINDS.get((group, kind)) or GPU_WORKLOAD_CRDS.get((group, kind))


def _ray_autoscaler(props: Mapping[str, Any], cluster: tuple[str, ...]) -> tuple[Container, ...]:
    """The autoscaler container KubeRay adds to the head pod when `enableInTreeAutoscaling` is
    true (ray-project/kuberay v1.7.0 ray-operator/controllers/ray/common/pod.go:
    BuildAutoscalerContainer, then mergeAutoscalerOverrides copies `autoscalerOptions`' image,
    resources, env, volume mounts and securityContext into it, or leaves it none)."""
    options: Any
    try:
        if flag(props, *cluster, "enableInTreeAutoscaling") is not True:
            return ()
        options = mapping(props, *cluster, "autoscalerOptions") or {}
    except UnknownValueError as unknown:
        options = unknown.unknown_type_sentinel
    root = (*cluster, "autoscalerOptions")
    return (Container("containers", -1, options, root=root, fixed_name="autoscaler"),)


_TRAINER = ("spec", "trainer")


def trainer_overrides(resource_type: str, props: Mapping[str, Any]) -> list[Pod]:
    """A TrainJob's `spec.trainer`, as the training container it overrides: its runtime's
    `node` container takes the trainer's image, command and args, and the GPUs of
    `resourcesPerNode` (kubeflow/trainer v2.3.0 pkg/runtime/framework/plugins/jobset/builder.go,
    Builder.Trainer; pkg/runtime/core/trainingruntime.go merges resourcesPerNode into that
    container's resources). Only a GPU count and an image can be judged from it: the rest of the
    pod (node selection, tolerations, security contexts) is the runtime's, judged there."""
    if api_group_and_kind(resource_type) != ("trainer.kubeflow.org", "TrainJob"):
        return []
    trainer: Any
    try:
        trainer = mapping(props, *_TRAINER)
    except UnknownValueError as unknown:
        trainer = unknown.unknown_type_sentinel
    if trainer is None:
        return []
    node = Container(
        "containers",
        -1,
        trainer,
        root=_TRAINER,
        fixed_name="node",
        resources_key="resourcesPerNode",
    )
    return [Pod("TrainJob", props, _TRAINER, inline=True, added=(node,))]


def _dynamo_mains(
    kind: str, props: Mapping[str, Any], pods: list[Pod], patch: bool = False
) -> list[Pod]:
    """`pods` with each v1alpha1 Dynamo component's pod as the operator builds it
    (ai-dynamo/dynamo at 57ffc64 deploy/operator/api/v1alpha1/shared_spec_conversion.go,
    buildSharedPodTemplateFromAlpha): `extraPodSpec`'s own fields, the main container
    (`_dynamo_main`) in place of any container of the list named `main`, the others, and the
    `frontendSidecar`; and that pod, of no fields of its own, where the component sets no
    `extraPodSpec` but asks for resources or a frontend sidecar. Each pod's labels and
    annotations are the component's `extraPodMetadata` (buildBasePodTemplate). A patch's pods
    carry only what it sets, and keep their own containers."""
    built = {}
    for component in expand(props, DYNAMO_COMPONENTS[kind]):
        main = _dynamo_main(props, component)
        added = (*(() if main is None else (main,)), *_dynamo_sidecar(props, component))
        if added:
            built[(*component, "extraPodSpec")] = added
    replaced = None if patch else _DYNAMO_MAIN
    pods = [
        replace(
            p,
            added=built.pop(p.path, ()),
            replaced=replaced,
            metadata_path=(*p.path[:-1], "extraPodMetadata"),
        )
        if p.path[-1:] == ("extraPodSpec",)
        else p
        for p in pods
    ]
    return pods + [
        Pod(
            kind,
            props,
            path,
            partial=patch,
            inline=True,
            added=added,
            metadata_path=(*path[:-1], "extraPodMetadata"),
        )
        for path, added in built.items()
    ]


# shared_spec_conversion.go at 57ffc64: mainContainerName and appendFrontendSidecar's
# defaultFrontendSidecarContainerName, a container of the frontend sidecar's image, args and env.
_DYNAMO_MAIN = "main"
_DYNAMO_SIDECAR = "sidecar-frontend"


def _dynamo_sidecar(props: Mapping[str, Any], component: tuple[Step, ...]) -> tuple[Container, ...]:
    """The frontend sidecar the operator adds, unless extraPodSpec's containers already hold
    one of its name (appendFrontendSidecar returns early then, and that declared container is
    the pod's). Dynamo's validating webhook refuses that pairing
    (deploy/operator/internal/webhook/validation/shared.go at 015d780,
    validateFrontendSidecar), so it is reached only where the webhook is not asked (its
    failurePolicy Ignore while it is down, a namespace its namespaceSelector leaves out). So a
    v1alpha1 frontend sidecar, which FrontendSidecarSpec gives no securityContext, cannot meet
    restricted; the v1beta1 form can (its `frontendSidecar` names a podTemplate container)."""
    root = (*component, "frontendSidecar")
    note = (
        "frontendSidecar has no securityContext, so it cannot meet restricted. Write the "
        "component as nvidia.com/v1beta1, where frontendSidecar names a podTemplate "
        "container that carries one"
    )
    try:
        sidecar = mapping(props, *root)
        if sidecar is None:
            return ()
        containers = elements(props, *component, "extraPodSpec", "containers")
        if any(text(c, "name") == _DYNAMO_SIDECAR for c in containers if isinstance(c, Mapping)):
            return ()
        fields = {"image": "image", "args": "args", "env": "envs"}
        own = {key: sidecar[field] for key, field in fields.items() if field in sidecar}
        container: Any = {"name": _DYNAMO_SIDECAR, **own}
    except UnknownValueError as unknown:
        container = unknown.unknown_type_sentinel
    return (
        Container(
            "containers", -1, container, root=root, fixed_name=_DYNAMO_SIDECAR, fix_note=note
        ),
    )


# ai-dynamo/dynamo at 015d780 deploy/operator/internal/controller_common/resource.go
# (GetResourcesConfig, getGPUResourceName): the resource names a v1alpha1 ResourceItem's fields
# become on the main container (api/v1alpha1/common.go, ResourceItem); `gpu` is counted under
# `gpuType`, else nvidia.com/gpu, and `custom` entries pass through as named, after it.
_DYNAMO_RESOURCE_NAMES = (("cpu", "cpu"), ("memory", "memory"))
_DYNAMO_GPU = "nvidia.com/gpu"


def _dynamo_resource_list(item: Mapping[str, Any]) -> dict[str, Any]:
    found = {name: item[field] for field, name in _DYNAMO_RESOURCE_NAMES if item.get(field)}
    if item.get("gpu"):
        found[text(item, "gpuType") or _DYNAMO_GPU] = item["gpu"]
    return found | dict(mapping(item, "custom") or {})


# shared_spec_conversion.go at 57ffc64, buildMainContainerFromDedicated: the component's own
# fields the main container is built from, beside its resources.
_DYNAMO_PROBES = ("livenessProbe", "readinessProbe")


def _dynamo_dedicated(props: Mapping[str, Any], component: tuple[Step, ...]) -> dict[str, Any]:
    """The main container's fields from the component's `envs`, `envFromSecret`, probes and
    `volumeMounts` (each a name and a `mountPoint`), as buildMainContainerFromDedicated sets
    them."""
    found: dict[str, Any] = {}
    envs = elements(props, *component, "envs")
    if envs:
        found["env"] = envs
    secret = text(props, *component, "envFromSecret")
    if secret:
        found["envFrom"] = [{"secretRef": {"name": secret}}]
    for probe in _DYNAMO_PROBES:
        if mapping(props, *component, probe) is not None:
            found[probe] = value_at(props, *component, probe)
    mounts = [
        {"name": value_at(m, "name"), "mountPath": value_at(m, "mountPoint")}
        for m in elements(props, *component, "volumeMounts")
        if isinstance(m, Mapping)
    ]
    if mounts:
        found["volumeMounts"] = mounts
    return found


def _dynamo_main(props: Mapping[str, Any], component: tuple[Step, ...]) -> Container | None:
    """A v1alpha1 Dynamo component's main container as the operator builds it: the
    component's `resources` as resource lists and its own env, probes and volume mounts
    (`_dynamo_dedicated`), with `extraPodSpec.mainContainer` merged over them
    (shared_spec_conversion.go at 57ffc64, mergeExtraPodSpecMainContainer: `_overridden`, so
    its own fields and resource entries win, its env is added after the component's, and a
    probe set on both sides is the two merged field by field). None where the component sets
    none of them and no `extraPodMetadata`, which alone gets the pod a bare main container
    (hasPodTemplateContent counts ExtraPodMetadata)."""
    root = (*component, "extraPodSpec", "mainContainer")
    lent: tuple[tuple[Step, ...], ...] = ()
    try:
        main = mapping(props, *root)
        asked = mapping(props, *component, "resources")
        dedicated = _dynamo_dedicated(props, component)
        metadata = mapping(props, *component, "extraPodMetadata")
        if main is None and asked is None and not dedicated and metadata is None:
            return None
        main, asked = main or {}, asked or {}
        own_env = elements(main, "env")
        merged, kept = _overridden(dedicated, main)
        if own_env and "env" in dedicated:
            merged["env"] = [*dedicated["env"], *own_env]
        # The component's other fields are renamed on the way (envs, envFromSecret, a
        # volume mount's mountPoint), so only its probes are named where it holds them.
        lent = tuple(path for path in kept if path[0] in _DYNAMO_PROBES)
        own = mapping(main, "resources") or {}
        resources = dict(own)
        for section in ("limits", "requests"):
            listed = _dynamo_resource_list(mapping(asked, section) or {})
            listed |= mapping(own, section) or {}
            if listed:
                resources[section] = listed
        container: Any = {**merged, "resources": resources}
    except UnknownValueError as unknown:
        container = unknown.unknown_type_sentinel
    return Container("containers", -1, container, root=root, lent=lent, lender=component)


def _overridden(
    base: Mapping[str, Any], over: Mapping[str, Any], at: tuple[Step, ...] = ()
) -> tuple[dict[str, Any], list[tuple[Step, ...]]]:
    """`over` merged over `base` as mergo.Merge(dst, src, WithOverride) merges two Go structs
    (imdario/mergo v0.3.16, the version ai-dynamo/dynamo's deploy/operator/go.mod pins,
    merge.go deepMerge): a mapping on both sides (a struct, or a pointer to one) is merged key
    by key; any other value of `over` wins unless empty (zero, "", false, an empty list), which
    leaves `base`'s. And the paths of what is left from `base`, each with all it holds. (A port
    is one value here; mergo merges an IntOrString's fields, but no check reads ports.)"""
    merged = dict(base)
    kept = {(*at, key): None for key in base}
    for key, value in entries(over):
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key], inner = _overridden(merged[key], value, (*at, key))
            del kept[(*at, key)]
            kept |= dict.fromkeys(inner)
        elif isinstance(value, Mapping) or not _mergo_empty(value):
            merged[key] = value
            kept.pop((*at, key), None)
    return merged, list(kept)


def _mergo_empty(value: Any) -> bool:
    # mergo.go isEmptyValue, on the values a JSON property can hold.
    if is_list(value):
        return len(value) == 0
    return (
        value is None
        or value is False
        or value == ""
        or (type(value) in (int, float) and value == 0)
    )


# kserve/kserve v0.20.0 pkg/apis/serving/v1beta1/predictor.go (PredictorSpec) and explainer.go
# (ExplainerSpec): the fields naming a component's server, each a corev1.Container inline
# (PredictorExtensionSpec, ExplainerExtensionSpec) that KServe turns into the pod's
# `kserve-container` (constants.InferenceServiceContainerName), beside the PodSpec's containers.
_KSERVE_SERVERS: Mapping[tuple[str, ...], tuple[str, ...]] = {
    ("spec", "predictor"): (
        "sklearn",
        "xgboost",
        "tensorflow",
        "pytorch",
        "triton",
        "onnx",
        "huggingface",
        "pmml",
        "lightgbm",
        "paddle",
        "model",
    ),
    ("spec", "explainer"): ("art",),
}


_KSERVE = "kserve-container"


def _kserve_servers(props: Mapping[str, Any], component: tuple[Step, ...]) -> tuple[Container, ...]:
    """The model or explanation server a KServe component names outside its pod spec. A
    component not known yet (at preview) is one pod not known, which its checks skip alone."""
    try:
        named = set(keys(props, *component))
    except UnknownValueError:
        return ()
    servers = []
    for field in _KSERVE_SERVERS[tuple(map(str, component))]:
        if field not in named:
            continue
        server: Any
        try:
            server = value_at(props, *component, field)
        except UnknownValueError as unknown:
            server = unknown.unknown_type_sentinel
        root = (*component, field)
        servers.append(Container("containers", -1, server, root=root, fixed_name=_KSERVE))
    return tuple(servers)


# The API groups of the built-in pod kinds (`core` for Pod and PodTemplate).
_CORE_GROUPS = ("core", "apps", "batch", "extensions")

CUSTOM_KINDS: dict[tuple[str, str], tuple[PodPath, ...]] = {}
"""The stack's own (API group, kind) -> where its pods are, from `gpu-workload-kinds`' config."""


EXAMPLE_PATHS = {
    "podTemplates": '["spec.workers.*.template"]',
    "podSpecs": '["spec.predictor"]',
    "containerTemplates": '{"spec.steps.*": ["container", "sidecars.*"]}',
}
_WHAT = {
    "podTemplates": "a list of dotted paths to its pod templates",
    "podSpecs": "a list of dotted paths to its inline pod specs",
    "containerTemplates": "a map of dotted paths to its templates, each to a list of dotted "
    "paths (from the template) to the containers it runs",
}


def _dotted(paths: Any) -> tuple[tuple[str, ...], ...] | None:
    """The patterns of a non-empty list of dotted paths, or None for anything else."""
    valid = (
        isinstance(paths, list)
        and paths
        and all(isinstance(p, str) and p and "" not in p.split(".") for p in paths)
    )
    return tuple(tuple(p.split(".")) for p in paths) if valid else None


def _pod_paths_of(setting: str, value: Any) -> tuple[PodPath, ...] | None:
    """Where a config entry of `setting` says a kind keeps its pods, or None when it cannot be
    read."""
    if setting != "containerTemplates":
        patterns = _dotted(value)
        inline = setting == "podSpecs"
        return None if patterns is None else tuple(PodPath(p, inline=inline) for p in patterns)
    if not isinstance(value, dict) or not value:
        return None
    found = []
    for template, containers in value.items():
        steps, patterns = _dotted([template]), _dotted(containers)
        if steps is None or patterns is None:
            return None
        found.append(PodPath(steps[0], inline=True, containers=patterns))
    return tuple(found)


def custom_kinds_from(
    settings: Mapping[str, Mapping[str, Any]],
) -> tuple[dict[tuple[str, str], tuple[PodPath, ...]], list[str]]:
    """(API group, kind) -> where its pods are, from each setting of `gpu-workload-kinds`
    (`podTemplates`, `podSpecs`, `containerTemplates`: `{"<group>/<Kind>": <paths>}`), and a
    problem for each entry that cannot be read."""
    kinds: dict[tuple[str, str], tuple[PodPath, ...]] = {}
    problems = []
    for setting, described in settings.items():
        for name, value in described.items():
            group, slash, kind = str(name).rpartition("/")
            found = _pod_paths_of(setting, value)
            if not slash or not group or not kind or group in _CORE_GROUPS:
                problems.append(
                    f'{setting}: "{name}" is not an API group and kind of a custom resource, '
                    'such as "example.com/TrainingRun"'
                )
            elif found is None:
                problems.append(
                    f'{setting}: "{name}" needs {_WHAT[setting]}, such as '
                    f"{EXAMPLE_PATHS[setting]}, not " + json.dumps(value)
                )
            else:
                kinds[(group, kind)] = kinds.get((group, kind), ()) + found
    return kinds, problems


def expand(props: Mapping[str, Any], pattern: tuple[Step, ...]) -> list[tuple[Step, ...]]:
    """The concrete paths `pattern` names in `props` that lead to a pod template (a mapping).

    Where a value on the way is not known yet (at preview), the path is kept as far as it
    goes, with the rest of the pattern: reading that pod raises, so each check skips it alone
    and still judges the resource's other pod templates."""
    found: list[tuple[Step, ...]] = [()]
    unknown: list[tuple[Step, ...]] = []
    for depth, step in enumerate(pattern):
        next_found: list[tuple[Step, ...]] = []
        for path in found:
            try:
                if step != "*":
                    next_found.append((*path, step))
                elif (items := mapping(props, *path)) is not None:
                    next_found += [(*path, key) for key in items]
                elif is_list(items := value_at(props, *path)):
                    # By index, not by reading each: one element not known yet is one pod.
                    next_found += [(*path, i) for i in range(len(items))]
            except UnknownValueError:
                unknown.append((*path, *pattern[depth:]))
        found = next_found
    return [path for path in found if _may_be_template(props, path)] + unknown


def _may_be_template(props: Mapping[str, Any], path: tuple[Step, ...]) -> bool:
    """A mapping at `path`, or a value on the way there not known yet."""
    try:
        return mapping(props, *path) is not None
    except UnknownValueError:
        return True


def namespace_or_default(namespace: str | None, provider: Any) -> str:
    """The namespace an object lands in: its own, else its Kubernetes provider's default
    namespace, else `default`. `provider` is the policy SDK's view of the resource's provider."""
    if namespace:
        return namespace
    if provider is not None and provider.resource_type == "pulumi:providers:kubernetes":
        namespace = text(provider.props, "namespace")
    return namespace or "default"
