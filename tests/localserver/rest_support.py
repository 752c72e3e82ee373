"""A plain HTTP/1.1 client for the REST face (the standard library's, as any REST
client would): one request, its status and decoded JSON body."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any


@dataclass
class RestAnswer:
    status: int
    body: Any  # decoded JSON (or the text, when not JSON)
    headers: dict[str, str]
    raw: bytes = b""  # the body as it came


def rest(
    address: str,
    method: str,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60.0,
    raw_body: bytes | None = None,
) -> RestAnswer:
    host, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=timeout)
    try:
        data = raw_body
        if data is None and body is not None:
            data = json.dumps(body).encode()
        sent = {"Content-Type": "application/json", **(headers or {})}
        conn.request(method, path, body=data, headers=sent)
        response = conn.getresponse()
        raw = response.read()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", "replace")
        return RestAnswer(
            response.status, decoded, {k.lower(): v for k, v in response.getheaders()}, raw
        )
    finally:
        conn.close()
