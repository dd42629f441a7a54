"""The IAM evaluator the documents' tests rest on, against the behaviours the IAM User Guide
states (pages named in `tests/iam_policy.py`)."""

from tests.iam_policy import Request, allowed, arn_matches

ROLE = "arn:aws:iam::111111111111:role/ml-prod.pool-a100"


def _policy(*statements: dict) -> dict:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def _allow(action: str, resource: str, condition: dict | None = None) -> dict:
    statement = {"Effect": "Allow", "Action": action, "Resource": resource}
    return statement | ({"Condition": condition} if condition else {})


def test_a_request_no_statement_allows_is_denied() -> None:
    assert not allowed(Request("iam:CreateRole", ROLE), [_policy(_allow("iam:GetRole", "*"))])


def test_an_explicit_deny_wins_over_an_allow() -> None:
    policy = _policy(
        _allow("iam:*", "*"), {"Effect": "Deny", "Action": "iam:CreateRole", "Resource": "*"}
    )

    assert not allowed(Request("iam:CreateRole", ROLE), [policy])
    assert allowed(Request("iam:GetRole", ROLE), [policy])


def test_actions_match_case_insensitively_with_wildcards() -> None:
    assert allowed(Request("IAM:getRole", ROLE), [_policy(_allow("iam:Get*", "*"))])


def test_a_boundary_caps_what_the_identity_policies_allow() -> None:
    # "Permissions boundaries for IAM entities": iam:CreateUser allowed by the identity policy,
    # not by a boundary that allows only S3 and CloudWatch: denied.
    identity = _policy(_allow("iam:CreateUser", "*"))
    boundary = _policy(_allow("s3:*", "*"), _allow("cloudwatch:*", "*"))

    assert allowed(Request("iam:CreateUser", "arn:aws:iam::1:user/x"), [identity])
    assert not allowed(Request("iam:CreateUser", "arn:aws:iam::1:user/x"), [identity], boundary)


def test_arn_wildcards_stay_within_their_part() -> None:
    assert arn_matches("arn:aws:iam::*:role/ml-*", ROLE)
    assert not arn_matches("arn:aws:iam::222222222222:role/*", ROLE)
    assert not arn_matches("arn:aws:ec2:*:*:instance/*", "arn:aws:ec2:us-east-1:1:volume/vol-1")


def test_a_missing_key_fails_an_equality_and_passes_if_exists() -> None:
    condition = {"StringEquals": {"iam:PermissionsBoundary": "arn:aws:iam::1:policy/b"}}
    if_exists = {"StringEqualsIfExists": {"iam:PermissionsBoundary": "arn:aws:iam::1:policy/b"}}

    assert not allowed(Request("iam:CreateRole", ROLE), [_policy(_allow("*", "*", condition))])
    assert allowed(Request("iam:CreateRole", ROLE), [_policy(_allow("*", "*", if_exists))])


def test_a_negated_operator_holds_when_the_key_is_missing() -> None:
    condition = {"StringNotEquals": {"iam:PassedToService": "lambda.amazonaws.com"}}

    assert allowed(Request("iam:PassRole", ROLE), [_policy(_allow("*", "*", condition))])


def test_for_all_values_holds_for_a_request_without_the_key() -> None:
    # "Condition operators", multivalued context keys: ForAllValues returns true when the key
    # is missing, which is why tag conditions pair it with a single-valued condition.
    condition = {"ForAllValues:StringEquals": {"aws:TagKeys": ["Name"]}}
    policy = _policy(_allow("ec2:CreateTags", "*", condition))

    assert allowed(Request("ec2:CreateTags", "arn:aws:ec2:r:1:instance/i-1"), [policy])
    assert allowed(
        Request("ec2:CreateTags", "arn:aws:ec2:r:1:instance/i-1", {"aws:TagKeys": ["Name"]}),
        [policy],
    )
    assert not allowed(
        Request("ec2:CreateTags", "arn:aws:ec2:r:1:instance/i-1", {"aws:TagKeys": ["Name", "x"]}),
        [policy],
    )


def test_for_any_value_fails_without_the_key() -> None:
    condition = {"ForAnyValue:StringEquals": {"aws:TagKeys": ["Name"]}}
    policy = _policy(_allow("ec2:CreateTags", "*", condition))

    assert not allowed(Request("ec2:CreateTags", "arn:aws:ec2:r:1:instance/i-1"), [policy])


def test_null_tests_whether_the_key_is_present() -> None:
    policy = _policy(_allow("*", "*", {"Null": {"aws:RequestTag/team": "false"}}))

    assert allowed(Request("ec2:CreateTags", "x", {"aws:RequestTag/team": "a"}), [policy])
    assert not allowed(Request("ec2:CreateTags", "x"), [policy])


def test_variables_take_the_requests_values_and_match_nothing_without_one() -> None:
    policy = _policy(
        _allow(
            "iam:CreateRole", "arn:aws:iam::${aws:PrincipalAccount}:role/${aws:PrincipalTag/p}.*"
        )
    )
    context = {"aws:PrincipalAccount": "111111111111", "aws:PrincipalTag/p": "ml-prod"}

    assert allowed(Request("iam:CreateRole", ROLE, context), [policy])
    assert not allowed(
        Request("iam:CreateRole", ROLE, {"aws:PrincipalAccount": "111111111111"}), [policy]
    )
    assert not allowed(
        Request("iam:CreateRole", ROLE, context | {"aws:PrincipalTag/p": "ml-dev"}), [policy]
    )


def test_variables_in_condition_values_compare_to_the_requests_values() -> None:
    condition = {"StringEquals": {"aws:ResourceTag/cluster": "${aws:PrincipalTag/cluster}"}}
    policy = _policy(_allow("ec2:DeleteLaunchTemplate", "*", condition))
    mine = {"aws:PrincipalTag/cluster": "ml-prod", "aws:ResourceTag/cluster": "ml-prod"}

    assert allowed(Request("ec2:DeleteLaunchTemplate", "x", mine), [policy])
    assert not allowed(
        Request("ec2:DeleteLaunchTemplate", "x", mine | {"aws:ResourceTag/cluster": "ml-dev"}),
        [policy],
    )


def test_a_resource_policy_allows_only_the_principals_it_names() -> None:
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "events.amazonaws.com"},
                "Action": "sqs:SendMessage",
                "Resource": "arn:aws:sqs:r:1:q",
            }
        ],
    }

    assert allowed(
        Request("sqs:SendMessage", "arn:aws:sqs:r:1:q", principal="events.amazonaws.com"), [policy]
    )
    assert not allowed(
        Request("sqs:SendMessage", "arn:aws:sqs:r:1:q", principal="sqs.amazonaws.com"), [policy]
    )


def test_arn_like_if_exists_checks_a_present_key_part_by_part_and_skips_a_missing_one() -> None:
    # "Condition operators": ArnLike matches each of an ARN's six colon-separated parts on its
    # own, the value's variable taking the request's value; "...IfExists": "If the key is not
    # present, evaluate the condition element as true". The boundary's network interface
    # statement rests on both: an existing interface always has `ec2:Vpc`, the one
    # CreateNetworkInterface creates has none (its subnet and security groups have).
    vpc = {"ArnLikeIfExists": {"ec2:Vpc": "arn:aws:ec2:*:*:vpc/${aws:PrincipalTag/vpc}"}}
    policy = _policy(_allow("ec2:RunInstances", "*", vpc))
    mine = {"aws:PrincipalTag/vpc": "vpc-1"}

    def launch(context: dict) -> bool:
        return allowed(Request("ec2:RunInstances", "arn:aws:ec2:r:1:subnet/s", context), [policy])

    assert launch(mine | {"ec2:Vpc": "arn:aws:ec2:us-east-1:1:vpc/vpc-1"})
    assert not launch(mine | {"ec2:Vpc": "arn:aws:ec2:us-east-1:1:vpc/vpc-2"})
    assert not launch(mine | {"ec2:Vpc": "arn:aws:ec2:us-east-1:1:vpc/vpc-1:x"})
    assert launch(mine)
    assert not launch({"ec2:Vpc": "arn:aws:ec2:us-east-1:1:vpc/vpc-1"})
