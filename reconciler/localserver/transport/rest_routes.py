"""The REST face's routes: the `google.api.http` bindings of the methods behind it, as
Google's own REST clients send them (google/pubsub/v1/pubsub.proto and schema.proto
with the IAM mixin's bindings of pubsub_v1.yaml, google/cloud/orgpolicy/v2/
orgpolicy.proto, google/cloud/resourcemanager/v3/projects.proto, folders.proto,
organizations.proto and tag_bindings.proto, google/monitoring/v3/metric_service.proto,
and the transform calls gcloud's generated Pub/Sub client binds), and finding the
route of a request.

A route whose method the server does not serve answers as its gRPC twin does
(UNIMPLEMENTED).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

import grpc

from reconciler.localserver.api.status import ServiceError

PUBLISHER = "google.pubsub.v1.Publisher"
SUBSCRIBER = "google.pubsub.v1.Subscriber"
SCHEMAS = "google.pubsub.v1.SchemaService"
IAM = "google.iam.v1.IAMPolicy"
ORGPOLICY = "google.cloud.orgpolicy.v2.OrgPolicy"
MONITORING = "google.monitoring.v3.MetricService"
PROJECTS = "google.cloud.resourcemanager.v3.Projects"
FOLDERS = "google.cloud.resourcemanager.v3.Folders"
ORGANIZATIONS = "google.cloud.resourcemanager.v3.Organizations"
TAG_BINDINGS = "google.cloud.resourcemanager.v3.TagBindings"
OPERATIONS = "google.longrunning.Operations"

_TOPIC = "projects/*/topics/*"
_SUB = "projects/*/subscriptions/*"
_SNAP = "projects/*/snapshots/*"
_SCHEMA = "projects/*/schemas/*"
_POLICY_PARENTS = ("projects/*", "folders/*", "organizations/*")

# (HTTP method, path template, service, RPC method, body: "*", a field, or "")
ROUTES: tuple[tuple[str, str, str, str, str], ...] = (
    ("PUT", f"/v1/{{name={_TOPIC}}}", PUBLISHER, "CreateTopic", "*"),
    ("PATCH", f"/v1/{{topic.name={_TOPIC}}}", PUBLISHER, "UpdateTopic", "*"),
    ("POST", f"/v1/{{topic={_TOPIC}}}:publish", PUBLISHER, "Publish", "*"),
    ("GET", f"/v1/{{topic={_TOPIC}}}", PUBLISHER, "GetTopic", ""),
    ("GET", "/v1/{project=projects/*}/topics", PUBLISHER, "ListTopics", ""),
    ("GET", f"/v1/{{topic={_TOPIC}}}/subscriptions", PUBLISHER, "ListTopicSubscriptions", ""),
    ("GET", f"/v1/{{topic={_TOPIC}}}/snapshots", PUBLISHER, "ListTopicSnapshots", ""),
    ("DELETE", f"/v1/{{topic={_TOPIC}}}", PUBLISHER, "DeleteTopic", ""),
    ("POST", f"/v1/{{subscription={_SUB}}}:detach", PUBLISHER, "DetachSubscription", ""),
    # REST bindings with no public proto (gcloud's generated Pub/Sub v1 client:
    # pubsub.projects.validateMessageTransform, pubsub.projects.testMessageTransforms).
    (
        "POST",
        "/v1/{project=projects/*}:validateMessageTransform",
        PUBLISHER,
        "ValidateMessageTransform",
        "*",
    ),
    (
        "POST",
        "/v1/{project=projects/*}:testMessageTransforms",
        PUBLISHER,
        "TestMessageTransforms",
        "*",
    ),
    ("PUT", f"/v1/{{name={_SUB}}}", SUBSCRIBER, "CreateSubscription", "*"),
    ("GET", f"/v1/{{subscription={_SUB}}}", SUBSCRIBER, "GetSubscription", ""),
    ("PATCH", f"/v1/{{subscription.name={_SUB}}}", SUBSCRIBER, "UpdateSubscription", "*"),
    ("GET", "/v1/{project=projects/*}/subscriptions", SUBSCRIBER, "ListSubscriptions", ""),
    ("DELETE", f"/v1/{{subscription={_SUB}}}", SUBSCRIBER, "DeleteSubscription", ""),
    (
        "POST",
        f"/v1/{{subscription={_SUB}}}:modifyAckDeadline",
        SUBSCRIBER,
        "ModifyAckDeadline",
        "*",
    ),
    ("POST", f"/v1/{{subscription={_SUB}}}:acknowledge", SUBSCRIBER, "Acknowledge", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:pull", SUBSCRIBER, "Pull", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:modifyPushConfig", SUBSCRIBER, "ModifyPushConfig", "*"),
    ("POST", f"/v1/{{subscription={_SUB}}}:seek", SUBSCRIBER, "Seek", "*"),
    ("GET", f"/v1/{{snapshot={_SNAP}}}", SUBSCRIBER, "GetSnapshot", ""),
    ("GET", "/v1/{project=projects/*}/snapshots", SUBSCRIBER, "ListSnapshots", ""),
    ("PUT", f"/v1/{{name={_SNAP}}}", SUBSCRIBER, "CreateSnapshot", "*"),
    ("PATCH", f"/v1/{{snapshot.name={_SNAP}}}", SUBSCRIBER, "UpdateSnapshot", "*"),
    ("DELETE", f"/v1/{{snapshot={_SNAP}}}", SUBSCRIBER, "DeleteSnapshot", ""),
    ("POST", "/v1/{parent=projects/*}/schemas", SCHEMAS, "CreateSchema", "schema"),
    ("GET", f"/v1/{{name={_SCHEMA}}}", SCHEMAS, "GetSchema", ""),
    ("GET", "/v1/{parent=projects/*}/schemas", SCHEMAS, "ListSchemas", ""),
    ("GET", f"/v1/{{name={_SCHEMA}}}:listRevisions", SCHEMAS, "ListSchemaRevisions", ""),
    ("POST", f"/v1/{{name={_SCHEMA}}}:commit", SCHEMAS, "CommitSchema", "*"),
    ("POST", f"/v1/{{name={_SCHEMA}}}:rollback", SCHEMAS, "RollbackSchema", "*"),
    ("DELETE", f"/v1/{{name={_SCHEMA}}}:deleteRevision", SCHEMAS, "DeleteSchemaRevision", ""),
    ("DELETE", f"/v1/{{name={_SCHEMA}}}", SCHEMAS, "DeleteSchema", ""),
    ("POST", "/v1/{parent=projects/*}/schemas:validate", SCHEMAS, "ValidateSchema", "*"),
    (
        "POST",
        "/v1/{parent=projects/*}/schemas:validateMessage",
        SCHEMAS,
        "ValidateMessage",
        "*",
    ),
    # The IAM mixin, on every Pub/Sub resource that has a policy. getIamPolicy is a
    # GET in Pub/Sub's service config (Google's Python client sends that) and a POST
    # with a body in google/iam/v1/iam_policy.proto (Google's Node client sends that).
    *(
        route
        for kind in (_TOPIC, _SUB, _SNAP, _SCHEMA)
        for route in (
            ("GET", f"/v1/{{resource={kind}}}:getIamPolicy", IAM, "GetIamPolicy", ""),
            ("POST", f"/v1/{{resource={kind}}}:getIamPolicy", IAM, "GetIamPolicy", "*"),
            ("POST", f"/v1/{{resource={kind}}}:setIamPolicy", IAM, "SetIamPolicy", "*"),
            ("POST", f"/v1/{{resource={kind}}}:testIamPermissions", IAM, "TestIamPermissions", "*"),
        )
    ),
    # Org Policy v2, on projects, folders and organizations alike.
    *(
        route
        for parent in _POLICY_PARENTS
        for route in (
            ("GET", f"/v2/{{parent={parent}}}/constraints", ORGPOLICY, "ListConstraints", ""),
            ("GET", f"/v2/{{parent={parent}}}/policies", ORGPOLICY, "ListPolicies", ""),
            ("GET", f"/v2/{{name={parent}/policies/*}}", ORGPOLICY, "GetPolicy", ""),
            (
                "GET",
                f"/v2/{{name={parent}/policies/*}}:getEffectivePolicy",
                ORGPOLICY,
                "GetEffectivePolicy",
                "",
            ),
            ("POST", f"/v2/{{parent={parent}}}/policies", ORGPOLICY, "CreatePolicy", "policy"),
            (
                "PATCH",
                f"/v2/{{policy.name={parent}/policies/*}}",
                ORGPOLICY,
                "UpdatePolicy",
                "policy",
            ),
            ("DELETE", f"/v2/{{name={parent}/policies/*}}", ORGPOLICY, "DeletePolicy", ""),
        )
    ),
    (
        "POST",
        "/v2/{parent=organizations/*}/customConstraints",
        ORGPOLICY,
        "CreateCustomConstraint",
        "custom_constraint",
    ),
    (
        "PATCH",
        "/v2/{custom_constraint.name=organizations/*/customConstraints/*}",
        ORGPOLICY,
        "UpdateCustomConstraint",
        "custom_constraint",
    ),
    (
        "GET",
        "/v2/{name=organizations/*/customConstraints/*}",
        ORGPOLICY,
        "GetCustomConstraint",
        "",
    ),
    (
        "GET",
        "/v2/{parent=organizations/*}/customConstraints",
        ORGPOLICY,
        "ListCustomConstraints",
        "",
    ),
    (
        "DELETE",
        "/v2/{name=organizations/*/customConstraints/*}",
        ORGPOLICY,
        "DeleteCustomConstraint",
        "",
    ),
    ("GET", "/v3/{name=projects/*}/timeSeries", MONITORING, "ListTimeSeries", ""),
    # Resource Manager v3.
    ("GET", "/v3/{name=projects/*}", PROJECTS, "GetProject", ""),
    ("GET", "/v3/projects", PROJECTS, "ListProjects", ""),
    ("GET", "/v3/projects:search", PROJECTS, "SearchProjects", ""),
    ("POST", "/v3/projects", PROJECTS, "CreateProject", "project"),
    ("POST", "/v3/{name=projects/*}:move", PROJECTS, "MoveProject", "*"),
    ("GET", "/v3/{name=folders/*}", FOLDERS, "GetFolder", ""),
    ("GET", "/v3/folders", FOLDERS, "ListFolders", ""),
    ("GET", "/v3/folders:search", FOLDERS, "SearchFolders", ""),
    ("POST", "/v3/folders", FOLDERS, "CreateFolder", "folder"),
    ("GET", "/v3/{name=organizations/*}", ORGANIZATIONS, "GetOrganization", ""),
    ("GET", "/v3/organizations:search", ORGANIZATIONS, "SearchOrganizations", ""),
    ("GET", "/v3/tagBindings", TAG_BINDINGS, "ListTagBindings", ""),
    ("GET", "/v3/{name=operations/*}", OPERATIONS, "GetOperation", ""),
)
_VARIABLE = re.compile(r"\{([a-z_.]+)=([^}]+)\}")


@dataclass(frozen=True)
class Route:
    http_method: str
    pattern: re.Pattern[str]
    fields: tuple[str, ...]  # the request field each path variable binds to
    service: str
    method: str
    body: str  # "*" (the whole request), a request field, or "" (no body)

    @property
    def full_name(self) -> str:
        return f"{self.service}.{self.method}"


def _compile(template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    fields = []
    out = "^"
    last = 0
    for match in _VARIABLE.finditer(template):
        out += re.escape(template[last : match.start()])
        fields.append(match.group(1))
        segments = match.group(2).split("/")
        out += "(" + "/".join(r"[^/:]+" if s == "*" else re.escape(s) for s in segments) + ")"
        last = match.end()
    out += re.escape(template[last:]) + "$"
    return re.compile(out), tuple(fields)


def routes() -> list[Route]:
    out = []
    for verb, template, service, method, body in ROUTES:
        pattern, fields = _compile(template)
        out.append(Route(verb, pattern, fields, service, method, body))
    return out


def find(table: list[Route], method: str, path: str) -> tuple[Route, tuple[str, ...]]:
    """The route of `method path` and its path variables' values (decoded); NOT_FOUND
    naming what the path takes."""
    allowed = []
    for route in table:
        match = route.pattern.match(path)
        if match is None:
            continue
        if route.http_method == method:
            return route, tuple(unquote(v) for v in match.groups())
        allowed.append(route.http_method)
    if allowed:
        raise ServiceError(
            grpc.StatusCode.NOT_FOUND,
            f"{method} is not a method of {path} (it takes {', '.join(sorted(set(allowed)))}).",
        )
    raise ServiceError(
        grpc.StatusCode.NOT_FOUND,
        f"The requested URL {path} was not found on this server (REST paths: "
        "/v1/projects/P/topics..., /v1/projects/P/subscriptions..., "
        "/v1/projects/P/schemas..., /v2/projects/P/policies..., /v3/projects/P/timeSeries, "
        "/v3/projects..., /v3/folders..., /v3/organizations...).",
    )
