"""The one exception a service handler raises to answer with a gRPC status."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

import grpc


class ServiceError(Exception):
    """Carries the status code and message the client will see, and the status's
    details where the service gives some (`google.rpc` messages such as ErrorInfo:
    the gRPC face sends them in `grpc-status-details-bin`, the REST face in the
    error's "details")."""

    def __init__(
        self, code: grpc.StatusCode, message: str, details: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details


def suggestion(word: str, choices: Iterable[str]) -> str:
    """ "; did you mean 'X'?" for the nearest of `choices`, or ""."""
    by_upper = {c.upper(): c for c in choices}
    match = difflib.get_close_matches(word.upper(), list(by_upper), n=1, cutoff=0.6)
    return f"; did you mean {by_upper[match[0]]!r}?" if match else ""


def grpc_status_from_name(name: str) -> grpc.StatusCode:
    """`grpc.StatusCode` from its name ("PERMISSION_DENIED"); ValueError if unknown."""
    key = name.strip().upper()
    try:
        return grpc.StatusCode[key]
    except KeyError:
        names = [c.name for c in grpc.StatusCode if c is not grpc.StatusCode.OK]
        raise ValueError(
            f"unknown gRPC status code {name!r}{suggestion(key, names)} (use one of "
            f"{', '.join(names)})"
        ) from None


def invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.ALREADY_EXISTS, message)


def failed_precondition(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, message)


def unavailable(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.UNAVAILABLE, message)
