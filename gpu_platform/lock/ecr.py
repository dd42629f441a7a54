"""Credentials for Amazon ECR's private registries (`<account>.dkr.ecr.<region>.amazonaws.com`),
which answer no anonymous call: EKS's own images, the EFA device plugin's among them, live in
such a registry, readable by any AWS account but only with AWS credentials.

ECR's `GetAuthorizationToken` (Amazon ECR API Reference, "GetAuthorizationToken") gives a
base64 `AWS:<password>`, the Basic credentials its registries take for twelve hours
(`docker login -u AWS`, "Private registry authentication" in the ECR User Guide). The token is
asked of the registry's own region with whatever credentials boto3 finds (environment, profile,
the OIDC role the lock refresh workflow may assume); where it finds none, the image is left to a
run that has them (`NoCredentials`), not failed: `gpu-platform lock` says so and goes on.
"""

import re

from gpu_platform.deadline import (
    CONNECT_TIMEOUT_SECONDS,
    MAX_ATTEMPTS,
    READ_TIMEOUT_SECONDS,
)

ECR_HOST = re.compile(r"(\d{12})\.dkr\.ecr(?:-fips)?\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?")


class NoCredentials(Exception):
    """The registry takes only AWS credentials, and none were found."""


class CredentialsRefused(Exception):
    """AWS credentials were found, and ECR gave no token with them."""


class EcrCredentials:
    """Basic credentials for an ECR registry host, one token per region; None for any other
    host."""

    def __init__(self) -> None:
        self._tokens: dict[str, str] = {}

    def __call__(self, host: str) -> str | None:
        match = ECR_HOST.fullmatch(host)
        if match is None:
            return None
        region = match.group(2)
        if region not in self._tokens:
            self._tokens[region] = _token(region)
        return self._tokens[region]


def _token(region: str) -> str:
    # Imported here: GKE's preflight reads the lock too, and imports neither boto3 nor botocore
    # (tests/gpu_platform/cli/test_imports.py).
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    session = boto3.Session(region_name=region)
    if session.get_credentials() is None:
        raise NoCredentials(
            "the registry is Amazon ECR's, which takes AWS credentials only, and none were"
            " found: run `gpu-platform lock` with AWS credentials (any account's, allowed"
            " ecr:GetAuthorizationToken) to read its digest"
        )
    try:
        # Preflight's rules for every call (gpu_platform/deadline.py, docs/deploy.md), within
        # the command's own deadline, which bounds the whole run (Deadline.run). As in
        # eks/preflight/checks.py, `total_max_attempts` counts the first attempt
        # (botocore/config.py).
        config = Config(
            connect_timeout=CONNECT_TIMEOUT_SECONDS,
            read_timeout=READ_TIMEOUT_SECONDS,
            retries={"mode": "standard", "total_max_attempts": MAX_ATTEMPTS},
        )
        answer = session.client("ecr", config=config).get_authorization_token()
        return str(answer["authorizationData"][0]["authorizationToken"])
    except (BotoCoreError, ClientError, KeyError, IndexError) as error:
        raise CredentialsRefused(
            f"ECR's GetAuthorizationToken in {region} gave no token: {error}"
        ) from error
