# ruff: noqa: E501, RUF023
"""Plain records of the spec documents and their shape table: generated from the
pydantic models in `models.py` by `python -m reconciler.spec.shapegen`; do not edit.

The checks read these records; `fastshape.py` builds them from YAML data by the
table, and hands anything it is not sure of to the models."""

from __future__ import annotations

from typing import Any, Literal

from reconciler.spec.record import Record as _Record

_set = object.__setattr__


API_VERSION = 'reconcile.pubsub/v1'
KINDS = ('Topic', 'HedgingProfile', 'Defaults', 'Owner')


class TopicMetadata(_Record):
    """The record of `models.TopicMetadata`."""

    __slots__ = ('project', 'name')
    project: str | None
    name: str

    def __init__(self, *, project: str | None = None, name: str) -> None:
        _set(self, 'project', project)
        _set(self, 'name', name)


class StoragePolicySpec(_Record):
    """The record of `models.StoragePolicySpec`."""

    __slots__ = ('allowed_persistence_regions', 'enforce_in_transit')
    allowed_persistence_regions: list[str]
    enforce_in_transit: bool | None

    def __init__(self, *, allowed_persistence_regions: list[str], enforce_in_transit: bool | None = None) -> None:
        _set(self, 'allowed_persistence_regions', allowed_persistence_regions)
        _set(self, 'enforce_in_transit', enforce_in_transit)


class SchemaSettingsSpec(_Record):
    """The record of `models.SchemaSettingsSpec`."""

    __slots__ = ('schema_', 'encoding', 'first_revision_id', 'last_revision_id')
    schema_: str
    encoding: Literal['JSON', 'BINARY']
    first_revision_id: str | None
    last_revision_id: str | None

    def __init__(self, *, schema_: str, encoding: Literal['JSON', 'BINARY'], first_revision_id: str | None = None, last_revision_id: str | None = None) -> None:
        _set(self, 'schema_', schema_)
        _set(self, 'encoding', encoding)
        _set(self, 'first_revision_id', first_revision_id)
        _set(self, 'last_revision_id', last_revision_id)


class Retry(_Record):
    """The record of `models.Retry`."""

    __slots__ = ('initial_rpc_timeout', 'total_timeout')
    initial_rpc_timeout: int | None
    total_timeout: int | None

    def __init__(self, *, initial_rpc_timeout: int | None = None, total_timeout: int | None = None) -> None:
        _set(self, 'initial_rpc_timeout', initial_rpc_timeout)
        _set(self, 'total_timeout', total_timeout)


class HedgingProfileSpec(_Record):
    """The record of `models.HedgingProfileSpec`."""

    __slots__ = ('hedge_delay', 'max_tokens', 'refill_ratio')
    hedge_delay: int | None
    max_tokens: int | None
    refill_ratio: float | None

    def __init__(self, *, hedge_delay: int | None = None, max_tokens: int | None = None, refill_ratio: float | None = None) -> None:
        _set(self, 'hedge_delay', hedge_delay)
        _set(self, 'max_tokens', max_tokens)
        _set(self, 'refill_ratio', refill_ratio)


class Publishers(_Record):
    """The record of `models.Publishers`."""

    __slots__ = ('regions', 'endpoint', 'message_ordering', 'retry', 'hedging')
    regions: list[str]
    endpoint: str | None
    message_ordering: bool
    retry: Retry | None
    hedging: str | HedgingProfileSpec | None

    def __init__(self, *, regions: list[str] | None = None, endpoint: str | None = None, message_ordering: bool = False, retry: Retry | None = None, hedging: str | HedgingProfileSpec | None = None) -> None:
        _set(self, 'regions', [] if regions is None else regions)
        _set(self, 'endpoint', endpoint)
        _set(self, 'message_ordering', message_ordering)
        _set(self, 'retry', retry)
        _set(self, 'hedging', hedging)


class TopicSpec(_Record):
    """The record of `models.TopicSpec`."""

    __slots__ = ('labels', 'message_storage_policy', 'message_retention_duration', 'kms_key_name', 'schema_settings', 'publishers')
    labels: dict[str, str]
    message_storage_policy: Literal['inherit'] | StoragePolicySpec | None
    message_retention_duration: str | None
    kms_key_name: str | None
    schema_settings: SchemaSettingsSpec | None
    publishers: Publishers | None

    def __init__(self, *, labels: dict[str, str] | None = None, message_storage_policy: Literal['inherit'] | StoragePolicySpec | None = None, message_retention_duration: str | None = None, kms_key_name: str | None = None, schema_settings: SchemaSettingsSpec | None = None, publishers: Publishers | None = None) -> None:
        _set(self, 'labels', {} if labels is None else labels)
        _set(self, 'message_storage_policy', message_storage_policy)
        _set(self, 'message_retention_duration', message_retention_duration)
        _set(self, 'kms_key_name', kms_key_name)
        _set(self, 'schema_settings', schema_settings)
        _set(self, 'publishers', publishers)


class TopicDoc(_Record):
    """The record of `models.TopicDoc`."""

    __slots__ = ('api_version', 'kind', 'metadata', 'spec')
    api_version: str
    kind: Literal['Topic']
    metadata: TopicMetadata
    spec: TopicSpec

    def __init__(self, *, api_version: str, kind: Literal['Topic'], metadata: TopicMetadata, spec: TopicSpec | None = None) -> None:
        _set(self, 'api_version', api_version)
        _set(self, 'kind', kind)
        _set(self, 'metadata', metadata)
        _set(self, 'spec', TopicSpec() if spec is None else spec)


class ProfileMetadata(_Record):
    """The record of `models.ProfileMetadata`."""

    __slots__ = ('name',)
    name: str

    def __init__(self, *, name: str) -> None:
        _set(self, 'name', name)


class HedgingProfileDoc(_Record):
    """The record of `models.HedgingProfileDoc`."""

    __slots__ = ('api_version', 'kind', 'metadata', 'spec')
    api_version: str
    kind: Literal['HedgingProfile']
    metadata: ProfileMetadata
    spec: HedgingProfileSpec

    def __init__(self, *, api_version: str, kind: Literal['HedgingProfile'], metadata: ProfileMetadata, spec: HedgingProfileSpec | None = None) -> None:
        _set(self, 'api_version', api_version)
        _set(self, 'kind', kind)
        _set(self, 'metadata', metadata)
        _set(self, 'spec', HedgingProfileSpec() if spec is None else spec)


class DefaultsMetadata(_Record):
    """The record of `models.DefaultsMetadata`."""

    __slots__ = ('name',)
    name: str | None

    def __init__(self, *, name: str | None = None) -> None:
        _set(self, 'name', name)


class DefaultsSpec(_Record):
    """The record of `models.DefaultsSpec`."""

    __slots__ = ('project', 'labels', 'message_storage_policy', 'message_retention_duration', 'kms_key_name', 'schema_settings', 'publishers')
    project: str | None
    labels: dict[str, str]
    message_storage_policy: Literal['inherit'] | StoragePolicySpec | None
    message_retention_duration: str | None
    kms_key_name: str | None
    schema_settings: SchemaSettingsSpec | None
    publishers: Publishers | None

    def __init__(self, *, project: str | None = None, labels: dict[str, str] | None = None, message_storage_policy: Literal['inherit'] | StoragePolicySpec | None = None, message_retention_duration: str | None = None, kms_key_name: str | None = None, schema_settings: SchemaSettingsSpec | None = None, publishers: Publishers | None = None) -> None:
        _set(self, 'project', project)
        _set(self, 'labels', {} if labels is None else labels)
        _set(self, 'message_storage_policy', message_storage_policy)
        _set(self, 'message_retention_duration', message_retention_duration)
        _set(self, 'kms_key_name', kms_key_name)
        _set(self, 'schema_settings', schema_settings)
        _set(self, 'publishers', publishers)


class DefaultsDoc(_Record):
    """The record of `models.DefaultsDoc`."""

    __slots__ = ('api_version', 'kind', 'metadata', 'spec')
    api_version: str
    kind: Literal['Defaults']
    metadata: DefaultsMetadata
    spec: DefaultsSpec

    def __init__(self, *, api_version: str, kind: Literal['Defaults'], metadata: DefaultsMetadata | None = None, spec: DefaultsSpec | None = None) -> None:
        _set(self, 'api_version', api_version)
        _set(self, 'kind', kind)
        _set(self, 'metadata', DefaultsMetadata() if metadata is None else metadata)
        _set(self, 'spec', DefaultsSpec() if spec is None else spec)


class OwnerMetadata(_Record):
    """The record of `models.OwnerMetadata`."""

    __slots__ = ('name',)
    name: str

    def __init__(self, *, name: str) -> None:
        _set(self, 'name', name)


class OwnerSpec(_Record):
    """The record of `models.OwnerSpec`."""

    __slots__ = ('prune_subscribed',)
    prune_subscribed: list[str]

    def __init__(self, *, prune_subscribed: list[str] | None = None) -> None:
        _set(self, 'prune_subscribed', [] if prune_subscribed is None else prune_subscribed)


class OwnerDoc(_Record):
    """The record of `models.OwnerDoc`."""

    __slots__ = ('api_version', 'kind', 'metadata', 'spec')
    api_version: str
    kind: Literal['Owner']
    metadata: OwnerMetadata
    spec: OwnerSpec

    def __init__(self, *, api_version: str, kind: Literal['Owner'], metadata: OwnerMetadata, spec: OwnerSpec | None = None) -> None:
        _set(self, 'api_version', api_version)
        _set(self, 'kind', kind)
        _set(self, 'metadata', metadata)
        _set(self, 'spec', OwnerSpec() if spec is None else spec)


Record = TopicMetadata | StoragePolicySpec | SchemaSettingsSpec | Retry | HedgingProfileSpec | Publishers | TopicSpec | TopicDoc | ProfileMetadata | HedgingProfileDoc | DefaultsMetadata | DefaultsSpec | DefaultsDoc | OwnerMetadata | OwnerSpec | OwnerDoc
RECORDS: dict[str, type[_Record]] = {
    'TopicMetadata': TopicMetadata,
    'StoragePolicySpec': StoragePolicySpec,
    'SchemaSettingsSpec': SchemaSettingsSpec,
    'Retry': Retry,
    'HedgingProfileSpec': HedgingProfileSpec,
    'Publishers': Publishers,
    'TopicSpec': TopicSpec,
    'TopicDoc': TopicDoc,
    'ProfileMetadata': ProfileMetadata,
    'HedgingProfileDoc': HedgingProfileDoc,
    'DefaultsMetadata': DefaultsMetadata,
    'DefaultsSpec': DefaultsSpec,
    'DefaultsDoc': DefaultsDoc,
    'OwnerMetadata': OwnerMetadata,
    'OwnerSpec': OwnerSpec,
    'OwnerDoc': OwnerDoc,
}
RECORD_BY_KIND: dict[str, type[_Record]] = {'Topic': TopicDoc, 'HedgingProfile': HedgingProfileDoc, 'Defaults': DefaultsDoc, 'Owner': OwnerDoc}

# Model name -> fields: (alias, attribute, default, kind).
SHAPES: dict[str, tuple[tuple[Any, ...], ...]] = {
    'TopicMetadata': (
        ('project', 'project', ('value', None), ('union', (('str',), ('none',)))),
        ('name', 'name', ('required',), ('str',)),
    ),
    'StoragePolicySpec': (
        ('allowedPersistenceRegions', 'allowed_persistence_regions', ('required',), ('list_str',)),
        ('enforceInTransit', 'enforce_in_transit', ('value', None), ('union', (('bool',), ('none',)))),
    ),
    'SchemaSettingsSpec': (
        ('schema', 'schema_', ('required',), ('str',)),
        ('encoding', 'encoding', ('required',), ('literal', ('JSON', 'BINARY'))),
        ('firstRevisionId', 'first_revision_id', ('value', None), ('union', (('str',), ('none',)))),
        ('lastRevisionId', 'last_revision_id', ('value', None), ('union', (('str',), ('none',)))),
    ),
    'Retry': (
        ('initialRpcTimeout', 'initial_rpc_timeout', ('value', None), ('union', (('duration',), ('none',)))),
        ('totalTimeout', 'total_timeout', ('value', None), ('union', (('duration',), ('none',)))),
    ),
    'HedgingProfileSpec': (
        ('hedgeDelay', 'hedge_delay', ('value', None), ('union', (('duration',), ('none',)))),
        ('maxTokens', 'max_tokens', ('value', None), ('union', (('whole',), ('none',)))),
        ('refillRatio', 'refill_ratio', ('value', None), ('union', (('number',), ('none',)))),
    ),
    'Publishers': (
        ('regions', 'regions', ('factory', 'list'), ('list_str',)),
        ('endpoint', 'endpoint', ('value', None), ('union', (('str',), ('none',)))),
        ('messageOrdering', 'message_ordering', ('value', False), ('bool',)),
        ('retry', 'retry', ('value', None), ('union', (('model', 'Retry'), ('none',)))),
        ('hedging', 'hedging', ('value', None), ('union', (('str',), ('model', 'HedgingProfileSpec'), ('none',)))),
    ),
    'TopicSpec': (
        ('labels', 'labels', ('factory', 'dict'), ('dict_str_str',)),
        ('messageStoragePolicy', 'message_storage_policy', ('value', None), ('union', (('literal', ('inherit',)), ('model', 'StoragePolicySpec'), ('none',)))),
        ('messageRetentionDuration', 'message_retention_duration', ('value', None), ('union', (('str',), ('none',)))),
        ('kmsKeyName', 'kms_key_name', ('value', None), ('union', (('str',), ('none',)))),
        ('schemaSettings', 'schema_settings', ('value', None), ('union', (('model', 'SchemaSettingsSpec'), ('none',)))),
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
        ('spec', 'spec', ('factory', 'HedgingProfileSpec'), ('model', 'HedgingProfileSpec')),
    ),
    'DefaultsMetadata': (
        ('name', 'name', ('value', None), ('union', (('str',), ('none',)))),
    ),
    'DefaultsSpec': (
        ('project', 'project', ('value', None), ('union', (('str',), ('none',)))),
        ('labels', 'labels', ('factory', 'dict'), ('dict_str_str',)),
        ('messageStoragePolicy', 'message_storage_policy', ('value', None), ('union', (('literal', ('inherit',)), ('model', 'StoragePolicySpec'), ('none',)))),
        ('messageRetentionDuration', 'message_retention_duration', ('value', None), ('union', (('str',), ('none',)))),
        ('kmsKeyName', 'kms_key_name', ('value', None), ('union', (('str',), ('none',)))),
        ('schemaSettings', 'schema_settings', ('value', None), ('union', (('model', 'SchemaSettingsSpec'), ('none',)))),
        ('publishers', 'publishers', ('value', None), ('union', (('model', 'Publishers'), ('none',)))),
    ),
    'DefaultsDoc': (
        ('apiVersion', 'api_version', ('required',), ('str',)),
        ('kind', 'kind', ('required',), ('literal', ('Defaults',))),
        ('metadata', 'metadata', ('factory', 'DefaultsMetadata'), ('model', 'DefaultsMetadata')),
        ('spec', 'spec', ('factory', 'DefaultsSpec'), ('model', 'DefaultsSpec')),
    ),
    'OwnerMetadata': (
        ('name', 'name', ('required',), ('str',)),
    ),
    'OwnerSpec': (
        ('pruneSubscribed', 'prune_subscribed', ('factory', 'list'), ('list_str',)),
    ),
    'OwnerDoc': (
        ('apiVersion', 'api_version', ('required',), ('str',)),
        ('kind', 'kind', ('required',), ('literal', ('Owner',))),
        ('metadata', 'metadata', ('required',), ('model', 'OwnerMetadata')),
        ('spec', 'spec', ('factory', 'OwnerSpec'), ('model', 'OwnerSpec')),
    ),
}
