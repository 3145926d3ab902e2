"""A request/reply channel over one socket, served by both sides, with references to objects.

Either side may send a request while it waits for a reply: the grader asks the kernel to call a student's
function, and that function may call back a model the grader serves. Replies and nested requests are told
apart by ``kind``. An object that cannot cross as data stays where it is, in the sender's table, and the
receiver gets a reference; only the side that owns an object ever touches it.
"""

from __future__ import annotations

import builtins
import itertools
import socket
import time
from collections.abc import Callable
from typing import Any

from dlcourse.grading.wire import Decoder, Encoder, WireError, pack, read_frame


class ChannelClosed(ConnectionError):
    """The other side went away (its process died, or it closed the connection)."""


class ChannelTimeout(TimeoutError):
    """The other side did not answer before the deadline."""


# Exceptions re-raised on the receiving side as themselves (by their builtin base); others as RuntimeError.
_PASSABLE = {name: getattr(builtins, name) for name in (
    "ValueError", "TypeError", "IndexError", "KeyError", "RuntimeError", "NotImplementedError", "AssertionError",
    "AttributeError", "ZeroDivisionError", "NameError", "ArithmeticError", "LookupError", "OverflowError",
    "FloatingPointError", "RecursionError", "MemoryError", "UnicodeError", "StopIteration", "Exception")}


class RemoteException(Exception):  # noqa: N818 - mixin of the re-raised exceptions
    """Mixed into an exception raised on the other side; ``remote_type`` is its class name there."""

    remote_type: str = ""


_remote_classes: dict[tuple[str, type], type] = {}


def error_payload(err: BaseException) -> dict:
    """What the other side needs to re-raise ``err``: its class name, builtin bases and message."""
    bases = [c.__name__ for c in type(err).__mro__ if c.__module__ == "builtins"]
    try:
        message = str(err)
    except Exception:  # noqa: BLE001 - a student's exception whose __str__ fails
        message = "<the error message could not be read>"
    return {"type": type(err).__name__[:200], "bases": bases[:20], "message": message[:20000]}


def rebuild_error(payload: Any, special: dict[str, type] | None = None) -> BaseException:
    """An exception of the nearest passable builtin class (or a ``special`` one, by name)."""
    if not isinstance(payload, dict):
        return RuntimeError("the other side failed without saying why")
    name, message = str(payload.get("type", "Error")), str(payload.get("message", ""))
    if special and name in special:
        return special[name](message)
    base = next((_PASSABLE[b] for b in payload.get("bases", []) if b in _PASSABLE), RuntimeError)
    key = (name, base)
    if key not in _remote_classes:
        _remote_classes[key] = type(name if name.isidentifier() else "RemoteError", (base, RemoteException),
                                    {"remote_type": name, "__module__": "student"})
    return _remote_classes[key](message)


class Channel:
    """One end of the connection. ``handler(op, body)`` answers the other side's requests."""

    def __init__(self, sock: socket.socket, side: str, handler: Callable[[str, dict], Any],
                 make_proxy: Callable[[Channel, int], Any], device_ok: bool = False,
                 special_errors: dict[str, type] | None = None) -> None:
        self.sock, self.side, self.handler, self.make_proxy = sock, side, handler, make_proxy
        self.device_ok, self.special_errors = device_ok, special_errors or {}
        self.objects: dict[int, Any] = {}
        self._ids = itertools.count(1)
        self._by_identity: dict[int, int] = {}
        self.deadline: float | None = None
        self.closed = False

    # references -------------------------------------------------------------------------------------
    def export(self, obj: Any) -> dict:
        """Keep ``obj`` here and return a reference to it (the same reference for the same object).

        A proxy of the other side's object goes back as the other side's own reference.
        """
        side = getattr(type(obj), "_proxy_side", None)
        if side is not None and side != self.side and getattr(obj, "_channel", None) is self:
            return {"ref": obj._ref, "side": side}
        ref = self._by_identity.get(id(obj))
        if ref is None or self.objects.get(ref) is not obj:
            ref = next(self._ids)
            self.objects[ref] = obj
            self._by_identity[id(obj)] = ref
        return {"ref": ref, "side": self.side}

    def resolve(self, data: dict) -> Any:
        ref = data.get("ref")
        if not isinstance(ref, int):
            raise WireError("malformed reference")
        if data.get("side") == self.side:
            if ref not in self.objects:
                raise WireError(f"reference {ref} is not known here")
            return self.objects[ref]
        return self.make_proxy(self, ref)

    def forget(self) -> None:
        """Drop every object this side exported (they are no longer needed by the other side)."""
        self.objects.clear()
        self._by_identity.clear()

    # framing ----------------------------------------------------------------------------------------
    def _send(self, header: dict, tensors: dict) -> None:
        try:
            self.sock.sendall(pack(header, tensors))
        except OSError as err:
            self.closed = True
            raise ChannelClosed(f"the connection broke while sending: {err}") from err

    def _recv(self) -> tuple[dict, dict]:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout("the student's code did not answer in time")
            self.sock.settimeout(left)
        else:
            self.sock.settimeout(None)
        try:
            return read_frame(self.sock)
        except TimeoutError as err:
            raise ChannelTimeout("the student's code did not answer in time") from err
        except (ConnectionError, OSError) as err:
            self.closed = True
            raise ChannelClosed(str(err) or "the connection closed") from err

    def encode(self, fields: dict) -> tuple[dict, dict, Encoder]:
        enc = Encoder(self.export)
        return {k: enc.encode(v) for k, v in fields.items()}, enc.tensors, enc

    def decode(self, body: Any, tensors: dict) -> Any:
        if not isinstance(body, dict):
            raise WireError("malformed message body")
        dec = Decoder(tensors, self.resolve, device_ok=self.device_ok)
        return {str(k): dec.decode(v) for k, v in body.items()}

    # requests ---------------------------------------------------------------------------------------
    def request(self, op: str, **fields: Any) -> Any:
        """Send a request and wait for its reply, answering the other side's requests meanwhile."""
        body, tensors, _ = self.encode(fields)
        self._send({"kind": "req", "op": op, "body": body}, tensors)
        return self._await_reply()

    def _await_reply(self) -> Any:
        while True:
            header, tensors = self._recv()
            kind = header.get("kind")
            if kind == "reply":
                if "error" in header:
                    raise rebuild_error(header["error"], self.special_errors)
                return self.decode(header.get("body", {}), tensors).get("value")
            if kind == "req":
                if self._serve_one(header, tensors):
                    raise ChannelClosed("the other side closed the channel during a request")
            else:
                raise WireError(f"unexpected message kind {kind!r}")

    def _serve_one(self, header: dict, tensors: dict) -> bool:
        """Answer one request; True when it was ``close``."""
        op = header.get("op")
        if op == "close":
            self._send({"kind": "reply", "body": {"value": None}}, {})
            return True
        try:
            value = self.handler(str(op), self.decode(header.get("body", {}), tensors))
            body, out, _ = self.encode({"value": value})
            self._send({"kind": "reply", "body": body}, out)
        except (ChannelClosed, ChannelTimeout):
            raise
        except BaseException as err:  # noqa: BLE001 - the other side gets every failure as an error reply
            if isinstance(err, KeyboardInterrupt | SystemExit) and self.side == "grader":
                raise
            self._send({"kind": "reply", "error": error_payload(err)}, {})
        return False

    def serve(self) -> None:
        """Answer requests until the other side sends ``close``."""
        while True:
            header, tensors = self._recv()
            if header.get("kind") != "req":
                raise WireError("expected a request")
            if self._serve_one(header, tensors):
                return

    def close(self) -> None:
        """Tell the other side to stop serving, then close the socket."""
        if not self.closed:
            try:
                self.request("close")
            except (ChannelClosed, ChannelTimeout, WireError):
                pass
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
