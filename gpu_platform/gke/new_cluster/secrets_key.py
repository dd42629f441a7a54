"""The Cloud KMS key a GKE cluster the platform creates encrypts its Secrets with: GKE's
application-layer Secrets encryption (how-to/encrypting-secrets), envelope encryption in which
the key in Cloud KMS wraps the data keys that encrypt each Secret before it is stored, so that a
copy of the cluster's database alone does not reveal them.

Unless `cluster.create.gcp.secretsKmsKeyName` names a key of the user's, the platform creates a
key ring and a key in the cluster's region (GKE how-to/encrypting-secrets: a regional cluster
uses a key ring of its location, a zonal one of its region, and "The Cloud KMS global region is
not supported for use with GKE"), and grants the GKE service agent of the cluster's project
(`service-<project number>@container-engine-robot.iam.gserviceaccount.com`) the encrypter and
decrypter role on that key only; GKE checks that grant when it creates the cluster, so the
cluster waits for it.

Cloud KMS deletes neither key rings nor keys: `pulumi destroy` forgets them and schedules the
key's versions for destruction (pulumi-gcp `kms.CryptoKey`). The ring is named by Pulumi, with a
random suffix, so that a stack created again after a destroy does not collide with the ring it
left behind.
"""

from dataclasses import dataclass, field

import pulumi
from pulumi_gcp import kms, organizations

from gpu_platform.config import GkeClusterCreate
from gpu_platform.gke.cluster import GkeCluster

ENCRYPTER_DECRYPTER_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
KEY_PURPOSE = "ENCRYPT_DECRYPT"
KEY_ROTATION_PERIOD = "7776000s"
"""90 days: Cloud KMS makes a new primary version that often (only ENCRYPT_DECRYPT keys rotate
automatically), and GKE encrypts new data keys with it; older versions still decrypt."""
KEY_NAME = "gke-secrets"


def gke_service_agent(project_number: str) -> str:
    """The GKE service agent of a project: the identity GKE's control plane calls Cloud KMS as."""
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"


@dataclass(frozen=True)
class SecretsKey:
    """The key the cluster encrypts Secrets with, and what the cluster must wait for."""

    name: pulumi.Input[str]
    """Its resource name, `projects/*/locations/*/keyRings/*/cryptoKeys/*`."""
    grants: list[pulumi.Resource] = field(default_factory=list)


def secrets_key(
    name: str,
    cluster: GkeCluster,
    gcp: GkeClusterCreate,
    protect: bool,
    parent: pulumi.Resource,
) -> SecretsKey:
    if gcp.secrets_kms_key_name is not None:
        return SecretsKey(gcp.secrets_kms_key_name)
    protected = pulumi.ResourceOptions(parent=parent, protect=protect)
    ring = kms.KeyRing(
        f"{name}-secrets", project=cluster.project, location=cluster.region, opts=protected
    )
    key = kms.CryptoKey(
        f"{name}-secrets-key",
        name=KEY_NAME,
        key_ring=ring.id,
        purpose=KEY_PURPOSE,
        rotation_period=KEY_ROTATION_PERIOD,
        labels={"managed-by": "gpu-platform"},
        opts=protected,
    )
    project = organizations.get_project_output(project_id=cluster.project)
    grant = kms.CryptoKeyIAMMember(
        f"{name}-secrets-gke",
        crypto_key_id=key.id,
        role=ENCRYPTER_DECRYPTER_ROLE,
        member=project.number.apply(gke_service_agent),
        # Without the grant GKE cannot unwrap the Secrets' data keys, as without the key: it is
        # protected with the key, and kept when deleted (a replacement creates the new member
        # before deleting the old, and that delete would revoke the role the new one states).
        opts=pulumi.ResourceOptions(parent=parent, protect=protect, retain_on_delete=protect),
    )
    return SecretsKey(key.id, [grant])
