"""Which endpoint a topic's publishes go to: the locational one its labels declare,
unless the user chose one.

Under in-transit enforcement the spec's `publishers.endpoint: REGION` tells publishers
to use `REGION-pubsub.googleapis.com:443`; `apply` records REGION on the topic as the
label `reconcile-publish-endpoint`. A user who pinned an endpoint
(`client_options.api_endpoint`, a transport of their own) or set `PUBSUB_EMULATOR_HOST`
made an explicit choice: it wins, and `EndpointChoice.overridden` says why the
declared endpoint was not used. Pure: no google-cloud or gRPC import.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.hedging.labels import ENDPOINT, LabelDecodeError
from reconciler.orgpolicy.locations import catalog

DEFAULT_ENDPOINT = "pubsub.googleapis.com:443"


class EndpointLabelError(LabelDecodeError):
    """The topic's endpoint label does not name a Google Cloud region."""


@dataclass(frozen=True)
class EndpointChoice:
    """`endpoint`: host:port the topic's publishes use; `declared`: the locational
    endpoint its label asks for (None without the label); `overridden`: why the
    declared endpoint is not used (None when it is, or when none is declared)."""

    endpoint: str
    declared: str | None = None
    overridden: str | None = None


def locational(region: str) -> str:
    """The locational endpoint of a region, as gRPC dials it."""
    return f"{region}-pubsub.googleapis.com:443"


def with_port(address: str) -> str:
    """host:port (the libraries add :443 to a bare host)."""
    return address if ":" in address.rsplit("]", 1)[-1] else f"{address}:443"


def declared_endpoint(topic: str, labels: Mapping[str, str]) -> str | None:
    """The locational endpoint the topic's label declares; EndpointLabelError when
    the label is not a known region."""
    region = labels.get(ENDPOINT)
    if region is None:
        return None
    cat = catalog()
    if region not in cat.all_regions:
        suggestion = cat.suggest_region(region)
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        raise EndpointLabelError(
            f"topic {topic}: label {ENDPOINT}={region!r} is not a known Google Cloud "
            f"region{hint}; set publishers.endpoint to a region in the topic's spec and "
            "run `reconcile apply`"
        )
    return locational(region)


def resolve_endpoint(
    topic: str,
    labels: Mapping[str, str],
    *,
    pinned: str | None = None,
    pinned_by: str = "client_options.api_endpoint",
    emulator: str | None = None,
    default: str = DEFAULT_ENDPOINT,
) -> EndpointChoice:
    """The endpoint for `topic`: the emulator, else the user's pinned endpoint, else the
    declared locational one, else `default`. A bad label is an error in every case."""
    declared = declared_endpoint(topic, labels)
    if emulator:
        chosen, why = emulator, f"PUBSUB_EMULATOR_HOST is set ({emulator})"
    elif pinned:
        chosen, why = with_port(pinned), f"{pinned_by} pins {with_port(pinned)}"
    else:
        return EndpointChoice(declared or default, declared)
    if declared is None or declared == chosen:
        return EndpointChoice(chosen, declared)
    return EndpointChoice(chosen, declared, why)
