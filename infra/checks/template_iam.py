"""check_template's first check, least privilege: every Allow statement the
template writes or SAM generates names its actions and resources, and
every policy document states its version; exceptions are justified here."""

from __future__ import annotations

import copy
import logging
import os
import re

from template_refs import FUNCTION, alternatives, functions, items, ref, texts

# ---------------------------------------------------------------------------
# Justified exceptions. Keep each reason a sentence an auditor can check.
# ---------------------------------------------------------------------------

# Allow statements with a wildcard, by (resource logical id, statement Sid).
JUSTIFIED_STATEMENTS: dict[tuple[str, str], str] = {}

# AWS managed policies (name after `arn:<partition>:iam::aws:policy/`).
JUSTIFIED_MANAGED_POLICIES: dict[str, str] = {
    "service-role/AWSLambdaBasicExecutionRole": (
        "SAM attaches it to every function role it generates: create log "
        "streams and put log events, on any log group (it cannot read "
        "logs); narrowing it would take a hand-written role per function"
    ),
    "AWSXrayWriteOnlyAccess": (
        "SAM attaches it for Tracing: Active; X-Ray's write actions have no "
        "resource-level permissions"
    ),
}


# ---------------------------------------------------------------------------
# 1. Least privilege
# ---------------------------------------------------------------------------


def wildcard_resource(resource: str) -> bool:
    if resource.strip() == "*":
        return True
    if not resource.startswith("arn:"):
        return False  # a reference, maybe with a suffix inside it
    # ${AWS::Region} and the like hold colons of their own.
    parts = re.sub(r"\$\{[^}]*\}", "REF", resource).split(":", 5)
    if len(parts) < 6:
        return "*" in resource
    _, _, service, region, account, name = parts
    if "*" in service or "*" in region or "*" in account:
        return True
    segments = re.split(r"[/:]", name)
    # s3: the bucket is the first segment; elsewhere type/name or name.
    head = segments[:1] if service == "s3" else segments[:2]
    return any("*" in s for s in head)


def statement_problems(owner: str, statement) -> list[str]:
    if not isinstance(statement, dict):
        return [f"{owner}: a statement that is not a mapping: {statement!r}"]
    if statement.get("Effect") == "Deny":
        return []
    sid = statement.get("Sid", "")
    label = f"{owner}: statement {sid}" if sid else f"{owner}: a statement"
    found = []
    for key in ("NotAction", "NotResource", "NotPrincipal"):
        if key in statement:
            found.append(f"{key} (allows everything else)")
    for action in texts(statement.get("Action", [])):
        if "*" in action:
            found.append(f"action {action}")
    for resource in texts(statement.get("Resource", [])):
        if wildcard_resource(resource):
            found.append(f"resource {resource}")
    principal = statement.get("Principal")
    if principal is not None:
        values = principal.values() if isinstance(principal, dict) else [principal]
        if any("*" in texts(v) for v in values):
            found.append("principal *")
    if not found:
        return []
    if (owner.split(" ")[0], sid) in JUSTIFIED_STATEMENTS:
        return []
    return [
        f"{label} allows {', '.join(found)}: name the actions and resources it "
        "needs, or justify it in JUSTIFIED_STATEMENTS "
        "(infra/checks/check_template.py) under its resource and Sid"
    ]


def document_problems(owner: str, document) -> list[str]:
    found = []
    for doc in alternatives(document):
        if not isinstance(doc, dict) or "Statement" not in doc:
            found.append(f"{owner}: a policy document without Statement")
            continue
        for statement in items(doc["Statement"]):
            found.extend(statement_problems(owner, statement))
    return found


def managed_policy_problems(owner: str, arn, resources: dict) -> list[str]:
    name = ref(arn)
    if name is not None and resources.get(name, {}).get("Type") == "AWS::IAM::ManagedPolicy":
        return []  # checked as a resource of its own
    found = []
    for text in texts(arn):
        if ":iam::aws:policy/" in text:
            policy = text.split(":iam::aws:policy/", 1)[1]
        elif "/" not in text and ":" not in text and "$" not in text:
            policy = text  # SAM takes an AWS managed policy by its name
        else:
            found.append(
                f"{owner}: managed policy {text} cannot be checked here: write its "
                "statements into the template"
            )
            continue
        if policy not in JUSTIFIED_MANAGED_POLICIES:
            found.append(
                f"{owner}: AWS managed policy {policy} is not known to be narrow: "
                "write the statements it needs instead, or justify it in "
                "JUSTIFIED_MANAGED_POLICIES (infra/checks/check_template.py)"
            )
    return found


def iam_problems(template: dict) -> list[str]:
    """Allow statements and managed policies written in the template."""
    resources = template.get("Resources", {})
    found = []
    for rid, resource in resources.items():
        kind = resource.get("Type")
        props = resource.get("Properties", {}) or {}
        if kind == FUNCTION:
            if "Role" in props:
                found.append(f"{rid}: Role is set, so its policies are not checked here")
                continue
            for policy in items(props.get("Policies", [])):
                if isinstance(policy, dict) and "Statement" in policy:
                    found.extend(document_problems(rid, policy))
                elif isinstance(policy, str) or ref(policy) is not None:
                    found.extend(managed_policy_problems(rid, policy, resources))
                elif isinstance(policy, dict) and len(policy) == 1:
                    (template_name,) = policy
                    found.append(
                        f"{rid}: SAM policy template {template_name} cannot be "
                        "checked here: write its statements out"
                    )
                else:
                    found.append(f"{rid}: a policy this check does not understand: {policy!r}")
        elif kind in ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"):
            for policy in items(props.get("Policies", [])):
                name = policy.get("PolicyName", "?") if isinstance(policy, dict) else "?"
                found.extend(
                    document_problems(f"{rid} (policy {name})", policy.get("PolicyDocument"))
                )
            for arn in items(props.get("ManagedPolicyArns", [])):
                found.extend(managed_policy_problems(rid, arn, resources))
        elif kind in (
            "AWS::IAM::Policy",
            "AWS::IAM::ManagedPolicy",
            "AWS::S3::BucketPolicy",
            "AWS::SQS::QueuePolicy",
            "AWS::SNS::TopicPolicy",
        ):
            found.extend(document_problems(rid, props.get("PolicyDocument")))
        elif kind == "AWS::SecretsManager::ResourcePolicy":
            found.extend(document_problems(rid, props.get("ResourcePolicy")))
    return found


POLICY_VERSION = "2012-10-17"

# Resources whose PolicyDocument (ResourcePolicy for secrets) is one document.
DOCUMENT_RESOURCES = {
    "AWS::IAM::Policy": "PolicyDocument",
    "AWS::IAM::ManagedPolicy": "PolicyDocument",
    "AWS::S3::BucketPolicy": "PolicyDocument",
    "AWS::SQS::QueuePolicy": "PolicyDocument",
    "AWS::SNS::TopicPolicy": "PolicyDocument",
    "AWS::SecretsManager::ResourcePolicy": "ResourcePolicy",
}


def inline_documents(template: dict):
    """(owner, document) for every policy document written out in the
    template: a function's inline Policies (each branch of an Fn::If),
    IAM roles', users' and groups' Policies and AssumeRolePolicyDocument,
    and the policy resources of DOCUMENT_RESOURCES."""
    for rid, resource in template.get("Resources", {}).items():
        kind = resource.get("Type")
        props = resource.get("Properties", {}) or {}
        if kind == FUNCTION:
            for policy in items(props.get("Policies", [])):
                if isinstance(policy, dict) and "Statement" in policy:
                    yield rid, policy
        elif kind in ("AWS::IAM::Role", "AWS::IAM::User", "AWS::IAM::Group"):
            for policy in items(props.get("Policies", [])):
                if isinstance(policy, dict):
                    name = policy.get("PolicyName", "?")
                    for doc in alternatives(policy.get("PolicyDocument")):
                        yield f"{rid} (policy {name})", doc
            for doc in alternatives(props.get("AssumeRolePolicyDocument")):
                yield f"{rid} (AssumeRolePolicyDocument)", doc
        elif kind in DOCUMENT_RESOURCES:
            for doc in alternatives(props.get(DOCUMENT_RESOURCES[kind])):
                yield rid, doc


def version_problems(template: dict) -> list[str]:
    """Every inline policy document states Version 2012-10-17 (without it
    IAM reads the document in the 2008 language, where policy variables
    such as ${aws:username} are plain text)."""
    found = []
    for owner, document in inline_documents(template):
        if not isinstance(document, dict):
            continue  # document_problems reports it
        version = document.get("Version")
        if version != POLICY_VERSION:
            stated = "no Version" if version is None else f"Version {version!r}"
            found.append(
                f"{owner}: an inline policy document with {stated}: state "
                f'Version: "{POLICY_VERSION}"'
            )
    return found


def translate(template: dict) -> dict:
    """The template as SAM turns it into CloudFormation (offline)."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)  # its metrics chatter
    from samtranslator.translator.transform import transform

    class NoManagedPolicyNames:
        def load(self):
            return {}

    document = copy.deepcopy(template)
    for resource in document.get("Resources", {}).values():
        if resource.get("Type") == FUNCTION:
            # Translation only needs a code location.
            resource.setdefault("Properties", {})["CodeUri"] = "s3://bucket/key"
    return transform(document, {}, NoManagedPolicyNames())


def generated_iam_problems(template: dict) -> list[str]:
    """The roles SAM generates for the functions, with what SAM adds."""
    from samtranslator.model.exceptions import InvalidDocumentException

    try:
        translated = translate(template)
    except InvalidDocumentException as error:
        return [f"SAM cannot translate the template: {cause}" for cause in error.causes]
    found = []
    written = functions(template)
    resources = translated.get("Resources", {})
    for rid, resource in resources.items():
        if resource.get("Type") != "AWS::IAM::Role":
            continue
        props = resource.get("Properties", {})
        # SAM names a function's role <Function>Role; justifications and
        # messages speak of the function.
        function_id = rid[: -len("Role")] if rid[: -len("Role")] in written else rid
        owner = f"{function_id} (role {rid}, generated by SAM)"
        own = []  # the function's statements, checked on the template already
        if function_id in written:
            own = [
                p
                for p in items((written[function_id].get("Properties") or {}).get("Policies", []))
                if isinstance(p, dict) and "Statement" in p
            ]
        for policy in items(props.get("Policies", [])):
            document = policy.get("PolicyDocument")
            if not any(alternatives(document) == [doc] for doc in own):
                found.extend(document_problems(owner, document))
        for arn in items(props.get("ManagedPolicyArns", [])):
            found.extend(managed_policy_problems(owner, arn, resources))
    return found
