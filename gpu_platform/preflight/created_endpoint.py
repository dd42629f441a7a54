"""Where `pulumi up` must run from to reach a cluster it creates: the same run installs the GPU
Operator, monitoring and the tenants through the new cluster's API, right after the cluster
exists, so an address the endpoint does not answer fails halfway (the cluster built, the platform
not). One finding for EKS and GKE, each naming its own network and fix."""

from gpu_platform.config import EndpointAccess
from gpu_platform.preflight.findings import Finding


def endpoint_finding(
    endpoint: EndpointAccess, subject: str, *, api: str, also_answers: str, private: str, fix: str
) -> Finding:
    """`api` answers publicly only the endpoint's CIDRs (and `also_answers`); a private one
    only inside the network (`private`, what the warning says of it), hence `fix`."""
    if endpoint.access == "public":
        return Finding(
            "ok",
            subject,
            f"{api} answers publicly only {', '.join(endpoint.public_cidrs)} ({also_answers}).",
            "Run `pulumi up` from an address in those ranges.",
        )
    return Finding("warning", subject, private, fix)
