"""Secrets of the cluster the platform creates, encrypted at the application layer with a Cloud
KMS key, as GKE's "Encrypt secrets at the application layer"
(https://cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets) has it: a key in the
cluster's location, the GKE service agent
(`service-<project number>@container-engine-robot.iam.gserviceaccount.com`) granted
`roles/cloudkms.cryptoKeyEncrypterDecrypter` on it, and the cluster's
`databaseEncryption: {state: ENCRYPTED, keyName}` (container.v1 `DatabaseEncryption`)."""

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.gke.new_cluster.secrets_key import key_ring_condition
from gpu_platform.offline.program import Plan
from tests.gpu_platform.gke.new_cluster.hardening_invariants import allows
from tests.repository import ROOT

from ..plans import problems_of
from .plans import CLUSTER, CRYPTO_KEY, IAM_MEMBER, KEY_MEMBER, KEY_RING, cluster, with_gcp

Config = dict[str, Any]
SECRETS_KEY_ROLE = "projects/PROJECT_ID/roles/gpuPlatformSecretsKey"
USERS_KEY = "projects/acme-keys/locations/us-central1/keyRings/gke/cryptoKeys/ml-dev-secrets"


def test_secrets_are_encrypted_with_a_key_created_in_the_clusters_region(
    gke_new_plan: Plan,
) -> None:
    (ring,) = gke_new_plan.of_type(KEY_RING)
    (key,) = gke_new_plan.of_type(CRYPTO_KEY)

    assert (ring.inputs["project"], ring.inputs["location"]) == ("ml-platform-dev", "us-central1")
    assert key.inputs["keyRing"].startswith(
        "projects/ml-platform-dev/locations/us-central1/keyRings/"
    )
    assert cluster(gke_new_plan).inputs["databaseEncryption"] == {
        "state": "ENCRYPTED",
        "keyName": f"{key.inputs['keyRing']}/cryptoKeys/{key.inputs['name']}",
    }


def test_the_key_encrypts_and_rotates_every_90_days(gke_new_plan: Plan) -> None:
    (key,) = gke_new_plan.of_type(CRYPTO_KEY)

    # Cloud KMS rotates only ENCRYPT_DECRYPT keys by itself (cloudkms.v1 `CryptoKey.
    # rotationPeriod`).
    assert key.inputs["purpose"] == "ENCRYPT_DECRYPT"
    assert key.inputs["rotationPeriod"] == f"{90 * 24 * 3600}s"


def test_only_the_gke_service_agent_may_use_the_key(gke_new_plan: Plan) -> None:
    (project,) = [i for i in gke_new_plan.invokes if i.token.endswith("getProject")]
    (key,) = gke_new_plan.of_type(CRYPTO_KEY)

    (grant,) = gke_new_plan.of_type(KEY_MEMBER)

    number = project.result["number"]
    assert grant.inputs == {
        "cryptoKeyId": key.inputs["keyRing"] + "/cryptoKeys/gke-secrets",
        "role": "roles/cloudkms.cryptoKeyEncrypterDecrypter",
        "member": f"serviceAccount:service-{number}@container-engine-robot.iam.gserviceaccount.com",
    }
    # On the key only: no project-wide KMS role.
    project_roles = [m.inputs["role"] for m in gke_new_plan.of_type(IAM_MEMBER)]
    assert not [role for role in project_roles if role.startswith("roles/cloudkms.")]


def test_the_cluster_is_created_once_gke_may_use_the_key(gke_new_plan: Plan) -> None:
    # GKE refuses to create a cluster whose key its service agent cannot use.
    (grant,) = gke_new_plan.of_type(KEY_MEMBER)

    assert grant.urn in cluster(gke_new_plan).dependencies


def test_a_key_of_the_users_is_used_and_none_created(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    plan = plan_for(with_gcp(gke_new_config, secretsKmsKeyName=USERS_KEY))

    assert cluster(plan).inputs["databaseEncryption"] == {
        "state": "ENCRYPTED",
        "keyName": USERS_KEY,
    }
    assert plan.of_type(KEY_RING) == plan.of_type(CRYPTO_KEY) == plan.of_type(KEY_MEMBER) == []
    assert [r.type for r in plan.resources if r.type == CLUSTER] == [CLUSTER]


@pytest.mark.parametrize(
    ("location", "key_location"),
    [("us-central1", "global"), ("us-central1", "us"), ("us-central1-a", "us-east4")],
)
def test_a_key_of_the_users_outside_the_clusters_region_is_refused(
    gke_new_config: Config,
    failed_plan_for: Callable[[Config], Plan],
    location: str,
    key_location: str,
) -> None:
    # GKE how-to/encrypting-secrets, "Create a Cloud KMS key": a zonal cluster "can only use a
    # key in" its region, and "The Cloud KMS global region is not supported for use with GKE".
    gke_new_config["gpu-platform:cluster"]["location"] = location
    key = f"projects/acme-keys/locations/{key_location}/keyRings/gke/cryptoKeys/secrets"

    problems = problems_of(failed_plan_for(with_gcp(gke_new_config, secretsKmsKeyName=key)))

    assert problems["gpu-platform:cluster.create.gcp.secretsKmsKeyName"].startswith(
        "a key in the cluster's region, "
    )


def test_a_zonal_clusters_key_in_its_region_is_accepted(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    gke_new_config["gpu-platform:cluster"]["location"] = "us-central1-a"

    plan = plan_for(with_gcp(gke_new_config, secretsKmsKeyName=USERS_KEY))

    assert cluster(plan).inputs["databaseEncryption"]["keyName"] == USERS_KEY


def test_under_protect_the_grant_that_lets_gke_use_the_key_is_protected_and_kept(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    # Deleting a non-authoritative crypto key IAM member revokes its role, also when a
    # replacement has just stated the same member (terraform-provider-google
    # `google_kms_crypto_key_iam_member`); without the grant the cluster's Secrets are
    # unreadable (GKE how-to/encrypting-secrets).
    gke_new_config["gpu-platform:protect"] = True

    plan = plan_for(gke_new_config)

    (grant,) = plan.of_type(KEY_MEMBER)
    (key,) = plan.of_type(CRYPTO_KEY)
    assert (key.protect, grant.protect, grant.retain_on_delete) == (True, True, True)


def test_without_protect_the_grant_goes_with_the_stack(gke_new_plan: Plan) -> None:
    (grant,) = gke_new_plan.of_type(KEY_MEMBER)

    assert (grant.protect, grant.retain_on_delete) == (False, False)


# The deploy identity's Cloud KMS role is granted on the project with an IAM condition on
# `resource.name` (docs/iam/gke-deploy-create-roles.json). Cloud KMS takes resource attributes
# in conditions, its key rings' parent being the location `projects/*/locations/*` (IAM,
# "Resource attributes for IAM Conditions", https://cloud.google.com/iam/docs/
# conditions-resource-attributes: `cloud.googleapis.com/Location`, "Cloud Key Management
# Service uses this resource type as the parent of key ring resources"); a key's and a key
# version's names begin with their ring's (cloudkms.v1 `CryptoKey.name`,
# `CryptoKeyVersion.name`).
REGION = "projects/ml-platform-dev/locations/us-central1"
FIRST_UP_CONDITION = (
    f"resource.name == '{REGION}' || resource.name.startsWith('{REGION}/keyRings/ml-dev_secrets-')"
)
"""The documented condition, filled in for gke-new: the ring does not exist before the first
`up`, and Pulumi names it `ml-dev_secrets-<7 hex digits>`."""
# The stand-in names the ring `<its Pulumi name>-<7 hex digits>`, as Pulumi does.
PLANNED_RING = (
    f"{REGION}/keyRings/ml-dev_secrets-{hashlib.sha256(b'ml-dev_secrets').hexdigest()[:7]}"
)
EARLIER_RING = f"{REGION}/keyRings/cluster-secrets-9f8e7d6"
"""A ring created before rings were named after the cluster: the alias keeps it, and its name."""


def ring_and_its_key(ring: str) -> list[str]:
    """What the deploy identity's Cloud KMS role acts on for the stack: the location a ring is
    created in (`cloudkms.keyRings.create`), the ring (`keyRings.get`), its key and a version."""
    return [
        REGION,
        ring,
        f"{ring}/cryptoKeys/gke-secrets",
        f"{ring}/cryptoKeys/gke-secrets/cryptoKeyVersions/3",
    ]


def test_the_stack_exports_the_condition_on_its_rings_own_name(gke_new_plan: Plan) -> None:
    assert gke_new_plan.outputs["secretsKeyCondition"] == (
        f"resource.name == '{REGION}' || resource.name == '{PLANNED_RING}'"
        f" || resource.name.startsWith('{PLANNED_RING}/')"
    )


@pytest.mark.parametrize("ring", [PLANNED_RING, EARLIER_RING])
def test_the_exported_condition_holds_the_ring_of_either_name_and_its_key(ring: str) -> None:
    # A stack whose ring has the earlier name keeps it (the alias): the condition is built from
    # the ring's resource name, not from the cluster's, so that ring is not refused.
    condition = key_ring_condition(ring)

    assert [allows(condition, name) for name in ring_and_its_key(ring)] == [True] * 4
    # A ring whose name begins with this one's is another ring.
    assert not allows(condition, f"{ring}0/cryptoKeys/gke-secrets")


def test_the_documented_condition_is_the_first_ups_with_its_project_region_and_cluster() -> None:
    roles = json.loads((ROOT / "docs" / "iam" / "gke-deploy-create-roles.json").read_text())
    template = roles["conditions"][SECRETS_KEY_ROLE]["expression"]

    filled = (
        template.replace("PROJECT_ID", "ml-platform-dev")
        .replace("REGION", "us-central1")
        .replace("CLUSTER_NAME", "ml-dev")
    )

    assert filled == FIRST_UP_CONDITION


def test_the_ring_the_first_up_creates_falls_under_the_documented_condition(
    gke_new_plan: Plan,
) -> None:
    (ring,) = gke_new_plan.of_type(KEY_RING)

    assert ring.name == "ml-dev_secrets"
    for name in ring_and_its_key(PLANNED_RING):
        assert allows(FIRST_UP_CONDITION, name), name


def test_the_ring_is_named_by_pulumi(gke_new_plan: Plan) -> None:
    # A KeyRing's `name` cannot change in place (terraform-provider-google
    # google_kms_key_ring: every field ForceNew; Cloud KMS has no key ring update): naming it
    # would replace every stack's ring, and its key, with it. Pulumi's own name, kept under the
    # alias, is what the exported condition reads back from the ring.
    (ring,) = gke_new_plan.of_type(KEY_RING)

    assert "name" not in ring.inputs


@pytest.mark.parametrize(
    "resource_name",
    [
        # Another key ring of the project, and its key.
        f"{REGION}/keyRings/payments",
        f"{REGION}/keyRings/payments/cryptoKeys/db",
        # Another cluster's ring: its name has the `_` no cluster name has right after it.
        f"{REGION}/keyRings/ml-dev-2_secrets-1a2b3c4/cryptoKeys/gke-secrets",
        # A ring of the earlier name, the same for every stack.
        f"{REGION}/keyRings/cluster-secrets-1a2b3c4/cryptoKeys/gke-secrets",
        # The stack's name in another region, and another project.
        "projects/ml-platform-dev/locations/europe-west4/keyRings/ml-dev_secrets-1a2b3c4",
        "projects/ml-platform-prod/locations/us-central1/keyRings/ml-dev_secrets-1a2b3c4",
        # Another project's location.
        "projects/ml-platform-prod/locations/us-central1",
    ],
)
def test_the_conditions_keep_the_kms_role_off_every_other_key(resource_name: str) -> None:
    assert not allows(FIRST_UP_CONDITION, resource_name)
    assert not allows(key_ring_condition(PLANNED_RING), resource_name)


def test_a_ring_of_the_earlier_name_is_kept_by_an_alias(gke_new_plan: Plan) -> None:
    (ring,) = gke_new_plan.of_type(KEY_RING)

    # Of the same parent (an empty `parentUrn`: pulumi's alias spec takes the resource's own).
    assert ring.aliases == ({"spec": {"name": "cluster-secrets", "parentUrn": ""}},)


def test_with_a_key_of_the_users_no_condition_is_exported(
    gke_new_config: Config, plan_for: Callable[[Config], Plan]
) -> None:
    plan = plan_for(with_gcp(gke_new_config, secretsKmsKeyName=USERS_KEY))

    assert "secretsKeyCondition" not in plan.outputs
