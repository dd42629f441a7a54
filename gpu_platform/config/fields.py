"""What every part of the config model is built from: the base model, the clouds and platforms,
and the constrained string types, each pattern with what it means in words for the error report.
"""

import difflib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    PlainValidator,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from gpu_platform.accelerators import ACCELERATORS, MIG_SLICES
from gpu_platform.config.problems import (
    CONFIG_NAMESPACE,
    MISSING,
    ConfigError,
    ConfigProblem,
    key_path,
    not_plain_problems,
)
from gpu_platform.policy_pack.platform_values import IMAGE_TAG

# RFC 1123 label: what Kubernetes accepts as a namespace name and what node group, node pool and
# Helm release names can safely be derived from. Pools are capped lower because GKE limits node
# pool names to 40 characters and the cloud components add suffixes.
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_LABEL_KEY = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$"
# An exact chart version: Helm would accept a range or nothing at all and silently upgrade.
_EXACT_VERSION = r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$"
_HTTPS_URL = r"^(https|oci)://[^\s]+$"
_HTTP_URL = r"^https?://[^\s/?#]+(/[^\s?#]*)?$"
_MIG_PROFILE = r"^all-\d+g\.\d+gb$"
_MIG_SLICE = r"^\d+g\.\d+gb(\.me)?$"
_CLUSTER_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"
_GCP_LOCATION = r"^[a-z]+-[a-z]+[0-9]+(-[a-z])?$"
# binaryauthorization.v1 `AdmissionWhitelistPattern.namePattern`: `registry/path/to/image`, with
# a trailing `*` (not matching `/`) or `**` (subdirectories) allowed only after `registry/`.
_IMAGE_NAME_PATTERN = r"^[a-z0-9][-a-z0-9.]*(:[0-9]+)?/[^*\s]*(\*\*?)?$"
_GCP_SERVICE_ACCOUNT = r"^[a-z0-9][-a-z0-9]*@[-a-z0-9.]+\.gserviceaccount\.com$"
# NVIDIA tags every gpu-operator chart `v<major>.<minor>.<patch>`; anything else is a typo, a
# range or another chart's version, and Helm would only say so at `pulumi up`.
_OPERATOR_CHART_VERSION = r"^v[0-9]+\.[0-9]+\.[0-9]+$"
# Something other than whitespace: an empty or blank name would silently mean "none" (the
# current kubeconfig context, the provider's default region) instead of being refused.
_NOT_BLANK = r"^\s*\S"
# ARNs of the `aws` partition only: the IAM documents the platform's roles are created under
# (docs/iam/, the permissions boundary and the deploy policies) name `arn:aws:` and
# `ec2.amazonaws.com`, which match nothing in aws-cn or aws-us-gov.
_IAM_ROLE_ARN = r"^arn:aws:iam::[0-9]{12}:role/([!-~]+/)?[A-Za-z0-9_+=,.@-]{1,64}$"
# The release of an EKS-optimized AMI: the Kubernetes version, then the build date on AL2023
# (`1.33.4-20251016`) or the Bottlerocket build's commit (`1.52.0-0d4a7f31`). A date is also
# eight hex digits, so the field takes either; the EKS rules check AL2023's.
_AMI_RELEASE = r"^[0-9]+\.[0-9]+\.[0-9]+-[0-9a-f]{8}$"
_SUBNET_ID = r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$"
_SECURITY_GROUP_ID = r"^sg-([0-9a-f]{8}|[0-9a-f]{17})$"
_CAPACITY_RESERVATION_ID = r"^cr-[0-9a-f]{17}$"
_RESOURCE_GROUP_ARN = r"^arn:aws:resource-groups:[a-z0-9-]+:[0-9]{12}:group/[A-Za-z0-9_.-]{1,128}$"
# A reservation of the cluster's project by its name, or one another project shares with it as
# `projects/<owner>/reservations/<name>` (compute.v1.json `ReservationAffinity.values`: "a name
# to a reservation in the same project or "projects/different-project/reservations/
# some-reservation-name" to target a shared reservation in the same zone but in a different
# project"). Project ids: 6 to 30 lowercase letters, digits and hyphens, from a letter.
_GCE_RESERVATION_NAME = (
    r"^(projects/[a-z][-a-z0-9]{4,28}[a-z0-9]/reservations/)?[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
)
_GKE_NODE_VERSION = r"^[0-9]+\.[0-9]+\.[0-9]+-gke\.[0-9]+$"
_EKS_ADDON_VERSION = r"^v[0-9]+\.[0-9]+\.[0-9]+-eksbuild\.[0-9]+$"
_DRIVER_VERSION = r"^[0-9]{3}\.[0-9]+(\.[0-9]+)?$"
_EC2_INSTANCE_TYPE = r"^[a-z][a-z0-9-]*\.[a-z0-9]+$"
_GCE_MACHINE_TYPE = r"^[a-z][a-z0-9]*-[a-z0-9-]+$"
_KMS_KEY_ARN = r"^arn:aws:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]{36}$"
# An IAM role or user an EKS access entry can name (EKS CreateAccessEntry: "principalArn").
_IAM_PRINCIPAL_ARN = r"^arn:aws:iam::[0-9]{12}:(role|user)/([!-~]+/)?[A-Za-z0-9_+=,.@-]{1,64}$"
_CLOUD_KMS_KEY_NAME = (
    r"^projects/[a-z][a-z0-9-]{4,28}[a-z0-9]/locations/[a-z0-9-]+/keyRings/[A-Za-z0-9_-]{1,63}"
    r"/cryptoKeys/[A-Za-z0-9_-]{1,63}$"
)
_GROUP_EMAIL = r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$"
_TIME_OF_DAY = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
# `minute hour * * day-of-week`, one number each (day 0 is Sunday) or `*` for every day: a
# window that recurs each day or each week, whose rest of the period the platform can write as
# one cron schedule and duration of its own (`DriftWindow.closed`).
DAILY_OR_WEEKLY_CRON = r"^([0-5]?[0-9]) ([01]?[0-9]|2[0-3]) \* \* ([0-6]|\*)$"
# Hours and minutes, as a Karpenter budget's `duration` takes them (its CRD pattern,
# kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go `Budget.Duration` at v1.14.1).
HOURS_MINUTES = r"^([0-9]+h|[0-9]+m|[0-9]+h[0-9]+m)$"
# EC2 instance families (`g6`, `p5en`) and categories (`g`, `gr`, `p`), as Karpenter reads them
# from an instance type's name (`instanceTypeScheme`, aws/karpenter-provider-aws
# pkg/providers/instancetype/types.go at v1.14.1).
_INSTANCE_FAMILY = r"^[a-z]+[0-9][a-z0-9-]*$"
_INSTANCE_CATEGORY = r"^[a-z]+$"


DnsLabel = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=63)]
PoolName = Annotated[str, StringConstraints(pattern=_DNS_LABEL, max_length=32)]
LabelKey = Annotated[str, StringConstraints(pattern=_LABEL_KEY, max_length=317)]
LabelValue = Annotated[str, StringConstraints(pattern=_LABEL_VALUE)]
ExactVersion = Annotated[str, StringConstraints(pattern=_EXACT_VERSION)]
NotBlank = Annotated[str, StringConstraints(pattern=_NOT_BLANK)]
HttpsUrl = Annotated[str, StringConstraints(pattern=_HTTPS_URL)]
HttpUrl = Annotated[str, StringConstraints(pattern=_HTTP_URL)]
MigProfile = Annotated[str, StringConstraints(pattern=_MIG_PROFILE)]
ClusterName = Annotated[str, StringConstraints(pattern=_CLUSTER_NAME)]
GcpLocation = Annotated[str, StringConstraints(pattern=_GCP_LOCATION)]
ImageNamePattern = Annotated[str, StringConstraints(pattern=_IMAGE_NAME_PATTERN)]
GcpServiceAccount = Annotated[str, StringConstraints(pattern=_GCP_SERVICE_ACCOUNT)]
OperatorChartVersion = Annotated[str, StringConstraints(pattern=_OPERATOR_CHART_VERSION)]
IamRoleArn = Annotated[str, StringConstraints(pattern=_IAM_ROLE_ARN)]
AmiRelease = Annotated[str, StringConstraints(pattern=_AMI_RELEASE)]
SubnetId = Annotated[str, StringConstraints(pattern=_SUBNET_ID)]
SecurityGroupId = Annotated[str, StringConstraints(pattern=_SECURITY_GROUP_ID)]
CapacityReservationId = Annotated[str, StringConstraints(pattern=_CAPACITY_RESERVATION_ID)]
ResourceGroupArn = Annotated[str, StringConstraints(pattern=_RESOURCE_GROUP_ARN)]
GceReservationName = Annotated[str, StringConstraints(pattern=_GCE_RESERVATION_NAME)]
GkeNodeVersion = Annotated[str, StringConstraints(pattern=_GKE_NODE_VERSION)]
EksAddonVersion = Annotated[str, StringConstraints(pattern=_EKS_ADDON_VERSION)]
DriverVersion = Annotated[str, StringConstraints(pattern=_DRIVER_VERSION)]
Ec2InstanceType = Annotated[str, StringConstraints(pattern=_EC2_INSTANCE_TYPE)]
GceMachineType = Annotated[str, StringConstraints(pattern=_GCE_MACHINE_TYPE)]
KmsKeyArn = Annotated[str, StringConstraints(pattern=_KMS_KEY_ARN)]
CloudKmsKeyName = Annotated[str, StringConstraints(pattern=_CLOUD_KMS_KEY_NAME)]
TimeOfDay = Annotated[str, StringConstraints(pattern=_TIME_OF_DAY)]
DailyOrWeeklyCron = Annotated[str, StringConstraints(pattern=DAILY_OR_WEEKLY_CRON)]
HoursMinutes = Annotated[str, StringConstraints(pattern=HOURS_MINUTES)]
IAM_PRINCIPAL_ARN = re.compile(_IAM_PRINCIPAL_ARN)
GROUP_EMAIL = re.compile(_GROUP_EMAIL)
InstanceFamily = Annotated[str, StringConstraints(pattern=_INSTANCE_FAMILY)]
InstanceCategory = Annotated[str, StringConstraints(pattern=_INSTANCE_CATEGORY)]

# What each pattern means, for error messages people can act on.
PATTERN_MEANINGS = {
    _DNS_LABEL: "lowercase letters, digits and '-', starting and ending with a letter or digit",
    _LABEL_KEY: "a Kubernetes label key: an optional DNS prefix and '/', then a name of up to"
    " 63 letters, digits, '-', '_' or '.'",
    _LABEL_VALUE: "a Kubernetes label value: up to 63 letters, digits, '-', '_' or '.'",
    _EXACT_VERSION: "an exact version such as v26.7.0 (no ranges, no 'latest')",
    _HTTPS_URL: "an https:// or oci:// URL",
    _HTTP_URL: "an http:// or https:// URL with no query or fragment, such as"
    " http://prometheus-operated.monitoring.svc:9090",
    _MIG_PROFILE: "a uniform MIG profile such as all-1g.10gb",
    _MIG_SLICE: "a MIG slice such as 1g.10gb or 1g.10gb.me",
    _CLUSTER_NAME: "letters, digits, '-' and '_', up to 100 characters",
    _GCP_LOCATION: "a GCP region such as us-central1 or a zone such as us-central1-a",
    _IMAGE_NAME_PATTERN: (
        "an image name pattern, registry/path/image, with at most a trailing * (one level) or"
        " ** (every level below), such as us-docker.pkg.dev/acme/images/**"
    ),
    _GCP_SERVICE_ACCOUNT: "a service account e-mail such as"
    " gpu-nodes@my-project.iam.gserviceaccount.com",
    _OPERATOR_CHART_VERSION: "a gpu-operator chart version such as v26.7.0: 'v', then"
    " major.minor.patch (no ranges, no 'latest')",
    _NOT_BLANK: "a value that is not empty or blank",
    _IAM_ROLE_ARN: "an IAM role ARN such as arn:aws:iam::123456789012:role/gpu-nodes (partition"
    " aws only, whose ARNs docs/iam's documents name; a 12-digit account id)",
    _AMI_RELEASE: "an EKS-optimized AMI release: 1.33.4-20251016 on AL2023 (Kubernetes version,"
    " build date) or 1.52.0-0d4a7f31 on Bottlerocket (version, build commit)",
    _SUBNET_ID: "a subnet id: 'subnet-' and 8 or 17 hex digits, such as subnet-0123456789abcdef0",
    _SECURITY_GROUP_ID: "a security group id: 'sg-' and 8 or 17 hex digits, such as"
    " sg-0123456789abcdef0",
    _CAPACITY_RESERVATION_ID: "a capacity reservation id: 'cr-' and 17 hex digits,"
    " such as cr-0123456789abcdef0",
    _RESOURCE_GROUP_ARN: "a resource group ARN such as"
    " arn:aws:resource-groups:us-east-1:123456789012:group/gpu-reservations",
    _GCE_RESERVATION_NAME: "a Compute Engine reservation name (lowercase letters, digits and"
    " '-', starting with a letter, up to 63 characters), or projects/<project>/reservations/"
    "<name> for one another project shares",
    _GKE_NODE_VERSION: "a GKE version such as 1.34.1-gke.1829001",
    _EKS_ADDON_VERSION: "an EKS add-on version such as v1.7.0-eksbuild.1",
    _DRIVER_VERSION: "an NVIDIA driver version such as 595.91.07",
    _EC2_INSTANCE_TYPE: "an EC2 instance type such as m7i.xlarge",
    _GCE_MACHINE_TYPE: "a Compute Engine machine type such as e2-standard-4",
    _KMS_KEY_ARN: "a KMS key ARN of the aws partition such as"
    " arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    _CLOUD_KMS_KEY_NAME: "a Cloud KMS key's resource name such as"
    " projects/my-project/locations/us-central1/keyRings/gke/cryptoKeys/secrets",
    _TIME_OF_DAY: "a time of day in UTC, HH:MM, such as 03:00",
    DAILY_OR_WEEKLY_CRON: "a cron schedule 'minute hour * * day-of-week', the day 0-6 (0 is"
    " Sunday) or * for every day, such as 0 2 * * 6",
    HOURS_MINUTES: "hours and minutes such as 4h, 90m or 1h30m",
    _INSTANCE_FAMILY: "an EC2 instance family such as g6 or p5en (no size)",
    _INSTANCE_CATEGORY: "an EC2 instance category such as g or p (letters only)",
}


def _image_tag(version: str) -> str:
    """An exact version that is an image tag too, as the policy pack holds the platform's
    releases' tags to (`platform_values.IMAGE_TAG`): a SemVer build (`+build.1`) is none."""
    if not re.fullmatch(IMAGE_TAG, version):
        raise PydanticCustomError(
            "image_tag",
            "an image tag such as v1.35.2: letters, digits, '_', '.' and '-', up to 128,"
            " from a letter, digit or '_' (no '+': an image reference cannot hold a SemVer"
            " build)",
        )
    return version


ExactImageTag = Annotated[ExactVersion, AfterValidator(_image_tag)]
"""An exact version (`ExactVersion`) that names an image by its tag."""


def _one_of(allowed: Sequence[str], error_type: str, expected: str) -> AfterValidator:
    """A validator of a name among `allowed`, whose error says `expected` with `{allowed}`
    filled in."""

    def check(name: str) -> str:
        if name not in allowed:
            raise PydanticCustomError(error_type, expected, {"allowed": ", ".join(allowed)})
        return name

    return AfterValidator(check)


AcceleratorName = Annotated[
    str,
    _one_of(list(ACCELERATORS), "unknown_accelerator", "one of {allowed}"),
    WithJsonSchema({"type": "string", "enum": list(ACCELERATORS)}),
]


MigSlice = Annotated[
    str,
    StringConstraints(pattern=_MIG_SLICE),
    _one_of(MIG_SLICES, "unknown_mig_slice", "a MIG slice of a GPU the platform knows: {allowed}"),
    WithJsonSchema({"type": "string", "enum": list(MIG_SLICES)}),
]
"""A MIG slice as its resource is named: `1g.10gb` of `nvidia.com/mig-1g.10gb`, `1g.10gb.me` of
the profile with media engines, one of a GPU the platform knows (`gpu_platform/accelerators.py`)."""


_MOST_IDLE_MINUTES = 1440


def _minutes_or_never(value: object) -> int | str:
    if value == "never":
        return "never"
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= _MOST_IDLE_MINUTES:
        return value
    raise PydanticCustomError(
        "minutes_or_never",
        "a number of minutes from 1 to {most}, or never",
        {"most": _MOST_IDLE_MINUTES},
    )


IdleMinutesOrNever = Annotated[
    int | str,
    PlainValidator(_minutes_or_never),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": _MOST_IDLE_MINUTES},
                {"const": "never"},
            ]
        }
    ),
]
"""Minutes a node may sit empty, 1 to 1440, or `never`."""


class Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        extra="forbid",
        frozen=True,
        validate_default=True,
        # Field docstrings become descriptions, from which the config reference is generated.
        use_attribute_docstrings=True,
    )

    def __init__(self, /, **data: Any) -> None:
        """Built in code, each field by its name (`gpus_per_node=1`) or its stack file key
        (`gpusPerNode`), as strictly as the stack file's loader reads it (`max=True` is not
        a number), a bad value reported as it reports one: a `ConfigError` naming the field
        (`GpuPoolSpec.max`), the value and what is allowed."""
        path_of = _path_in(type(self))
        not_plain = list(not_plain_problems(data, (), path_of))
        if not_plain:
            raise ConfigError(not_plain)
        try:
            self.__pydantic_validator__.validate_json(
                json.dumps(_as_json(data), default=str),
                strict=True,
                by_alias=True,
                by_name=True,
                self_instance=self,
            )
        except ValidationError as error:
            raise ConfigError(_built_problems(type(self), error, path_of)) from None

    # Validation builds a nested model without calling its `__init__` only where that is
    # marked as pydantic's own, as RootModel marks its (pydantic 2.14.3 root_model.py,
    # _model_construction.py `__pydantic_custom_init__`): else every nested model would raise
    # its own ConfigError mid-validation, and the loader could not report all at once.
    __init__.__pydantic_base_init__ = True  # type: ignore[attr-defined]

    if not TYPE_CHECKING:
        # Reached only where normal lookup fails: a field that the loader left out of a model
        # as invalid (`set_aside`; pydantic keeps no class attribute for a field).
        def __getattr__(self, name: str) -> Any:
            if name in type(self).model_fields:
                raise SetAsideKeyRead(type(self), name)
            return super().__getattr__(name)


class SetAsideKeyRead(AttributeError):
    """A rule read a field that was left out of its model as invalid: whatever it would say
    depends on a value the report has refused already. An AttributeError, as the model has no
    such attribute: `hasattr` says False rather than raising."""

    def __init__(self, model: type[BaseModel], field: str):
        super().__init__(f"{model.__name__}.{field} was set aside as invalid")


def _path_in(model: type[BaseModel]) -> Callable[..., str]:
    """How a problem of a model built in code names its field: `GpuPoolSpec.max`."""

    def path_of(*loc: str | int) -> str:
        within = key_path(*loc).removeprefix(CONFIG_NAMESPACE + ":")
        return f"{model.__name__}.{within}" if within else model.__name__

    return path_of


def _built_problems(
    model: type[BaseModel], error: ValidationError, path_of: Callable[..., str]
) -> Iterator[ConfigProblem]:
    """The problems pydantic found in a model built in code; an unknown field of the model
    itself with the nearest of its fields' names."""
    for e in error.errors(include_url=False):
        loc = [part for part in e["loc"] if part != "[key]"]
        if e["type"] == "extra_forbidden":
            guess = difflib.get_close_matches(str(loc[-1]), model.model_fields, n=1)
            expected = "no such key"
            if len(loc) == 1 and guess:
                expected += f"; did you mean {path_of(guess[0])}?"
        else:
            expected = expectation(e["type"], e["msg"], e.get("ctx", {}))
        yield ConfigProblem(
            path_of(*loc), MISSING if e["type"] == "missing" else e["input"], expected
        )


_EXPECTATION_PREFIXES = ("Input should be ", "Value should ", "String should ")


def expectation(kind: str, message: str, ctx: Mapping[str, Any]) -> str:
    """What a field allows, in words, from what pydantic says of a value it refused."""
    if kind == "missing":
        return "a value"
    if kind == "string_pattern_mismatch":
        return PATTERN_MEANINGS[ctx["pattern"]]
    if kind == "union_tag_invalid":
        return f"one of {ctx['expected_tags']}"
    for prefix in _EXPECTATION_PREFIXES:
        if message.startswith(prefix):
            return message.removeprefix(prefix)
    return message[0].lower() + message[1:]


def _as_json(value: Any) -> Any:
    """`value` as the stack file would give it: a model by the keys that were set in it."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, Mapping):
        return {key: _as_json(v) for key, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_as_json(v) for v in value]
    return value


class Cloud(StrEnum):
    AWS = "aws"
    GCP = "gcp"


class Platform(StrEnum):
    """Cloud and node operating system together: they decide how drivers reach the GPUs."""

    EKS_AL2023 = "eks-al2023"
    EKS_BOTTLEROCKET = "eks-bottlerocket"
    GKE_COS = "gke-cos"
    GKE_UBUNTU = "gke-ubuntu"


NODE_IMAGES: Mapping[Cloud, tuple[str, ...]] = {
    Cloud.AWS: ("al2023", "bottlerocket"),
    Cloud.GCP: ("cos", "ubuntu"),
}

AUTO_MODE_NODE_IMAGE = "bottlerocket"
"""What EKS Auto Mode's nodes run: its own AMIs, Bottlerocket required (EKS user guide,
automode/auto-mng.adoc), with the NVIDIA driver and device plugin in them
(auto-accelerated.adoc)."""

Provisioner = Literal["cluster-autoscaler", "karpenter", "eks-auto-mode"]
"""What launches an EKS stack's GPU nodes (`provisioner`)."""
