"""GPU workloads that arrive as custom resources (KubeRay, Kubeflow, JobSet, LeaderWorkerSet)
are checked pod template by pod template, as the built-in kinds are."""

import json
from typing import Any

import pytest

from tests.gpu_platform.policy_pack.builders import (
    UNKNOWN,
    Analyze,
    gpu_pod_spec,
    messages,
    namespace,
    resource,
    restricted_pod_spec,
)
from tests.repository import ROOT


def privileged_spec() -> dict[str, Any]:
    spec = restricted_pod_spec()
    spec["containers"][0]["securityContext"]["privileged"] = True
    return spec


def template(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {}, "spec": spec}


def ray_cluster(worker: dict[str, Any]) -> dict[str, Any]:
    return {
        "headGroupSpec": {"template": template(restricted_pod_spec())},
        "workerGroupSpecs": [
            {"groupName": "cpu", "template": template(restricted_pod_spec())},
            {"groupName": "gpu", "template": template(worker)},
        ],
    }


def training_runtime(node: dict[str, Any]) -> dict[str, Any]:
    """A Trainer v2 runtime: an initializer Job and the training nodes' Job."""
    jobs = [
        {
            "name": "dataset-initializer",
            "template": {"spec": {"template": template(restricted_pod_spec())}},
        },
        {"name": "node", "template": {"spec": {"template": template(node)}}},
    ]
    return {
        "mlPolicy": {"numNodes": 2, "torch": {}},
        "template": {"spec": {"replicatedJobs": jobs}},
    }


# (type token, spec holding the privileged pod, where that pod's spec is in the resource)
CARRIERS = {
    "RayCluster": (
        "kubernetes:ray.io/v1:RayCluster",
        lambda pod: ray_cluster(pod),
        "spec.workerGroupSpecs[1].template.spec",
    ),
    "RayJob": (
        "kubernetes:ray.io/v1:RayJob",
        lambda pod: {"entrypoint": "python train.py", "rayClusterSpec": ray_cluster(pod)},
        "spec.rayClusterSpec.workerGroupSpecs[1].template.spec",
    ),
    "RayService": (
        "kubernetes:ray.io/v1:RayService",
        lambda pod: {"rayClusterConfig": ray_cluster(pod)},
        "spec.rayClusterConfig.workerGroupSpecs[1].template.spec",
    ),
    # ray-project/kuberay v1.7.0 ray-operator/apis/ray/v1/raycronjob_types.go:
    # RayCronJobSpec.jobTemplate is a RayJobSpec.
    "RayCronJob": (
        "kubernetes:ray.io/v1:RayCronJob",
        lambda pod: {
            "schedule": "0 3 * * *",
            "jobTemplate": {"entrypoint": "python train.py", "rayClusterSpec": ray_cluster(pod)},
        },
        "spec.jobTemplate.rayClusterSpec.workerGroupSpecs[1].template.spec",
    ),
    # kubeflow/trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainingruntime_types.go:
    # TrainingRuntimeSpec.template is a JobSetTemplateSpec.
    "TrainingRuntime": (
        "kubernetes:trainer.kubeflow.org/v1alpha1:TrainingRuntime",
        lambda pod: training_runtime(pod),
        "spec.template.spec.replicatedJobs[1].template.spec.template.spec",
    ),
    "ClusterTrainingRuntime": (
        "kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime",
        lambda pod: training_runtime(pod),
        "spec.template.spec.replicatedJobs[1].template.spec.template.spec",
    ),
    "PyTorchJob": (
        "kubernetes:kubeflow.org/v1:PyTorchJob",
        lambda pod: {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template(restricted_pod_spec())},
                "Worker": {"replicas": 3, "template": template(pod)},
            }
        },
        "spec.pytorchReplicaSpecs.Worker.template.spec",
    ),
    # kubeflow/training-operator v1 pkg/apis/kubeflow.org/v1/paddlepaddle_types.go:
    # PaddleJobSpec.paddleReplicaSpecs, a map of replica type to ReplicaSpec.
    "PaddleJob": (
        "kubernetes:kubeflow.org/v1:PaddleJob",
        lambda pod: {
            "paddleReplicaSpecs": {
                "Master": {"replicas": 1, "template": template(restricted_pod_spec())},
                "Worker": {"replicas": 2, "template": template(pod)},
            }
        },
        "spec.paddleReplicaSpecs.Worker.template.spec",
    ),
    # volcano-sh/volcano v1.15.1 staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/job.go:
    # JobSpec.tasks[].template, a PodTemplateSpec.
    "VolcanoJob": (
        "kubernetes:batch.volcano.sh/v1alpha1:Job",
        lambda pod: {
            "minAvailable": 2,
            "tasks": [
                {"name": "ps", "replicas": 1, "template": template(restricted_pod_spec())},
                {"name": "worker", "replicas": 2, "template": template(pod)},
            ],
        },
        "spec.tasks[1].template.spec",
    ),
    # kserve/kserve v0.20.0 pkg/apis/serving/v1beta1/inference_service.go and predictor.go:
    # InferenceServiceSpec.predictor inlines a PodSpec (PredictorSpec.PodSpec `json:",inline"`).
    "InferenceService": (
        "kubernetes:serving.kserve.io/v1beta1:InferenceService",
        lambda pod: {"predictor": pod},
        "spec.predictor",
    ),
    # predictor.go: WorkerSpec (multi-node, multi-GPU serving) inlines a PodSpec too.
    "InferenceServiceWorkers": (
        "kubernetes:serving.kserve.io/v1beta1:InferenceService",
        lambda pod: {"predictor": {**restricted_pod_spec(), "workerSpec": pod}},
        "spec.predictor.workerSpec",
    ),
    "JobSet": (
        "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet",
        lambda pod: {
            "replicatedJobs": [
                {"name": "workers", "template": {"spec": {"template": template(pod)}}}
            ]
        },
        "spec.replicatedJobs[0].template.spec.template.spec",
    ),
    "LeaderWorkerSet": (
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        lambda pod: {
            "leaderWorkerTemplate": {
                "leaderTemplate": template(restricted_pod_spec()),
                "workerTemplate": template(pod),
            }
        },
        "spec.leaderWorkerTemplate.workerTemplate.spec",
    ),
    # kserve/kserve v0.20.0 pkg/apis/serving/v1alpha1/llm_inference_service_types.go:
    # WorkloadSpec.template and .worker are PodSpecs, inlined in the spec and in `prefill`.
    "LLMInferenceService": (
        "kubernetes:serving.kserve.io/v1alpha1:LLMInferenceService",
        lambda pod: {"model": {"uri": "hf://org/model"}, "template": pod},
        "spec.template",
    ),
    "LLMInferenceServicePrefillWorkers": (
        "kubernetes:serving.kserve.io/v1alpha1:LLMInferenceService",
        lambda pod: {
            "model": {"uri": "hf://org/model"},
            "template": restricted_pod_spec(),
            "prefill": {"template": restricted_pod_spec(), "worker": pod},
        },
        "spec.prefill.worker",
    ),
    # kubeflow/kubeflow components/notebook-controller/api/v1/notebook_types.go:
    # NotebookSpec.template.spec is a PodSpec.
    "Notebook": (
        "kubernetes:kubeflow.org/v1:Notebook",
        lambda pod: {"template": {"spec": pod}},
        "spec.template.spec",
    ),
    # SeldonIO/seldon-core operator/apis/machinelearning.seldon.io/v1/
    # seldondeployment_types.go: PredictorSpec.componentSpecs[] are SeldonPodSpecs of a
    # PodSpec at `spec`.
    "SeldonDeployment": (
        "kubernetes:machinelearning.seldon.io/v1:SeldonDeployment",
        lambda pod: {
            "predictors": [
                {"name": "default", "graph": {"name": "model"}, "componentSpecs": [template(pod)]}
            ]
        },
        "spec.predictors[0].componentSpecs[0].spec",
    ),
    # ai-dynamo/dynamo at 015d780 deploy/operator/api/v1alpha1/dynamographdeployment_types.go:
    # spec.services is a map of component specs, each with `extraPodSpec`, a PodSpec inline
    # beside `mainContainer` (common.go, ExtraPodSpec); v1beta1/
    # dynamocomponentdeployment_types.go: a component's `podTemplate` is a PodTemplateSpec, and
    # a DynamoGraphDeployment's components are a list at spec.components.
    "DynamoGraphDeployment": (
        "kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment",
        lambda pod: {
            "backendFramework": "vllm",
            "services": {
                "Frontend": {"componentType": "frontend", "replicas": 1},
                "VllmWorker": {"componentType": "worker", "extraPodSpec": pod},
            },
        },
        "spec.services.VllmWorker.extraPodSpec",
    ),
    "DynamoGraphDeploymentV1beta1": (
        "kubernetes:nvidia.com/v1beta1:DynamoGraphDeployment",
        lambda pod: {
            "backendFramework": "vllm",
            "components": [{"name": "worker", "type": "worker", "podTemplate": template(pod)}],
        },
        "spec.components[0].podTemplate.spec",
    ),
    "DynamoComponentDeployment": (
        "kubernetes:nvidia.com/v1beta1:DynamoComponentDeployment",
        lambda pod: {"backendFramework": "vllm", "type": "worker", "podTemplate": template(pod)},
        "spec.podTemplate.spec",
    ),
    # v1alpha1/dynamocomponentdeployment_types.go: a component deployment's spec is one
    # component's (DynamoComponentDeploymentSharedSpec inline), its `extraPodSpec` at spec.
    "DynamoComponentDeploymentV1alpha1": (
        "kubernetes:nvidia.com/v1alpha1:DynamoComponentDeployment",
        lambda pod: {"backendFramework": "vllm", "componentType": "worker", "extraPodSpec": pod},
        "spec.extraPodSpec",
    ),
    # argoproj/argo-workflows v4.1.2 pkg/apis/workflow/v1alpha1/workflow_types.go: a
    # Template runs one `container` beside the pod's other fields, which it holds itself.
    "ArgoWorkflow": (
        "kubernetes:argoproj.io/v1alpha1:Workflow",
        lambda pod: {"entrypoint": "train", "templates": [argo_step(pod)]},
        "spec.templates[0]",
    ),
    # cron_workflow_types.go: CronWorkflowSpec.workflowSpec is a WorkflowSpec.
    "ArgoCronWorkflow": (
        "kubernetes:argoproj.io/v1alpha1:CronWorkflow",
        lambda pod: {
            "schedules": ["0 3 * * *"],
            "workflowSpec": {"entrypoint": "train", "templates": [argo_step(pod)]},
        },
        "spec.workflowSpec.templates[0]",
    ),
}
ARGO_KINDS = ("ArgoWorkflow", "ArgoCronWorkflow")


def argo_step(pod: dict[str, Any]) -> dict[str, Any]:
    """An Argo template running the pod spec's one container as its `container`."""
    (container,) = pod["containers"]
    return {
        "name": "train",
        **{k: v for k, v in pod.items() if k != "containers"},
        "container": container,
    }


def container_at(kind: str) -> str:
    """Where the carrier's container is in the resource."""
    where = CARRIERS[kind][2]
    return f"{where}.container" if kind in ARGO_KINDS else f"{where}.containers[0]"


def carrier(kind: str, pod: dict[str, Any]) -> Any:
    type_, spec_for, _ = CARRIERS[kind]
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec_for(pod)}
    return resource(type_, "train", inputs)


@pytest.mark.parametrize("kind", CARRIERS)
def test_a_privileged_pod_in_a_gpu_workload_crd_is_refused(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), carrier(kind, privileged_spec()))

    (message,) = messages(verdicts, "pod-security-standards")
    assert message.startswith(
        f'privileged: container "app" sets {container_at(kind)}.securityContext.privileged=true.'
    )


@pytest.mark.parametrize("kind", CARRIERS)
def test_a_gpu_pod_in_a_gpu_workload_crd_meets_the_gpu_rules(analyze: Analyze, kind: str) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "registry.example.com/train:latest"

    verdicts = analyze(namespace(), carrier(kind, spec))

    (message,) = messages(verdicts, "gpu-pods-pinned-images")
    assert f"({container_at(kind)}.image)" in message


@pytest.mark.parametrize("kind", CARRIERS)
def test_a_host_path_in_a_gpu_workload_crd_is_refused(analyze: Analyze, kind: str) -> None:
    spec = restricted_pod_spec()
    spec["volumes"] = [{"name": "host", "hostPath": {"path": "/"}}]

    verdicts = analyze(namespace(level="baseline"), carrier(kind, spec))

    assert messages(verdicts, "pod-security-standards") == [
        f'hostPath volumes: volume "host" mounts the node\'s filesystem '
        f"({CARRIERS[kind][2]}.volumes[0].hostPath). Fix: use a persistentVolumeClaim, emptyDir "
        "or another volume type instead of hostPath. [Pod Security baseline v1.35, from "
        'namespace "team-a"]'
    ]


@pytest.mark.parametrize("kind", CARRIERS)
def test_a_gpu_workload_crd_asking_more_gpus_than_allowed_is_refused(
    analyze: Analyze, kind: str
) -> None:
    verdicts = analyze(namespace(), carrier(kind, gpu_pod_spec("9")))

    assert messages(verdicts, "gpu-pods-max-gpus") == [
        f"the pod ({CARRIERS[kind][2]}) asks for 9 GPUs, more than the 8 allowed per pod "
        "(maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a node really has "
        "that many."
    ]


def test_a_kind_of_the_same_name_in_another_group_is_not_read_as_one(analyze: Analyze) -> None:
    lookalike = resource(
        "kubernetes:example.com/v1:RayCluster",
        "train",
        {"metadata": {"namespace": "team-a"}, "spec": ray_cluster(privileged_spec())},
    )

    assert messages(analyze(namespace(), lookalike), "pod-security-standards") == []


@pytest.mark.parametrize(
    "kind",
    [
        "DynamoGraphDeployment",
        "DynamoGraphDeploymentV1beta1",
        "DynamoComponentDeployment",
        "DynamoComponentDeploymentV1alpha1",
    ],
)
def test_a_plain_dynamo_deployment_passes(analyze: Analyze, kind: str) -> None:
    verdicts = analyze(namespace(), carrier(kind, gpu_pod_spec()))

    assert [(v.policy_name, v.message) for v in verdicts if v.mandatory] == []


def test_a_privileged_dynamo_main_container_is_refused(analyze: Analyze) -> None:
    # v1alpha1 common.go: ExtraPodSpec.mainContainer, merged into the component's main
    # container, beside the PodSpec's own fields (here none).
    main = {"securityContext": {"privileged": True}}
    graph = carrier("DynamoGraphDeployment", {"mainContainer": main})

    found = messages(analyze(namespace(), graph), "pod-security-standards")
    assert [m for m in found if m.startswith("privileged")] == [
        'privileged: container "mainContainer" sets '
        "spec.services.VllmWorker.extraPodSpec.mainContainer.securityContext.privileged=true. "
        "Fix: remove privileged or set it to false. "
        '[Pod Security restricted v1.35, from namespace "team-a"]'
    ]


# --- NVIDIA Dynamo v1alpha1: the resources a component asks for in its own spec -------------

DYNAMO_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0"


def dynamo_worker(resources: dict[str, Any], extra_pod_spec: dict[str, Any] | None) -> Any:
    """A v1alpha1 graph whose worker asks for `resources` in its own spec (common.go,
    Resources of ResourceItems: cpu, memory, gpu, gpuType, custom)."""
    worker: dict[str, Any] = {"componentType": "worker", "resources": resources}
    if extra_pod_spec is not None:
        worker["extraPodSpec"] = extra_pod_spec
    inputs = {
        "metadata": {"name": "llm", "namespace": "team-a"},
        "spec": {"backendFramework": "vllm", "services": {"VllmWorker": worker}},
    }
    return resource("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeployment", "llm", inputs)


def test_a_dynamo_component_asking_for_64_gpus_is_refused_in_prod(analyze: Analyze) -> None:
    # ai-dynamo/dynamo at 015d780 deploy/operator/internal/controller_common/resource.go,
    # GetResourcesConfig: `limits.gpu` becomes the main container's nvidia.com/gpu limit
    # (getGPUResourceName, without gpuType).
    prod = json.loads((ROOT / "policy-config" / "prod.json").read_text())
    graph = dynamo_worker({"limits": {"gpu": "64"}}, {"mainContainer": {"image": DYNAMO_IMAGE}})

    verdicts = [v for v in analyze(namespace(), graph, config=prod) if v.policy_name == MAX_GPUS]

    assert [(v.enforcement_level, v.message) for v in verdicts] == [
        (
            "mandatory",
            "the pod (spec.services.VllmWorker.extraPodSpec) asks for 64 GPUs, more than the 8 "
            "allowed per pod (maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if "
            "a node really has that many.",
        )
    ]


MAX_GPUS = "gpu-pods-max-gpus"


def test_a_dynamo_components_gpu_type_names_the_resource_it_counts(analyze: Analyze) -> None:
    # resource.go, getGPUResourceName: `gpuType` names the resource `gpu` counts, so a MIG
    # slice's count meets the slices' rules.
    main = {"image": DYNAMO_IMAGE}
    asked = {"limits": {"gpu": "500m", "gpuType": "nvidia.com/mig-1g.10gb"}}
    graph = dynamo_worker(asked, {"mainContainer": main})

    assert messages(analyze(namespace(), graph), "gpu-resources-in-limits") == [
        'container "mainContainer" sets spec.services.VllmWorker.extraPodSpec.mainContainer'
        '.resources.limits["nvidia.com/mig-1g.10gb"]="500m", not a whole number of devices. '
        "Fix: ask for a whole number of GPUs (or GPU slices)."
    ]


def test_a_dynamo_component_asking_for_a_gpu_has_its_image_judged(analyze: Analyze) -> None:
    # resource.go, GetResourcesConfig: the GPU the component asks for is its main container's,
    # so that container's image is a GPU pod's.
    main = {"image": "example.com/llm:latest"}
    graph = dynamo_worker({"limits": {"gpu": "1"}}, {"mainContainer": main})

    assert messages(analyze(namespace(), graph), "gpu-pods-pinned-images") == [
        'container "mainContainer" image "example.com/llm:latest" '
        "(spec.services.VllmWorker.extraPodSpec.mainContainer.image) uses the latest tag. Fix: "
        "pin a version tag or a digest (image@sha256:...), so every node runs the same image."
    ]


def test_a_dynamo_components_custom_resources_are_counted(analyze: Analyze) -> None:
    # resource.go, GetResourcesConfig: each `custom` entry becomes a resource of its name, and
    # a component with no extraPodSpec still runs the main container the operator builds.
    graph = dynamo_worker({"limits": {"custom": {"nvidia.com/gpu": "9"}}}, None)

    assert messages(analyze(namespace(), graph), MAX_GPUS) == [
        "the pod (spec.services.VllmWorker.extraPodSpec) asks for 9 GPUs, more than the 8 "
        "allowed per pod (maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a "
        "node really has that many."
    ]


# ai-dynamo/dynamo at 57ffc64 deploy/operator/api/v1alpha1/shared_spec_conversion.go,
# buildSharedPodTemplateFromAlpha: the operator turns a v1alpha1 component into the v1beta1
# podTemplate it reconciles, extraPodSpec's own fields with a `main` container built from the
# component's resources and mainContainer merged over them, so both versions of one worker
# meet the same rules.
RESTRICTED_CONTAINER = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
RESTRICTED_POD = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
ALL_MANDATORY = {"all": "mandatory"}


def worker_in_both_versions(secure: bool) -> tuple[Any, Any]:
    """One worker asking for 1 GPU, with no node selector or toleration: as a v1alpha1
    component and as the v1beta1 component the operator converts it into."""
    main: dict[str, Any] = {"image": DYNAMO_IMAGE}
    spec: dict[str, Any] = {}
    if secure:
        main["securityContext"] = RESTRICTED_CONTAINER
        spec["securityContext"] = RESTRICTED_POD
    alpha = dynamo_worker({"limits": {"gpu": "1"}}, {**spec, "mainContainer": main})
    built = {**main, "name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    beta = carrier("DynamoGraphDeploymentV1beta1", {**spec, "containers": [built]})
    return alpha, beta


@pytest.mark.parametrize(
    ("secure", "expected"),
    [
        (True, ["gpu-pods-cuda-known", "gpu-pods-select-gpu-nodes"]),
        (False, ["gpu-pods-cuda-known", "gpu-pods-select-gpu-nodes", "pod-security-standards"]),
    ],
)
def test_a_v1alpha1_dynamo_worker_meets_the_rules_of_its_v1beta1_form(
    analyze: Analyze, secure: bool, expected: list[str]
) -> None:
    alpha, beta = worker_in_both_versions(secure)

    def refused(graph: Any) -> list[str]:
        verdicts = analyze(namespace(), graph, config=ALL_MANDATORY)
        return sorted({v.policy_name for v in verdicts if v.mandatory})

    assert refused(alpha) == refused(beta) == expected


# buildBasePodTemplate (shared_spec_conversion.go at 57ffc64): the pod's labels and
# annotations are the component's extraPodMetadata. The gpuPools are those of test_gpu_cuda.py.
CUDA_ANNOTATION = "gpu-platform.io/cuda-version"
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/main"
POOLED = {
    "all": "mandatory",
    **{
        name: {"gpuPools": {"l4": {"nvidiaDriver": "535.288.01", "cuda": "12.2"}}}
        for name in (
            "gpu-pods-cuda-within-driver",
            "gpu-pods-cuda-minor-compatibility",
            "gpu-pods-cuda-known",
        )
    },
}


def pooled_worker_in_both_versions(annotations: dict[str, str]) -> tuple[Any, Any]:
    """`worker_in_both_versions(secure=True)` on pool l4, with the pod annotations given."""
    alpha, beta = worker_in_both_versions(secure=True)
    gpu = {
        "nodeSelector": {"gpu-platform.io/pool": "l4"},
        "tolerations": gpu_pod_spec()["tolerations"],
    }
    worker = alpha.inputs["spec"]["services"]["VllmWorker"]
    worker["extraPodSpec"].update(gpu)
    worker["extraPodMetadata"] = {"annotations": annotations}
    pod = beta.inputs["spec"]["components"][0]["podTemplate"]
    pod["spec"].update(gpu)
    pod["metadata"] = {"annotations": annotations}
    return alpha, beta


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [({}, ["gpu-pods-cuda-known"]), ({CUDA_ANNOTATION: "12.2"}, [])],
)
def test_a_v1alpha1_dynamo_workers_extra_pod_metadata_states_its_cuda_release(
    analyze: Analyze, annotations: dict[str, str], expected: list[str]
) -> None:
    alpha, beta = pooled_worker_in_both_versions(annotations)

    def refused(graph: Any) -> list[str]:
        verdicts = analyze(namespace(), graph, config=POOLED)
        return sorted({v.policy_name for v in verdicts if v.mandatory})

    assert refused(alpha) == refused(beta) == expected


def test_an_unconfined_apparmor_annotation_is_refused_in_both_dynamo_versions(
    analyze: Analyze,
) -> None:
    alpha, beta = pooled_worker_in_both_versions(
        {CUDA_ANNOTATION: "12.2", APPARMOR_ANNOTATION: "unconfined"}
    )

    def refusals(graph: Any) -> list[str]:
        return messages(analyze(namespace(), graph, config=POOLED), "pod-security-standards")

    def refused_at(where: str) -> list[str]:
        return [
            f'forbidden AppArmor profile: pod sets {where}.annotations["{APPARMOR_ANNOTATION}"]'
            '="unconfined". Fix: use "runtime/default" or "localhost/<profile>". '
            '[Pod Security restricted v1.35, from namespace "team-a"]'
        ]

    assert refusals(alpha) == refused_at("spec.services.VllmWorker.extraPodMetadata")
    assert refusals(beta) == refused_at("spec.components[0].podTemplate.metadata")


def test_a_dynamo_frontend_sidecars_image_is_judged(analyze: Analyze) -> None:
    # shared_spec_conversion.go, appendFrontendSidecar: the sidecar is a container
    # `sidecar-frontend` of frontendSidecar's image, args and env.
    graph = dynamo_worker({"limits": {"gpu": "1"}}, {"mainContainer": {"image": DYNAMO_IMAGE}})
    graph.inputs["spec"]["services"]["VllmWorker"]["frontendSidecar"] = {"image": "evil/x:latest"}

    assert messages(analyze(namespace(), graph), "gpu-pods-pinned-images") == [
        'container "sidecar-frontend" image "evil/x:latest" '
        "(spec.services.VllmWorker.frontendSidecar.image) uses the latest tag. Fix: pin a version "
        "tag or a digest (image@sha256:...), so every node runs the same image."
    ]


# shared_spec_conversion.go at 57ffc64, buildMainContainerFromDedicated: the main container
# takes the component's envs and probes; mergeExtraPodSpecMainContainer merges mainContainer
# over it with mergo.Merge(WithOverride) (imdario/mergo v0.3.16 merge.go deepMerge): a probe on
# both sides is merged field by field, each non-empty mainContainer value winning, so the
# component's host outlives a mainContainer probe that sets none.
METADATA_PROBE = {"httpGet": {"host": "169.254.169.254", "path": "/", "port": 80}}
COMPONENT = "spec.services.VllmWorker"
MAIN = "spec.services.VllmWorker.extraPodSpec.mainContainer"


def probe_host_refusal(where: str, host: str) -> list[str]:
    return [
        f'probe or lifecycle host: container "mainContainer" sets {where}.livenessProbe.httpGet'
        f'.host="{host}". Fix: remove host, so the kubelet connects to the pod\'s own IP. '
        '[Pod Security baseline v1.35, from namespace "team-a"]'
    ]


@pytest.mark.parametrize(
    ("own_probe", "expected"),
    [
        (None, probe_host_refusal(COMPONENT, "169.254.169.254")),
        (
            {"httpGet": {"path": "/health", "port": 8000}},
            probe_host_refusal(COMPONENT, "169.254.169.254"),
        ),
        ({"httpGet": {"path": "/health"}}, probe_host_refusal(COMPONENT, "169.254.169.254")),
        # An empty value overrides nothing (mergo v0.3.16 mergo.go, isEmptyValue: "" for a
        # string): the component's host stays.
        ({"httpGet": {"host": ""}}, probe_host_refusal(COMPONENT, "169.254.169.254")),
        ({"httpGet": {"host": "10.0.0.9"}}, probe_host_refusal(MAIN, "10.0.0.9")),
    ],
)
def test_a_dynamo_components_probe_is_merged_with_its_main_containers_field_by_field(
    analyze: Analyze, own_probe: dict[str, Any] | None, expected: list[str]
) -> None:
    alpha, _ = worker_in_both_versions(secure=True)
    worker = alpha.inputs["spec"]["services"]["VllmWorker"]
    worker["livenessProbe"] = METADATA_PROBE
    if own_probe is not None:
        worker["extraPodSpec"]["mainContainer"]["livenessProbe"] = own_probe

    assert messages(analyze(namespace(level="baseline"), alpha), "pod-security-standards") == (
        expected
    )


def test_a_dynamo_probe_merged_from_two_handlers_has_each_judged(analyze: Analyze) -> None:
    # deepMerge sets a handler pointer that only one side holds, so an `exec` from
    # mainContainer and the component's `httpGet` make one probe of two handlers. The API
    # server refuses the pod the operator builds from it ("may not specify more than 1 handler
    # type", kubernetes v1.35.0 pkg/apis/core/validation/validation.go, validateHandler); the
    # pack leaves that to it, and holds each handler to Pod Security.
    alpha, _ = worker_in_both_versions(secure=True)
    worker = alpha.inputs["spec"]["services"]["VllmWorker"]
    worker["livenessProbe"] = METADATA_PROBE
    worker["extraPodSpec"]["mainContainer"]["livenessProbe"] = {"exec": {"command": ["true"]}}

    assert messages(analyze(namespace(level="baseline"), alpha), "pod-security-standards") == (
        probe_host_refusal(COMPONENT, "169.254.169.254")
    )


@pytest.mark.parametrize(
    ("component_cuda", "own_env", "expected"),
    [
        ("12.2", [], []),
        ("12.2", [{"name": "HF_HOME", "value": "/cache"}], []),
        # mergeEnvs (shared_spec_conversion.go at 57ffc64): mainContainer's entry of a name
        # the component's envs also set wins.
        ("12.2", [{"name": "CUDA_VERSION", "value": "13.0"}], ["gpu-pods-cuda-within-driver"]),
        ("13.0", [{"name": "CUDA_VERSION", "value": "12.2"}], []),
    ],
)
def test_a_dynamo_components_own_envs_state_its_cuda_release(
    analyze: Analyze, component_cuda: str, own_env: list[dict[str, str]], expected: list[str]
) -> None:
    alpha, _ = pooled_worker_in_both_versions({})
    worker = alpha.inputs["spec"]["services"]["VllmWorker"]
    worker["envs"] = [{"name": "CUDA_VERSION", "value": component_cuda}]
    if own_env:
        worker["extraPodSpec"]["mainContainer"]["env"] = own_env

    verdicts = analyze(namespace(), alpha, config=POOLED)

    assert sorted({v.policy_name for v in verdicts if v.mandatory}) == expected


def unconfined_refusal(where: str) -> list[str]:
    return [
        f'forbidden AppArmor profile: pod sets {where}.annotations["{APPARMOR_ANNOTATION}"]'
        '="unconfined". Fix: use "runtime/default" or "localhost/<profile>". '
        '[Pod Security baseline v1.35, from namespace "team-a"]'
    ]


@pytest.mark.parametrize(
    ("kind", "spec", "where"),
    [
        (
            "DynamoGraphDeployment",
            lambda component: {"backendFramework": "vllm", "services": {"VllmWorker": component}},
            "spec.services.VllmWorker.extraPodMetadata",
        ),
        (
            "DynamoComponentDeployment",
            lambda component: {"backendFramework": "vllm", **component},
            "spec.extraPodMetadata",
        ),
    ],
)
def test_a_dynamo_component_of_pod_metadata_alone_has_its_annotations_judged(
    analyze: Analyze, kind: str, spec: Any, where: str
) -> None:
    # hasPodTemplateContent (shared_spec_conversion.go at 57ffc64) counts ExtraPodMetadata, so
    # such a component gets a pod of a bare main container and those annotations.
    metadata = {"annotations": {APPARMOR_ANNOTATION: "unconfined"}}
    component = {"componentType": "worker", "extraPodMetadata": metadata}
    inputs = {"metadata": {"name": "llm", "namespace": "team-a"}, "spec": spec(component)}
    deployment = resource(f"kubernetes:nvidia.com/v1alpha1:{kind}", "llm", inputs)

    found = messages(analyze(namespace(level="baseline"), deployment), "pod-security-standards")

    assert found == unconfined_refusal(where)


def test_a_v1alpha1_dynamo_component_deployment_without_extra_pod_spec_is_one_pod(
    analyze: Analyze,
) -> None:
    # v1alpha1/dynamocomponentdeployment_types.go at 015d780: the component's spec inline, so
    # its resources are at spec.resources; buildSharedPodTemplateFromAlpha builds its pod.
    spec = {
        "backendFramework": "vllm",
        "componentType": "worker",
        "resources": {"limits": {"gpu": "9"}},
    }
    inputs = {"metadata": {"name": "llm", "namespace": "team-a"}, "spec": spec}
    component = resource("kubernetes:nvidia.com/v1alpha1:DynamoComponentDeployment", "llm", inputs)

    assert messages(analyze(namespace(), component), MAX_GPUS) == [
        "the pod (spec.extraPodSpec) asks for 9 GPUs, more than the 8 allowed per pod "
        "(maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a node really has "
        "that many."
    ]


def test_a_dynamo_graph_patch_is_judged_on_the_values_it_sets(analyze: Analyze) -> None:
    # A patch's pods hold only what it sets: the GPUs a component asks for, and its own
    # `main` container, which no operator replaces in a patch; nothing it leaves unset, with
    # or without an extraPodSpec (Decode).
    main = {"name": "main", "securityContext": {"privileged": True}}
    worker = {"resources": {"limits": {"gpu": "64"}}, "extraPodSpec": {"containers": [main]}}
    decode = {"resources": {"limits": {"gpu": "1"}}}
    inputs = {
        "metadata": {"name": "llm", "namespace": "team-a"},
        "spec": {"services": {"VllmWorker": worker, "Decode": decode}},
    }
    patch = resource("kubernetes:nvidia.com/v1alpha1:DynamoGraphDeploymentPatch", "llm", inputs)

    verdicts = analyze(namespace(), patch)

    assert messages(verdicts, "pod-security-standards") == [
        'privileged: container "main" sets spec.services.VllmWorker.extraPodSpec.containers[0]'
        ".securityContext.privileged=true. Fix: remove privileged or set it to false. "
        '[Pod Security restricted v1.35, from namespace "team-a"]'
    ]
    assert messages(verdicts, MAX_GPUS) == [
        "the pod (spec.services.VllmWorker.extraPodSpec) asks for 64 GPUs, more than the 8 "
        "allowed per pod (maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a "
        "node really has that many."
    ]


SIDECAR_IMAGE = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.4.0"


def worker_with_frontend_sidecar(declared: dict[str, Any] | None) -> Any:
    """A restricted worker with a frontendSidecar, and `declared` in extraPodSpec.containers."""
    alpha, _ = worker_in_both_versions(secure=True)
    worker = alpha.inputs["spec"]["services"]["VllmWorker"]
    worker["frontendSidecar"] = {"image": SIDECAR_IMAGE}
    if declared is not None:
        worker["extraPodSpec"]["containers"] = [declared]
    return alpha


def test_a_frontend_sidecar_refusal_says_it_takes_the_v1beta1_form(analyze: Analyze) -> None:
    # v1alpha1 common.go at 015d780, FrontendSidecarSpec: image, args, envFromSecret and envs,
    # no securityContext; a container of its name declared in extraPodSpec.containers is
    # refused by Dynamo's webhook (webhook/validation/shared.go, validateFrontendSidecar).
    found = messages(
        analyze(namespace(), worker_with_frontend_sidecar(None)), "pod-security-standards"
    )

    assert found[0] == (
        'allowPrivilegeEscalation != false: container "sidecar-frontend" does not set '
        "spec.services.VllmWorker.frontendSidecar.securityContext.allowPrivilegeEscalation=false. "
        "Fix: set securityContext.allowPrivilegeEscalation: false on the container; "
        "frontendSidecar has no securityContext, so it cannot meet restricted. Write the "
        "component as nvidia.com/v1beta1, where frontendSidecar names a podTemplate container "
        "that carries one. "
        '[Pod Security restricted v1.35, from namespace "team-a"]'
    )


def test_a_declared_sidecar_frontend_container_is_judged_in_place_of_the_built_one(
    analyze: Analyze,
) -> None:
    # Where Dynamo's webhook is not asked (failurePolicy Ignore while it is down, or a
    # namespace its namespaceSelector leaves out), appendFrontendSidecar (shared_spec_conversion
    # .go at 57ffc64) returns early on a container already named sidecar-frontend: that one is
    # judged, once, where it is declared.
    declared = {"name": "sidecar-frontend", "image": SIDECAR_IMAGE}
    graph = worker_with_frontend_sidecar(declared)

    found = messages(analyze(namespace(), graph), "pod-security-standards")

    assert [m.split(". Fix:")[0] for m in found] == [
        'allowPrivilegeEscalation != false: container "sidecar-frontend" does not set '
        "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext"
        ".allowPrivilegeEscalation=false",
        'unrestricted capabilities: container "sidecar-frontend" does not drop ALL in '
        "spec.services.VllmWorker.extraPodSpec.containers[0].securityContext.capabilities.drop",
    ]


@pytest.mark.parametrize(("component", "main", "refused"), [("64", "1", False), ("1", "64", True)])
def test_a_dynamo_main_containers_gpus_win_over_the_components(
    analyze: Analyze, component: str, main: str, refused: bool
) -> None:
    # mergeExtraPodSpecMainContainer: mergo.Merge with override, mainContainer over the
    # resources built from the component's own.
    own = {"image": DYNAMO_IMAGE, "resources": {"limits": {"nvidia.com/gpu": main}}}
    graph = dynamo_worker({"limits": {"gpu": component}}, {"mainContainer": own})

    assert bool(messages(analyze(namespace(), graph), MAX_GPUS)) is refused


def test_a_dynamo_components_gpu_requests_are_counted(analyze: Analyze) -> None:
    # resource.go, GetResourcesConfig: `requests.gpu` becomes the main container's request.
    graph = dynamo_worker({"requests": {"gpu": "1"}}, {"mainContainer": {"image": DYNAMO_IMAGE}})

    assert messages(analyze(namespace(), graph), "gpu-resources-in-limits") == [
        'container "mainContainer" asks for nvidia.com/gpu in spec.services.VllmWorker'
        '.extraPodSpec.mainContainer.resources.requests["nvidia.com/gpu"] but sets no limit for '
        'it. Fix: set resources.limits["nvidia.com/gpu"] to "1"; Kubernetes takes a GPU request '
        "from its limit."
    ]


def test_a_container_named_main_gives_way_to_the_one_the_operator_builds(
    analyze: Analyze,
) -> None:
    # buildSharedPodTemplateFromAlpha: extraPodSpec's containers named `main` are dropped.
    dropped = {
        "name": "main",
        "image": DYNAMO_IMAGE,
        "resources": {"limits": {"nvidia.com/gpu": "8"}},
    }
    extra = {"containers": [dropped], "mainContainer": {"image": DYNAMO_IMAGE}}
    graph = dynamo_worker({"limits": {"gpu": "8"}}, extra)

    assert messages(analyze(namespace(), graph), MAX_GPUS) == []


def training_run(pod: dict[str, Any]) -> Any:
    inputs = {
        "metadata": {"name": "train", "namespace": "team-a"},
        "spec": {"workers": [{"replicas": 2, "template": template(pod)}]},
    }
    return resource("kubernetes:example.com/v1:TrainingRun", "train", inputs)


OWN_KIND = {
    "gpu-workload-kinds": {"podTemplates": {"example.com/TrainingRun": ["spec.workers.*.template"]}}
}


def test_a_stack_names_its_own_gpu_workload_kind_in_the_pack_config(analyze: Analyze) -> None:
    run = training_run(privileged_spec())

    assert messages(analyze(namespace(), run), "pod-security-standards") == []
    (message,) = messages(analyze(namespace(), run, config=OWN_KIND), "pod-security-standards")
    assert message.startswith(
        'privileged: container "app" sets '
        "spec.workers[0].template.spec.containers[0].securityContext.privileged=true."
    )
    assert messages(analyze(namespace(), run), "pod-security-standards") == []


def test_the_gpu_rules_read_a_stacks_own_gpu_workload_kind(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    spec["containers"][0]["image"] = "registry.example.com/train:latest"

    verdicts = analyze(namespace(), training_run(spec), config=OWN_KIND)

    (message,) = messages(verdicts, "gpu-pods-pinned-images")
    assert "(spec.workers[0].template.spec.containers[0].image)" in message


def test_a_stacks_entry_replaces_the_built_in_one_for_its_kind(analyze: Analyze) -> None:
    config = {
        "gpu-workload-kinds": {
            "podTemplates": {"ray.io/RayCluster": ["spec.headGroupSpec.template"]}
        }
    }

    verdicts = analyze(namespace(), carrier("RayCluster", privileged_spec()), config=config)

    assert messages(verdicts, "pod-security-standards") == []


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"TrainingRun": ["spec.template"]},
            '"TrainingRun" is not an API group and kind of a custom resource, such as '
            '"example.com/TrainingRun"',
        ),
        (
            {"apps/Deployment": ["spec.template"]},
            '"apps/Deployment" is not an API group and kind of a custom resource, such as '
            '"example.com/TrainingRun"',
        ),
        (
            {"example.com/TrainingRun": ["spec..template"]},
            '"example.com/TrainingRun" needs a list of dotted paths to its pod templates, such as '
            '["spec.workers.*.template"], not ["spec..template"]',
        ),
    ],
)
def test_an_unreadable_gpu_workload_kind_is_reported(
    analyze: Analyze, entry: dict[str, Any], problem: str
) -> None:
    verdicts = analyze(config={"gpu-workload-kinds": {"podTemplates": entry}})

    assert messages(verdicts, "gpu-workload-kinds") == [
        f"podTemplates: {problem}. Until it is fixed, no policy reads that kind's pods."
    ]


# --- KubeRay's autoscaler container ---------------------------------------------------------


def autoscaling_cluster(**options: Any) -> Any:
    """A RayCluster with in-tree autoscaling, whose head pod is a GPU pod."""
    spec = ray_cluster(restricted_pod_spec())
    spec["headGroupSpec"]["template"] = template(gpu_pod_spec())
    spec["enableInTreeAutoscaling"] = True
    if options:
        spec["autoscalerOptions"] = options
    inputs = {"metadata": {"name": "ray", "namespace": "team-a"}, "spec": spec}
    return resource("kubernetes:ray.io/v1:RayCluster", "ray", inputs)


RESTRICTED_CONTEXT = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def test_the_autoscaler_container_takes_its_security_context_from_autoscaler_options(
    analyze: Analyze,
) -> None:
    # kuberay v1.7.0 ray-operator/controllers/ray/common/pod.go: with enableInTreeAutoscaling,
    # BuildAutoscalerContainer adds a container "autoscaler" to the head pod, and
    # mergeAutoscalerOverrides copies autoscalerOptions.securityContext into it.
    cluster = autoscaling_cluster(securityContext={**RESTRICTED_CONTEXT, "privileged": True})

    verdicts = analyze(namespace(), cluster)

    assert messages(verdicts, "pod-security-standards") == [
        'privileged: container "autoscaler" sets '
        "spec.autoscalerOptions.securityContext.privileged=true. Fix: remove privileged or set "
        'it to false. [Pod Security restricted v1.35, from namespace "team-a"]'
    ]


def test_an_autoscaler_without_a_security_context_fails_restricted(analyze: Analyze) -> None:
    # The container KubeRay builds has no securityContext of its own (pod.go,
    # BuildAutoscalerContainer), so at restricted the head pod is refused unless
    # autoscalerOptions gives it one.
    verdicts = analyze(namespace(), autoscaling_cluster())

    assert messages(verdicts, "pod-security-standards") == [
        'allowPrivilegeEscalation != false: container "autoscaler" does not set '
        "spec.autoscalerOptions.securityContext.allowPrivilegeEscalation=false. Fix: set "
        "securityContext.allowPrivilegeEscalation: false on the container. [Pod Security "
        'restricted v1.35, from namespace "team-a"]',
        'unrestricted capabilities: container "autoscaler" does not drop ALL in '
        "spec.autoscalerOptions.securityContext.capabilities.drop. Fix: set "
        'securityContext.capabilities.drop: ["ALL"]. [Pod Security restricted v1.35, from '
        'namespace "team-a"]',
    ]


def test_the_autoscaler_image_is_held_to_the_pinned_image_rule(analyze: Analyze) -> None:
    cluster = autoscaling_cluster(image="rayproject/ray:latest", securityContext=RESTRICTED_CONTEXT)

    verdicts = analyze(namespace(), cluster)

    assert messages(verdicts, "gpu-pods-pinned-images") == [
        'container "autoscaler" image "rayproject/ray:latest" (spec.autoscalerOptions.image) '
        "uses the latest tag. Fix: pin a version tag or a digest (image@sha256:...), so every "
        "node runs the same image."
    ]


def test_no_autoscaler_container_without_in_tree_autoscaling(analyze: Analyze) -> None:
    # kuberay v1.7.0 controllers/ray/utils/util.go IsAutoscalingEnabled: only
    # enableInTreeAutoscaling: true adds the container; autoscalerOptions alone do not.
    cluster = autoscaling_cluster(securityContext={"privileged": True})
    cluster.inputs["spec"]["enableInTreeAutoscaling"] = False

    assert messages(analyze(namespace(), cluster), "pod-security-standards") == []


def test_a_ray_cron_jobs_cluster_has_its_autoscaler_too(analyze: Analyze) -> None:
    cluster = ray_cluster(restricted_pod_spec())
    cluster["enableInTreeAutoscaling"] = True
    cluster["autoscalerOptions"] = {"securityContext": {**RESTRICTED_CONTEXT, "privileged": True}}
    job = {"schedule": "0 3 * * *", "jobTemplate": {"rayClusterSpec": cluster}}
    inputs = {"metadata": {"name": "nightly", "namespace": "team-a"}, "spec": job}

    verdicts = analyze(namespace(), resource("kubernetes:ray.io/v1:RayCronJob", "nightly", inputs))

    (message,) = messages(verdicts, "pod-security-standards")
    assert message.startswith(
        'privileged: container "autoscaler" sets '
        "spec.jobTemplate.rayClusterSpec.autoscalerOptions.securityContext.privileged=true."
    )


# --- patches: Trainer v2's runtime patches and ...Patch of custom kinds ------------------------


def train_job(container: dict[str, Any]) -> Any:
    """A TrainJob patching the `node` Job's pod of its runtime: kubeflow/trainer v2.3.0
    pkg/apis/trainer/v1alpha1/trainjob_types.go, runtimePatches[].trainingRuntimeSpec.template
    .spec.replicatedJobs[].template.spec.template, a PodTemplatePatch."""
    pod = {"spec": {"containers": [{"name": "node", **container}]}}
    job = {"name": "node", "template": {"spec": {"template": pod}}}
    patch = {
        "manager": "platform.example.com/gpu",
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
    }
    spec = {"runtimeRef": {"name": "torch-distributed"}, "runtimePatches": [patch]}
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec}
    return resource("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob", "train", inputs)


def test_a_train_job_that_patches_a_node_privileged_is_refused(analyze: Analyze) -> None:
    verdicts = analyze(namespace(), train_job({"securityContext": {"privileged": True}}))

    assert messages(verdicts, "pod-security-standards") == [
        'privileged: container "node" sets spec.runtimePatches[0].trainingRuntimeSpec.template.'
        "spec.replicatedJobs[0].template.spec.template.spec.containers[0].securityContext."
        "privileged=true. Fix: remove privileged or set it to false. [Pod Security restricted "
        'v1.35, from namespace "team-a"]'
    ]


def test_a_train_jobs_patch_is_held_only_to_the_values_it_sets(analyze: Analyze) -> None:
    # The runtime's own pod holds runAsNonRoot, seccomp and the rest; the patch adds env.
    verdicts = analyze(namespace(), train_job({"env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}))

    assert messages(verdicts, "pod-security-standards") == []


def test_a_patch_of_a_custom_gpu_workload_kind_is_judged_as_a_patch(analyze: Analyze) -> None:
    worker = {"containers": [{"name": "app", "securityContext": {"privileged": True}}]}
    quiet = {"containers": [{"name": "app", "image": "rayproject/ray:2.52.0"}]}
    spec = {
        "headGroupSpec": {"template": template(quiet)},
        "workerGroupSpecs": [{"groupName": "gpu", "template": template(worker)}],
    }
    inputs = {"metadata": {"name": "ray", "namespace": "team-a"}, "spec": spec}
    patch = resource("kubernetes:ray.io/v1:RayClusterPatch", "ray-patch", inputs)

    verdicts = analyze(namespace(), patch)

    # Only `privileged`: the head's patch sets none of the fields restricted requires.
    assert messages(verdicts, "pod-security-standards") == [
        'privileged: container "app" sets '
        "spec.workerGroupSpecs[0].template.spec.containers[0].securityContext.privileged=true. "
        "Fix: remove privileged or set it to false. [Pod Security restricted v1.35, from "
        'namespace "team-a"]'
    ]


# --- inline pod specs, and paths that judge nothing ----------------------------------------

MODEL_SERVER = "kubernetes:serving.example.com/v1:ModelServer"
OWN_SPECS = {
    "gpu-workload-kinds": {
        "podSpecs": {"serving.example.com/ModelServer": ["spec.predictor", "spec.transformer"]}
    }
}


def model_server(name: str, predictor: dict[str, Any], **parts: Any) -> Any:
    """A kind of the stack's own that holds pod specs inline, as KServe's predictor does
    (kserve/kserve v0.20.0 pkg/apis/serving/v1beta1/predictor.go: `PodSpec json:",inline"`)."""
    spec = {"predictor": {"minReplicas": 1, **predictor}, **parts}
    inputs = {"metadata": {"name": name, "namespace": "team-a"}, "spec": spec}
    return resource(MODEL_SERVER, name, inputs)


def test_an_inline_pod_spec_is_judged_where_the_config_names_it(analyze: Analyze) -> None:
    predictor = privileged_spec()
    predictor["containers"][0]["name"] = "kserve-container"
    service = model_server("llm", predictor)

    assert messages(analyze(namespace(), service), "pod-security-standards") == []
    verdicts = analyze(namespace(), service, config=OWN_SPECS)

    assert messages(verdicts, "pod-security-standards") == [
        'privileged: container "kserve-container" sets '
        "spec.predictor.containers[0].securityContext.privileged=true. Fix: remove privileged "
        'or set it to false. [Pod Security restricted v1.35, from namespace "team-a"]'
    ]
    assert messages(verdicts, "gpu-workload-kinds") == []


def test_a_resource_in_which_no_path_finds_a_pod_is_reported(analyze: Analyze) -> None:
    # An inline pod spec configured as a template: spec.predictor.template is not there.
    config = {
        "gpu-workload-kinds": {
            "podTemplates": {"serving.example.com/ModelServer": ["spec.predictor.template"]}
        }
    }
    service = model_server("llm", privileged_spec())

    verdicts = analyze(namespace(), service, config=config)

    assert messages(verdicts, "gpu-workload-kinds") == [
        "no path configured for serving.example.com/ModelServer (spec.predictor.template) "
        "finds a pod in this resource, so no policy judges its pods. Fix: correct the paths in "
        "gpu-workload-kinds's config (podTemplates for templates of metadata and spec, podSpecs "
        "for pod specs held inline, containerTemplates for templates that run containers of "
        "their own fields)."
    ]
    assert [v.urn for v in verdicts if v.policy_name == "gpu-workload-kinds"] == [service.urn]


def test_a_path_to_a_part_a_resource_leaves_out_is_not_reported(analyze: Analyze) -> None:
    with_transformer = model_server("llm", restricted_pod_spec(), transformer=restricted_pod_spec())
    without = model_server("embeddings", restricted_pod_spec())

    verdicts = analyze(namespace(), with_transformer, without, config=OWN_SPECS)

    assert messages(verdicts, "gpu-workload-kinds") == []


# --- a TrainJob's trainer: what it overrides in its runtime's `node` container -------------------


def train_job_with_trainer(trainer: dict[str, Any]) -> Any:
    """A TrainJob whose `spec.trainer` overrides its runtime's training container: kubeflow/trainer
    v2.3.0 pkg/runtime/framework/plugins/jobset/builder.go (Builder.Trainer: `image` replaces the
    `node` container's image) and pkg/runtime/core/trainingruntime.go (`resourcesPerNode` merged
    into the `node` container's resources)."""
    spec = {"runtimeRef": {"name": "torch-distributed"}, "trainer": trainer}
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec}
    return resource("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob", "train", inputs)


def test_a_train_job_asking_more_gpus_per_node_than_allowed_is_refused(analyze: Analyze) -> None:
    trainer = {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 16}}}

    verdicts = analyze(train_job_with_trainer(trainer))

    assert messages(verdicts, "gpu-pods-max-gpus") == [
        "the pod (spec.trainer) asks for 16 GPUs, more than the 8 allowed per pod "
        "(maxGpusPerPod). "
        "Fix: ask for at most 8, or raise maxGpusPerPod if a node really has that many."
    ]


def test_a_train_jobs_gpu_trainer_image_on_the_latest_tag_is_reported(analyze: Analyze) -> None:
    trainer = {
        "image": "example.com/train:latest",
        "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}},
    }

    verdicts = analyze(train_job_with_trainer(trainer))

    assert messages(verdicts, "gpu-pods-pinned-images") == [
        'container "node" image "example.com/train:latest" (spec.trainer.image) '
        "uses the latest tag. Fix: pin a version tag or a digest (image@sha256:...), so every "
        "node runs the same image."
    ]
    assert messages(verdicts, "gpu-pods-max-gpus") == []


def test_a_train_jobs_trainer_is_not_held_to_what_its_runtime_sets(analyze: Analyze) -> None:
    # Node selection, tolerations and Pod Security come from the runtime's pod template, which
    # the TrainJob cannot change through spec.trainer: only its GPU count and image are judged.
    trainer = {
        "image": "example.com/train:1.4",
        "resourcesPerNode": {"limits": {"nvidia.com/mig-1g.10gb": 1}},
    }

    verdicts = analyze(namespace(), train_job_with_trainer(trainer))

    assert [v.policy_name for v in verdicts if v.policy_name != "checks-deferred-at-preview"] == []


# --- KServe: the model server container a predictor describes outside its pod spec -----------

MODEL: dict[str, Any] = {
    "modelFormat": {"name": "huggingface"},
    "storageUri": "hf://meta-llama/Llama-3.1-8B-Instruct",
    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
}


def kserve_predictor(predictor: dict[str, Any]) -> Any:
    """kserve/kserve v0.20.0 pkg/apis/serving/v1beta1/predictor.go: a predictor names its model
    server in one framework field (`model`, `huggingface`, `pytorch`, ...), each a
    PredictorExtensionSpec that inlines a corev1.Container, which KServe makes the pod's
    `kserve-container` beside the PodSpec's own containers."""
    inputs = {"metadata": {"name": "llm", "namespace": "team-a"}, "spec": {"predictor": predictor}}
    return resource("kubernetes:serving.kserve.io/v1beta1:InferenceService", "llm", inputs)


def test_a_privileged_model_server_of_a_predictor_is_refused(analyze: Analyze) -> None:
    model = {**MODEL, "securityContext": {**MODEL["securityContext"], "privileged": True}}
    predictor = {"securityContext": restricted_pod_spec()["securityContext"], "model": model}

    verdicts = analyze(namespace(), kserve_predictor(predictor))

    (message,) = messages(verdicts, "pod-security-standards")
    assert message.startswith(
        'privileged: container "kserve-container" sets '
        "spec.predictor.model.securityContext.privileged=true."
    )


def test_a_model_server_asking_more_gpus_than_allowed_is_refused(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    del spec["containers"]
    huggingface = {**MODEL, "resources": {"limits": {"nvidia.com/gpu": 16}}}

    verdicts = analyze(namespace(), kserve_predictor({**spec, "huggingface": huggingface}))

    assert messages(verdicts, "gpu-pods-max-gpus") == [
        "the pod (spec.predictor) asks for 16 GPUs, more than the 8 allowed per pod "
        "(maxGpusPerPod). "
        "Fix: ask for at most 8, or raise maxGpusPerPod if a node really has that many."
    ]


def test_a_restricted_gpu_predictor_passes(analyze: Analyze) -> None:
    spec = gpu_pod_spec()
    del spec["containers"]
    model = {**MODEL, "image": "registry.example.com/vllm:0.9.1"}
    model["resources"] = {"limits": {"nvidia.com/gpu": 1}}

    verdicts = analyze(namespace(), kserve_predictor({**spec, "model": model}))

    # A stack without pools or `gpuPools`: the CUDA policies say, once, that they could not judge.
    assert [v.policy_name for v in verdicts if v.policy_name != "checks-deferred-at-preview"] == [
        "gpu-pods-cuda-known"
    ]


def test_an_unknown_model_server_hides_nothing_of_the_predictors_containers(
    analyze: Analyze,
) -> None:
    predictor = privileged_spec()

    verdicts = analyze(namespace(), kserve_predictor({**predictor, "model": UNKNOWN}))

    (message,) = messages(verdicts, "pod-security-standards")
    assert message.startswith(
        'privileged: container "app" sets spec.predictor.containers[0].securityContext.privileged'
    )


def serving_runtime(container: dict[str, Any]) -> Any:
    """kserve/kserve v0.20.0 pkg/apis/serving/v1alpha1/servingruntime_types.go: the runtime's
    containers (ServingRuntimePodSpec, inline), merged into each predictor's pod that uses it."""
    spec = {
        "supportedModelFormats": [{"name": "huggingface", "autoSelect": True}],
        "containers": [
            {"name": "kserve-container", "image": "example.com/vllm:0.9.1", **container}
        ],
    }
    inputs = {"metadata": {"name": "vllm", "namespace": "team-a"}, "spec": spec}
    return resource("kubernetes:serving.kserve.io/v1alpha1:ServingRuntime", "vllm", inputs)


def test_a_serving_runtime_running_its_server_privileged_is_refused(analyze: Analyze) -> None:
    verdicts = analyze(namespace(), serving_runtime({"securityContext": {"privileged": True}}))

    (message,) = messages(verdicts, "pod-security-standards")
    assert message.startswith(
        'privileged: container "kserve-container" sets '
        "spec.containers[0].securityContext.privileged=true."
    )


def test_a_serving_runtime_is_held_only_to_the_values_it_sets(analyze: Analyze) -> None:
    # runAsNonRoot and seccomp are the predictor's pod's, which the runtime cannot set.
    verdicts = analyze(namespace(), serving_runtime({}))

    assert messages(verdicts, "pod-security-standards") == []


# --- Argo Workflows: templates that run one container, and the workflow's pod fields ----------


def workflow(spec: dict[str, Any]) -> Any:
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec}
    return resource("kubernetes:argoproj.io/v1alpha1:Workflow", "train", inputs)


def test_an_argo_step_takes_the_workflows_security_context_where_it_sets_none(
    analyze: Analyze,
) -> None:
    # argoproj/argo-workflows v4.1.2 workflow/controller/workflowpod.go,
    # addSchedulingConstraints: a template without a securityContext runs with the workflow's.
    pod = restricted_pod_spec()
    step = argo_step({"containers": pod["containers"]})
    spec = {"securityContext": pod["securityContext"], "templates": [step]}

    assert messages(analyze(namespace(), workflow(spec)), "pod-security-standards") == []
    del spec["securityContext"]
    (first, *_) = messages(analyze(namespace(), workflow(spec)), "pod-security-standards")
    assert first.startswith(
        'runAsNonRoot != true: container "app" does not set '
        "spec.templates[0].container.securityContext.runAsNonRoot=true"
    )


def test_the_workflows_host_network_and_volumes_are_judged_in_each_steps_pod(
    analyze: Analyze,
) -> None:
    # workflowpod.go: pod.Spec.HostNetwork is the workflow's (a template has none), and a
    # workflow volume a step mounts joins the step's pod (addVolumeReferences).
    step = argo_step(restricted_pod_spec())
    step["volumes"] = [{"name": "scratch", "emptyDir": {}}]
    spec = {
        "hostNetwork": True,
        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        "templates": [step],
    }

    verdicts = analyze(namespace(level="baseline"), workflow(spec))

    assert messages(verdicts, "pod-security-standards") == [
        "host namespaces: pod sets spec.hostNetwork=true. Fix: remove hostNetwork or set it to "
        'false. [Pod Security baseline v1.35, from namespace "team-a"]',
        'hostPath volumes: volume "host" mounts the node\'s filesystem '
        "(spec.volumes[0].hostPath). Fix: use a persistentVolumeClaim, emptyDir or another "
        'volume type instead of hostPath. [Pod Security baseline v1.35, from namespace "team-a"]',
    ]


def test_an_argo_steps_sidecars_and_scripts_are_its_pods_containers(analyze: Analyze) -> None:
    # workflow_types.go: Template.script is a Container inline (ScriptTemplate), and
    # Template.sidecars[] run beside it in the same pod.
    pod = gpu_pod_spec("6")
    (container,) = pod.pop("containers")
    sidecar = {**container, "name": "loader"}
    step = {"name": "train", **pod, "script": {**container, "source": "train()"}}
    step["sidecars"] = [sidecar]

    verdicts = analyze(namespace(), workflow({"templates": [step, {"name": "dag", "dag": {}}]}))

    assert messages(verdicts, "gpu-pods-max-gpus") == [
        "the pod (spec.templates[0]) asks for 12 GPUs, more than the 8 allowed per pod "
        "(maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a node really has "
        "that many."
    ]


def pipeline(step: dict[str, Any]) -> Any:
    inputs = {"metadata": {"name": "p", "namespace": "team-a"}, "spec": {"steps": [step]}}
    return resource("kubernetes:example.com/v1:Pipeline", "p", inputs)


def test_a_stack_names_its_own_container_templates_in_the_pack_config(analyze: Analyze) -> None:
    step = argo_step(privileged_spec())
    config = {
        "gpu-workload-kinds": {
            "containerTemplates": {"example.com/Pipeline": {"spec.steps.*": ["container"]}}
        }
    }

    assert messages(analyze(namespace(), pipeline(step)), "pod-security-standards") == []
    (message,) = messages(
        analyze(namespace(), pipeline(step), config=config), "pod-security-standards"
    )
    assert message.startswith(
        'privileged: container "app" sets spec.steps[0].container.securityContext.privileged=true.'
    )


def test_an_unreadable_container_template_entry_is_reported(analyze: Analyze) -> None:
    entry: dict[str, Any] = {"example.com/Pipeline": {"spec.steps.*": []}}

    verdicts = analyze(config={"gpu-workload-kinds": {"containerTemplates": entry}})

    assert messages(verdicts, "gpu-workload-kinds") == [
        'containerTemplates: "example.com/Pipeline" needs a map of dotted paths to its '
        "templates, each to a list of dotted paths (from the template) to the containers it "
        'runs, such as {"spec.steps.*": ["container", "sidecars.*"]}, not '
        '{"spec.steps.*": []}. Until it is fixed, no policy reads that kind\'s pods.'
    ]


def test_an_llm_inference_service_is_held_only_to_the_values_it_sets(analyze: Analyze) -> None:
    # kserve/kserve v0.20.0 pkg/controller/v1alpha2/llmisvc/config_merge.go: the service is
    # merged over the well-known config of its layout, and config/llmisvcconfig/
    # config-llm-template.yaml gives container `main` runAsNonRoot, RuntimeDefault seccomp, no
    # privilege escalation and no capabilities.
    limits = {"limits": {"nvidia.com/gpu": "1"}}
    pod = {"containers": [{"name": "main", "resources": limits}]}
    inputs = {
        "metadata": {"name": "llm", "namespace": "team-a"},
        "spec": {"model": {"uri": "hf://org/model"}, "template": pod},
    }
    service = resource("kubernetes:serving.kserve.io/v1alpha2:LLMInferenceService", "llm", inputs)

    assert messages(analyze(namespace(), service), "pod-security-standards") == []


# --- Trainer v2.1's podTemplateOverrides ------------------------------------------------------


def test_a_host_path_added_through_a_train_jobs_pod_template_override_is_refused(
    analyze: Analyze,
) -> None:
    # kubeflow/trainer v2.1.0 pkg/apis/trainer/v1alpha1/trainjob_types.go: a
    # PodTemplateOverride's spec (PodTemplateSpecOverride) sets the runtime pods' volumes.
    override = {
        "targetJobs": [{"name": "node"}],
        "spec": {"volumes": [{"name": "host", "hostPath": {"path": "/var/run"}}]},
    }
    spec = {"runtimeRef": {"name": "torch-distributed"}, "podTemplateOverrides": [override]}
    inputs = {"metadata": {"name": "train", "namespace": "team-a"}, "spec": spec}
    job = resource("kubernetes:trainer.kubeflow.org/v1alpha1:TrainJob", "train", inputs)

    verdicts = analyze(namespace(level="baseline"), job)

    # Only the volume: the override leaves the rest of the pod to the runtime.
    assert messages(verdicts, "pod-security-standards") == [
        'hostPath volumes: volume "host" mounts the node\'s filesystem '
        "(spec.podTemplateOverrides[0].spec.volumes[0].hostPath). Fix: use a "
        "persistentVolumeClaim, emptyDir or another volume type instead of hostPath. [Pod "
        'Security baseline v1.35, from namespace "team-a"]'
    ]


def test_an_argo_step_not_known_yet_hides_nothing_of_the_others(analyze: Analyze) -> None:
    unknown_container = {"name": "later", "container": UNKNOWN}
    spec = {"templates": [UNKNOWN, unknown_container, argo_step(privileged_spec())]}

    (message,) = messages(analyze(namespace(), workflow(spec)), "pod-security-standards")
    assert message.startswith(
        'privileged: container "app" sets spec.templates[2].container.securityContext.'
        "privileged=true."
    )


# --- Argo: what the controller adds to a template's pod (templateDefaults, podSpecPatch) -------

BASELINE = '[Pod Security baseline v1.35, from namespace "team-a"]'
RESTRICTED = '[Pod Security restricted v1.35, from namespace "team-a"]'


def test_a_workflow_that_only_references_a_template_has_its_pod_fields_judged(
    analyze: Analyze,
) -> None:
    # argoproj/argo-workflows v4.1.2 workflow/util/merge.go, JoinWorkflowSpec: the Workflow's
    # spec is merged over the referenced WorkflowTemplate's, its hostNetwork and volumes
    # winning, and workflowpod.go gives every pod the workflow's hostNetwork.
    spec = {
        "workflowTemplateRef": {"name": "train"},
        "hostNetwork": True,
        "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
    }

    verdicts = analyze(namespace(level="baseline"), workflow(spec))

    assert messages(verdicts, "pod-security-standards") == [
        "host namespaces: pod sets spec.hostNetwork=true. Fix: remove hostNetwork or set it to "
        f"false. {BASELINE}",
        'hostPath volumes: volume "host" mounts the node\'s filesystem '
        "(spec.volumes[0].hostPath). Fix: use a persistentVolumeClaim, emptyDir or another "
        f"volume type instead of hostPath. {BASELINE}",
    ]


def test_a_referencing_workflows_template_defaults_are_judged_as_the_containers_they_set(
    analyze: Analyze,
) -> None:
    # operator.go, mergedTemplateDefaultsInto: the defaults reach every container template of
    # the referenced WorkflowTemplate that does not set the value itself.
    defaults = {"container": {"securityContext": {"privileged": True}}}
    spec = {"workflowTemplateRef": {"name": "train"}, "templateDefaults": defaults}

    (message,) = messages(analyze(namespace(), workflow(spec)), "pod-security-standards")

    assert message.startswith(
        'privileged: container "container" sets '
        "spec.templateDefaults.container.securityContext.privileged=true."
    )


def test_template_defaults_are_merged_under_each_template_before_it_is_judged(
    analyze: Analyze,
) -> None:
    # mergedTemplateDefaultsInto strategic-merges the template over the defaults: a template
    # that leaves its securityContext to the defaults runs with theirs, restricted here.
    pod = restricted_pod_spec()
    (container,) = pod["containers"]
    defaults = {
        "securityContext": pod["securityContext"],
        "container": {"securityContext": container.pop("securityContext")},
    }
    step = {"name": "train", "container": container}
    spec = {"templateDefaults": defaults, "templates": [step]}

    assert messages(analyze(namespace(), workflow(spec)), "pod-security-standards") == []


def test_template_defaults_of_another_template_type_do_not_apply(analyze: Analyze) -> None:
    # mergedTemplateDefaultsInto drops the defaults of each template type but the template's
    # own: a `script` default reaches no `container` template.
    defaults = {"script": {"securityContext": {"privileged": True}}}
    step = argo_step(restricted_pod_spec())

    verdicts = analyze(namespace(), workflow({"templateDefaults": defaults, "templates": [step]}))

    assert messages(verdicts, "pod-security-standards") == []


def test_a_template_default_a_template_overrides_is_not_judged(analyze: Analyze) -> None:
    defaults = {"container": {"securityContext": {"privileged": True}}}
    step = argo_step(restricted_pod_spec())
    step["container"]["securityContext"]["privileged"] = False

    verdicts = analyze(namespace(), workflow({"templateDefaults": defaults, "templates": [step]}))

    assert messages(verdicts, "pod-security-standards") == []


def test_what_a_templates_pod_spec_patch_sets_is_judged_as_a_patch(analyze: Analyze) -> None:
    # workflowpod.go applies the template's podSpecPatch (JSON or YAML) to the pod as a
    # strategic merge patch (workflow/util/util.go, ApplyPodSpecPatch); the main container is
    # `main`.
    step = argo_step(gpu_pod_spec())
    step["podSpecPatch"] = (
        '{"containers": [{"name": "main", "securityContext": {"privileged": true},'
        ' "resources": {"limits": {"nvidia.com/gpu": "64"}}}]}'
    )

    verdicts = analyze(namespace(), workflow({"templates": [step]}))

    (privileged,) = messages(verdicts, "pod-security-standards")
    assert privileged.startswith(
        'privileged: container "main" sets '
        "spec.templates[0].podSpecPatch.containers[0].securityContext.privileged=true."
    )
    assert messages(verdicts, "gpu-pods-max-gpus") == [
        "the pod (spec.templates[0].podSpecPatch) asks for 64 GPUs, more than the 8 allowed per "
        "pod (maxGpusPerPod). Fix: ask for at most 8, or raise maxGpusPerPod if a node really "
        "has that many."
    ]


def test_a_workflows_yaml_pod_spec_patch_is_judged_once(analyze: Analyze) -> None:
    # processPodSpecPatch applies the workflow's podSpecPatch to every pod, before the
    # template's own.
    spec = {
        "workflowTemplateRef": {"name": "train"},
        "podSpecPatch": "volumes:\n- name: host\n  hostPath:\n    path: /var/run\n",
    }

    verdicts = analyze(namespace(level="baseline"), workflow(spec))

    assert messages(verdicts, "pod-security-standards") == [
        'hostPath volumes: volume "host" mounts the node\'s filesystem '
        "(spec.podSpecPatch.volumes[0].hostPath). Fix: use a persistentVolumeClaim, emptyDir or "
        f"another volume type instead of hostPath. {BASELINE}"
    ]


def test_the_artifact_gc_pod_spec_patch_is_judged(analyze: Analyze) -> None:
    # argo-workflows v4.1.2 workflow/controller/artifact_gc.go: createArtifactGCPod applies
    # spec.artifactGC.podSpecPatch to the artifact-GC pod.
    spec = {
        "templates": [argo_step(restricted_pod_spec())],
        "artifactGC": {
            "strategy": "OnWorkflowDeletion",
            "podSpecPatch": "volumes:\n- name: host\n  hostPath:\n    path: /var/run\n",
        },
    }

    verdicts = analyze(namespace(level="baseline"), workflow(spec))

    assert messages(verdicts, "pod-security-standards") == [
        'hostPath volumes: volume "host" mounts the node\'s filesystem '
        "(spec.artifactGC.podSpecPatch.volumes[0].hostPath). Fix: use a persistentVolumeClaim, "
        f"emptyDir or another volume type instead of hostPath. {BASELINE}"
    ]


# Argo substitutes a patch's expressions when it builds the pod, after every policy has run,
# into the template's JSON (argo-workflows v4.1.2 workflow/common/util.go SubstituteParams),
# escaping a value once (util/template/simple_template.go, strconv.Quote), for the template's
# JSON string and not for the patch within it: a cpu parameter of
# `1"}}}]},"securityContext":{"privileged":true},"x":{"y":"` makes the patch privileged.
UNREAD_PATCHES = [
    "{{inputs.parameters.patch}}",
    '{"containers": [{"name": "main", "resources": {"limits": {"cpu": '
    '"{{inputs.parameters.cpu}}"}}}]}',
]


@pytest.mark.parametrize("patch", UNREAD_PATCHES)
@pytest.mark.parametrize(
    ("level", "refused"), [("restricted", True), ("baseline", True), ("privileged", False)]
)
def test_a_pod_spec_patch_that_cannot_be_read_is_refused_where_pods_are_judged(
    analyze: Analyze, level: str, refused: bool, patch: str
) -> None:
    step = argo_step(restricted_pod_spec())
    step["podSpecPatch"] = patch

    verdicts = analyze(namespace(level=level), workflow({"templates": [step]}))

    standard = f'[Pod Security {level} v1.35, from namespace "team-a"]'
    assert messages(verdicts, "pod-security-standards") == (
        [
            "spec.templates[0].podSpecPatch is not a literal PodSpec: it holds {{...}} "
            "expressions, or is neither JSON nor YAML. Argo substitutes the expressions when it "
            "builds the pod, after every policy has run, and a parameter's quotes come out "
            "unescaped in the patch, so even an expression in a value can set any field "
            "(privileged containers, host paths, GPUs), which is never judged. Fix: write it as "
            "a literal JSON or YAML PodSpec without expressions, or set those fields on the "
            f"template itself, where an expression stays a value. {standard}"
        ]
        if refused
        else []
    )


def test_template_defaults_and_a_pod_spec_patch_not_known_yet_skip_what_they_reach(
    analyze: Analyze, new_notes: Any
) -> None:
    # At preview: the defaults reach every template, so each is judged at `pulumi up`.
    step = argo_step(privileged_spec())
    spec = {"templateDefaults": UNKNOWN, "podSpecPatch": UNKNOWN, "templates": [step]}

    verdicts = analyze(namespace(), workflow(spec))

    assert messages(verdicts, "pod-security-standards") == []
    assert any("spec.templates[0]" in note for note in new_notes())
    assert any("spec.podSpecPatch" in note for note in new_notes())
