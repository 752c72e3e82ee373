# ruff: noqa: E501
"""Plain records of the spec documents and their shape table: generated from the
pydantic models in `models.py` by `python -m reconciler.spec.shapegen`; do not edit.

The checks read these records; `fastshape.py` builds them from YAML data by the
table, and hands anything it is not sure of to the models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

API_VERSION = 'reconcile.pubsub/v1'
KINDS = ('Topic', 'HedgingProfile', 'Defaults')



@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    """The record of `models.TopicMetadata`."""

    project: str | None = None
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class StoragePolicy:
    """The record of `models.StoragePolicy`."""

    allowed_persistence_regions: list[str]
    enforce_in_transit: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Retry:
    """The record of `models.Retry`."""

    initial_rpc_timeout: int | None = None
    total_timeout: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class HedgingSettings:
    """The record of `models.HedgingSettings`."""

    hedge_delay: int | None = None
    max_tokens: int | None = None
    refill_ratio: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Publishers:
    """The record of `models.Publishers`."""

    regions: list[str] = field(default_factory=list)
    endpoint: str | None = None
    message_ordering: bool = False
    retry: Retry | None = None
    hedging: str | HedgingSettings | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicSpec:
    """The record of `models.TopicSpec`."""

    labels: dict[str, str] = field(default_factory=dict)
    message_storage_policy: Literal['inherit'] | StoragePolicy | None = None
    publishers: Publishers | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicDoc:
    """The record of `models.TopicDoc`."""

    api_version: str
    kind: Literal['Topic']
    metadata: TopicMetadata
    spec: TopicSpec = field(default_factory=TopicSpec)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileMetadata:
    """The record of `models.ProfileMetadata`."""

    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HedgingProfileDoc:
    """The record of `models.HedgingProfileDoc`."""

    api_version: str
    kind: Literal['HedgingProfile']
    metadata: ProfileMetadata
    spec: HedgingSettings = field(default_factory=HedgingSettings)


@dataclass(frozen=True, slots=True, kw_only=True)
class DefaultsMetadata:
    """The record of `models.DefaultsMetadata`."""

    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DefaultsSpec:
    """The record of `models.DefaultsSpec`."""

    project: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    message_storage_policy: Literal['inherit'] | StoragePolicy | None = None
    publishers: Publishers | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DefaultsDoc:
    """The record of `models.DefaultsDoc`."""

    api_version: str
    kind: Literal['Defaults']
    metadata: DefaultsMetadata = field(default_factory=DefaultsMetadata)
    spec: DefaultsSpec = field(default_factory=DefaultsSpec)


Record = TopicMetadata | StoragePolicy | Retry | HedgingSettings | Publishers | TopicSpec | TopicDoc | ProfileMetadata | HedgingProfileDoc | DefaultsMetadata | DefaultsSpec | DefaultsDoc
RECORDS: dict[str, type[Any]] = {
    'TopicMetadata': TopicMetadata,
    'StoragePolicy': StoragePolicy,
    'Retry': Retry,
    'HedgingSettings': HedgingSettings,
    'Publishers': Publishers,
    'TopicSpec': TopicSpec,
    'TopicDoc': TopicDoc,
    'ProfileMetadata': ProfileMetadata,
    'HedgingProfileDoc': HedgingProfileDoc,
    'DefaultsMetadata': DefaultsMetadata,
    'DefaultsSpec': DefaultsSpec,
    'DefaultsDoc': DefaultsDoc,
}
RECORD_BY_KIND: dict[str, type[Any]] = {'Topic': TopicDoc, 'HedgingProfile': HedgingProfileDoc, 'Defaults': DefaultsDoc}

# Model name -> fields: (alias, attribute, default, kind).
SHAPES: dict[str, tuple[tuple[Any, ...], ...]] = {
    'TopicMetadata': (
        ('project', 'project', ('value', None), ('union', (('str',), ('none',)))),
        ('name', 'name', ('required',), ('str',)),
    ),
    'StoragePolicy': (
        ('allowedPersistenceRegions', 'allowed_persistence_regions', ('required',), ('list_str',)),
        ('enforceInTransit', 'enforce_in_transit', ('value', None), ('union', (('bool',), ('none',)))),
    ),
    'Retry': (
        ('initialRpcTimeout', 'initial_rpc_timeout', ('value', None), ('union', (('duration',), ('none',)))),
        ('totalTimeout', 'total_timeout', ('value', None), ('union', (('duration',), ('none',)))),
    ),
    'HedgingSettings': (
        ('hedgeDelay', 'hedge_delay', ('value', None), ('union', (('duration',), ('none',)))),
        ('maxTokens', 'max_tokens', ('value', None), ('union', (('whole',), ('none',)))),
        ('refillRatio', 'refill_ratio', ('value', None), ('union', (('number',), ('none',)))),
    ),
    'Publishers': (
        ('regions', 'regions', ('factory', 'list'), ('list_str',)),
        ('endpoint', 'endpoint', ('value', None), ('union', (('str',), ('none',)))),
        ('messageOrdering', 'message_ordering', ('value', False), ('bool',)),
        ('retry', 'retry', ('value', None), ('union', (('model', 'Retry'), ('none',)))),
        ('hedging', 'hedging', ('value', None), ('union', (('str',), ('model', 'HedgingSettings'), ('none',)))),
    ),
    'TopicSpec': (
        ('labels', 'labels', ('factory', 'dict'), ('dict_str_str',)),
        ('messageStoragePolicy', 'message_storage_policy', ('value', None), ('union', (('literal', ('inherit',)), ('model', 'StoragePolicy'), ('none',)))),
        ('publishers', 'publishers', ('value', None), ('union', (('model', 'Publishers'), ('none',)))),
    ),
    'TopicDoc': (
        ('apiVersion', 'api_version', ('required',), ('str',)),
        ('kind', 'kind', ('required',), ('literal', ('Topic',))),
        ('metadata', 'metadata', ('required',), ('model', 'TopicMetadata')),
        ('spec', 'spec', ('factory', 'TopicSpec'), ('model', 'TopicSpec')),
    ),
    'ProfileMetadata': (
        ('name', 'name', ('required',), ('str',)),
    ),
    'HedgingProfileDoc': (
        ('apiVersion', 'api_version', ('required',), ('str',)),
        ('kind', 'kind', ('required',), ('literal', ('HedgingProfile',))),
        ('metadata', 'metadata', ('required',), ('model', 'ProfileMetadata')),
        ('spec', 'spec', ('factory', 'HedgingSettings'), ('model', 'HedgingSettings')),
    ),
    'DefaultsMetadata': (
        ('name', 'name', ('value', None), ('union', (('str',), ('none',)))),
    ),
    'DefaultsSpec': (
        ('project', 'project', ('value', None), ('union', (('str',), ('none',)))),
        ('labels', 'labels', ('factory', 'dict'), ('dict_str_str',)),
        ('messageStoragePolicy', 'message_storage_policy', ('value', None), ('union', (('literal', ('inherit',)), ('model', 'StoragePolicy'), ('none',)))),
        ('publishers', 'publishers', ('value', None), ('union', (('model', 'Publishers'), ('none',)))),
    ),
    'DefaultsDoc': (
        ('apiVersion', 'api_version', ('required',), ('str',)),
        ('kind', 'kind', ('required',), ('literal', ('Defaults',))),
        ('metadata', 'metadata', ('factory', 'DefaultsMetadata'), ('model', 'DefaultsMetadata')),
        ('spec', 'spec', ('factory', 'DefaultsSpec'), ('model', 'DefaultsSpec')),
    ),
}
