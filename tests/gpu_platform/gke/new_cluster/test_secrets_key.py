"""Secrets of the cluster the platform creates, encrypted at the application layer with a Cloud
KMS key, as GKE's "Encrypt secrets at the application layer"
(https://cloud.google.com/kubernetes-engine/docs/how-to/encrypting-secrets) has it: a key in the
cluster's location, the GKE service agent
(`service-<project number>@container-engine-robot.iam.gserviceaccount.com`) granted
`roles/cloudkms.cryptoKeyEncrypterDecrypter` on it, and the cluster's
`databaseEncryption: {state: ENCRYPTED, keyName}` (container.v1 `DatabaseEncryption`)."""

from collections.abc import Callable
from typing import Any

import pytest

from gpu_platform.cli.offline import Plan

from ..plans import problems_of
from .plans import CLUSTER, CRYPTO_KEY, IAM_MEMBER, KEY_MEMBER, KEY_RING, cluster, with_gcp

Config = dict[str, Any]
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
