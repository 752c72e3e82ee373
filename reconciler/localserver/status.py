"""The one exception a service handler raises to answer with a gRPC status."""

from __future__ import annotations

import grpc


class ServiceError(Exception):
    """Carries the status code and message the client will see."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def grpc_status_from_name(name: str) -> grpc.StatusCode:
    """`grpc.StatusCode` from its name ("PERMISSION_DENIED"); ValueError if unknown."""
    key = name.strip().upper()
    try:
        return grpc.StatusCode[key]
    except KeyError:
        known = ", ".join(c.name for c in grpc.StatusCode if c is not grpc.StatusCode.OK)
        raise ValueError(f"unknown gRPC status code {name!r}; use one of {known}") from None


def invalid(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.INVALID_ARGUMENT, message)


def not_found(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.NOT_FOUND, message)


def already_exists(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.ALREADY_EXISTS, message)


def failed_precondition(message: str) -> ServiceError:
    return ServiceError(grpc.StatusCode.FAILED_PRECONDITION, message)
