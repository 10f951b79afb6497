"""The health endpoint: a tiny HTTP/1.1 server on loopback showing each box's idle clock.

GET /v1/boxes, GET /v1/boxes/<name>, GET / (an auto-refreshing page), POST /v1/boxes/<name>/wake|sleep.
Reading never touches a box (it reads the daemon's memory and the cgroup's own files), so looking can
never wake one. Bad requests get a 4xx and the server carries on.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from simbox.box import BoxRuntime

log = logging.getLogger("simbox")
MAX_LINE = 8192
MAX_HEADERS = 100
MAX_BODY = 65536
READ_TIMEOUT = 5.0
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           408: "Request Timeout", 413: "Payload Too Large", 431: "Request Header Fields Too Large",
           500: "Internal Server Error"}


class HttpError(Exception):
    def __init__(self, status: int, message: str, allow: str | None = None) -> None:
        super().__init__(message)
        self.status, self.allow = status, allow


class Health:
    def __init__(self, boxes: dict[str, BoxRuntime], info: Callable[[], dict[str, Any]]) -> None:
        self.boxes, self.info = boxes, info

    def all_json(self) -> dict[str, Any]:
        return {**self.info(), "now": time.time(), "boxes": [b.to_json() for b in self.boxes.values()]}

    def _box(self, name: str) -> BoxRuntime:
        box = self.boxes.get(name)
        if box is None:
            raise HttpError(404, f"no box named {name!r}")
        return box

    async def route(self, method: str, path: str) -> tuple[int, str, bytes]:
        path = path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p]
        if parts == []:
            self._allow(method, "GET")
            return 200, "text/html; charset=utf-8", self.page().encode()
        if parts[:2] == ["v1", "boxes"]:
            if len(parts) == 2:
                self._allow(method, "GET")
                for box in self.boxes.values():
                    box.idle_reads += 1
                return self._json(self.all_json())
            if len(parts) == 3:
                self._allow(method, "GET")
                box = self._box(parts[2])
                box.idle_reads += 1
                return self._json(box.to_json())
            if len(parts) == 4 and parts[3] in ("wake", "sleep"):
                self._allow(method, "POST")
                box = self._box(parts[2])
                if parts[3] == "wake":
                    entry = await box.wake("admin")
                else:
                    entry = await box.sleep("admin")
                return self._json({"changed": entry is not None, "event": entry, "box": box.to_json()})
        raise HttpError(404, f"no such path: {path}")

    @staticmethod
    def _allow(method: str, allowed: str) -> None:
        if method != allowed:
            raise HttpError(405, f"{method} not allowed here; use {allowed}", allow=allowed)

    @staticmethod
    def _json(data: dict[str, Any]) -> tuple[int, str, bytes]:
        return 200, "application/json", json.dumps(data, indent=1).encode()

    def page(self) -> str:
        rows = []
        for b in (x.to_json() for x in self.boxes.values()):
            last_byte = time.strftime("%H:%M:%S", time.localtime(b["last_byte_at"])) \
                if b["last_byte_at"] else "-"
            hist = ", ".join(
                f"{h['event']} {time.strftime('%H:%M:%S', time.localtime(h['at']))}"
                + (f" ({h['wake_s'] * 1000:.0f} ms)" if "wake_s" in h else "") for h in b["history"][-5:])
            rows.append(
                f"<tr class='{b['state']}'><td>{html.escape(b['name'])}</td><td>{b['state']}</td>"
                f"<td>{b['idle_for_s']:.1f} / {b['idle_window_s']:g} s</td><td>{last_byte}</td>"
                f"<td>{b['open_connections']}</td><td>127.0.0.1:{b['ssh']['port']}</td>"
                f"<td>{html.escape(hist) or '-'}</td></tr>")
        return ("<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='1'>"
                "<title>simbox</title><style>body{font-family:sans-serif}td,th{padding:2px 10px}"
                ".asleep{color:#777}</style></head><body><h1>simbox: the idle clock</h1>"
                "<table><tr><th>box</th><th>state</th><th>idle / window</th><th>last byte</th>"
                "<th>connections</th><th>ssh</th><th>recent</th></tr>" + "".join(rows)
                + f"</table><p>daemon pid {os.getpid()}</p></body></html>")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path = await asyncio.wait_for(self._read_request(reader), READ_TIMEOUT)
                status, ctype, body = await self.route(method, path)
                allow = None
            except HttpError as exc:
                status, ctype, allow = exc.status, "application/json", exc.allow
                body = json.dumps({"error": str(exc)}).encode()
            except TimeoutError:
                status, ctype, allow, body = 408, "application/json", None, b'{"error": "request timeout"}'
            head = [f"HTTP/1.1 {status} {REASONS.get(status, '')}", f"Content-Type: {ctype}",
                    f"Content-Length: {len(body)}", "Cache-Control: no-store", "Connection: close"]
            if allow:
                head.append(f"Allow: {allow}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        except Exception:
            log.exception("health: request failed")
        finally:
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> tuple[str, str]:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.LimitOverrunError as exc:
            raise HttpError(431, "request line too long") from exc
        except asyncio.IncompleteReadError as exc:
            raise HttpError(400, "incomplete request") from exc
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/") or not parts[1].startswith("/"):
            raise HttpError(400, "malformed request line")
        method, path = parts[0], parts[1]
        length = 0
        for _ in range(MAX_HEADERS + 1):
            try:
                header = await reader.readuntil(b"\n")
            except asyncio.LimitOverrunError as exc:
                raise HttpError(431, "header too long") from exc
            except asyncio.IncompleteReadError as exc:
                raise HttpError(400, "incomplete headers") from exc
            if header in (b"\r\n", b"\n"):
                break
            key, sep, value = header.decode("latin-1").partition(":")
            if not sep:
                raise HttpError(400, "malformed header")
            if key.strip().lower() == "content-length":
                try:
                    length = int(value.strip())
                except ValueError as exc:
                    raise HttpError(400, "bad Content-Length") from exc
                if length < 0:
                    raise HttpError(400, "bad Content-Length")
        else:
            raise HttpError(431, "too many headers")
        if length > MAX_BODY:
            raise HttpError(413, "body too large")
        if length:
            try:
                await reader.readexactly(length)
            except asyncio.IncompleteReadError as exc:
                raise HttpError(400, "incomplete body") from exc
        return method, path


async def start(health: Health, port: int = 0) -> asyncio.Server:
    return await asyncio.start_server(health.handle, "127.0.0.1", port, limit=MAX_LINE)
