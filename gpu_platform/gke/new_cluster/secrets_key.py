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
left behind; what comes before the suffix is the cluster's name and `_secrets-`, fixed before
the ring exists, so that the deploy identity's Cloud KMS role can be held to the stack's rings
by an IAM condition on that prefix for the first `up` (docs/iam/gke-deploy-create-roles.json).
GKE cluster names take no `_` (lowercase letters, digits and hyphens), so no other cluster's ring
shares it. Once the ring exists, the stack exports a narrower condition, on the ring's own
resource name (`key_ring_condition`), which also holds a ring created under an earlier name.
"""

from dataclasses import dataclass, field

import pulumi
from pulumi_gcp import kms, organizations

from gpu_platform.config import GkeClusterCreate
from gpu_platform.gke.cluster import GkeCluster
from gpu_platform.instance import lookup_provider

ENCRYPTER_DECRYPTER_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
KEY_PURPOSE = "ENCRYPT_DECRYPT"
KEY_ROTATION_PERIOD = "7776000s"
"""90 days: Cloud KMS makes a new primary version that often (only ENCRYPT_DECRYPT keys rotate
automatically), and GKE encrypts new data keys with it; older versions still decrypt."""
KEY_NAME = "gke-secrets"
RING_SUFFIX = "_secrets"
"""What the ring's Pulumi name adds to the cluster's name; Pulumi's random suffix follows after a
`-`."""
EARLIER_RING = "-secrets"
"""What the ring's Pulumi name added to the component's (`cluster`) in earlier releases: the
same name for every stack, which no condition could tell apart. The alias keeps such a ring (and
its name) in the stack rather than replace it and its key."""


def key_ring_condition(ring: str) -> str:
    """The IAM condition that holds the deploy identity's Cloud KMS role to the ring whose
    resource name is `ring` (`projects/<project>/locations/<region>/keyRings/<name>`, the
    KeyRing's id: pulumi-gcp kms/key_ring.py's import format), the ring itself
    (`cloudkms.keyRings.get`), its keys and key versions (whose resource names begin with the
    ring's and a `/`: cloudkms.v1 `CryptoKey.name`, `CryptoKeyVersion.name`), and its region:
    creating a ring is checked on its parent location, `projects/<project>/locations/<region>`
    (IAM, "Resource attributes for IAM Conditions": Cloud KMS takes
    `cloud.googleapis.com/Location` as the parent of key rings, and its resource names are among
    those a condition reads)."""
    location = ring.split("/keyRings/")[0]
    return (
        f"resource.name == '{location}' || resource.name == '{ring}'"
        f" || resource.name.startsWith('{ring}/')"
    )


def gke_service_agent(project_number: str) -> str:
    """The GKE service agent of a project: the identity GKE's control plane calls Cloud KMS as."""
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"


@dataclass(frozen=True)
class SecretsKey:
    """The key the cluster encrypts Secrets with, and what the cluster must wait for."""

    name: pulumi.Input[str]
    """Its resource name, `projects/*/locations/*/keyRings/*/cryptoKeys/*`."""
    grants: list[pulumi.Resource] = field(default_factory=list)
    condition: pulumi.Output[str] | None = None
    """Where the platform creates the key: the IAM condition on the deploy identity's Cloud KMS
    role once the ring exists (`key_ring_condition`)."""


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
        f"{cluster.name}{RING_SUFFIX}",
        project=cluster.project,
        location=cluster.region,
        opts=pulumi.ResourceOptions.merge(
            protected, pulumi.ResourceOptions(aliases=[pulumi.Alias(name=f"{name}{EARLIER_RING}")])
        ),
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
    project = organizations.get_project_output(
        project_id=cluster.project,
        opts=pulumi.InvokeOutputOptions(provider=lookup_provider("gcp")),
    )
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
    return SecretsKey(key.id, [grant], ring.id.apply(key_ring_condition))
