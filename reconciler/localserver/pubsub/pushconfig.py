"""A subscription's push configuration checked as the service can check it: the
endpoint (`exports.push_host`: an http(s) URL with a host, the words Google's
emulator answers), the OIDC token's service account (an email address), the
`x-goog-version` attribute (the values the `PushConfig.attributes` documentation
lists) and the wrapper (a oneof: the proto keeps one). Whether the endpoint answers,
its certificate and the account's permission are the service's to know (not
modelled: the local server pushes nowhere, docs/local-server.md).
"""

from __future__ import annotations

from typing import Any

from reconciler.localserver.api.status import invalid
from reconciler.localserver.pubsub import exports
from reconciler.names import service_account_problem

# `PushConfig.attributes`: "The only currently supported attribute is x-goog-version"
# and its possible values (google/pubsub/v1/pubsub.proto).
VERSION_ATTRIBUTE = "x-goog-version"
VERSIONS = ("v1beta1", "v1", "v1beta2")


def check_push(config: Any, path: str = "push_config") -> None:
    """INVALID_ARGUMENT for what the service refuses in a PushConfig."""
    if config.push_endpoint:
        try:
            exports.push_host(config.push_endpoint)
        except ValueError as exc:
            raise invalid(f"{exc}.") from None
    if config.HasField("oidc_token"):
        email = config.oidc_token.service_account_email
        problem = service_account_problem(email)
        if problem is not None:
            raise invalid(
                f"Invalid {path}.oidc_token.service_account_email {email!r}: it {problem}."
            )
    version = config.attributes.get(VERSION_ATTRIBUTE)
    if version is not None and version not in VERSIONS:
        raise invalid(
            f"Invalid {path}.attributes[{VERSION_ATTRIBUTE!r}] {version!r}: the push format "
            f"is one of {', '.join(VERSIONS)}."
        )
