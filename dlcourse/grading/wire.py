"""The data that crosses between the grader and the student's kernel, and how it is framed.

A message is a JSON header plus an optional safetensors blob that holds its tensors. Nothing is pickled:
decoding never runs code of the sender's choosing. What can cross as data:

* ``None``, ``bool``, ``int``, ``float`` (NaN and ±inf included), ``str``;
* lists, tuples, dicts (any data as keys), slices, ``torch.Size``, ``torch.dtype``, ``torch.device``;
* tensors (any dtype safetensors stores; on the meta device, only shape and dtype), NumPy arrays and scalars,
  ``torch.Generator`` (its state);
* records — named tuples, dataclasses, Hugging Face ``ModelOutput`` — which arrive as :class:`Record`.

Anything else crosses as a *reference*: the sender keeps the object in a table and the receiver gets a proxy
(see :mod:`dlcourse.grading.channel`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import struct
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

MAX_HEADER = 64 << 20  # bytes of JSON in one message
MAX_BLOB = 1 << 30  # bytes of tensors in one message
MAX_DEPTH = 64

_DTYPES = {str(d).removeprefix("torch."): d for d in (
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
    torch.float32, torch.float64, torch.complex64, torch.complex128)}


class WireError(ValueError):
    """A message could not be encoded or decoded (malformed, too large, an unsupported value)."""


class Record(tuple):
    """A named tuple, dataclass or ``ModelOutput`` as it arrives: fields by name, position or key."""

    _fields: tuple[str, ...]
    _kind: str

    def __new__(cls, kind: str, fields: list[str], values: list[Any]) -> Record:
        self = super().__new__(cls, values)
        self._fields, self._kind = tuple(fields), kind
        return self

    def __getattr__(self, name: str) -> Any:
        try:
            return tuple.__getitem__(self, self._fields.index(name))
        except ValueError:
            raise AttributeError(f"{self._kind} has no field {name!r}") from None

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return self.__getattr__(key)
        return tuple.__getitem__(self, key)

    def keys(self) -> tuple[str, ...]:
        return self._fields

    def with_values(self, values: list[Any]) -> Record:
        """The same kind of record, with the same fields, holding ``values``."""
        return Record(self._kind, list(self._fields), values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in zip(self._fields, self, strict=True))
        return f"{self._kind}({inner})"

    def __reduce__(self):  # records are data: copying one copies its values
        return (Record, (self._kind, list(self._fields), list(self)))


def _record_fields(obj: Any) -> tuple[str, list[str], list[Any]] | None:
    if isinstance(obj, Record):
        return obj._kind, list(obj._fields), list(obj)
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
        return type(obj).__name__, list(type(obj)._fields), list(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        try:
            from transformers.utils import ModelOutput
        except ImportError:  # pragma: no cover - transformers is a course dependency
            ModelOutput = ()  # noqa: N806
        if isinstance(obj, ModelOutput):  # only the fields that are set, as ModelOutput itself does
            return type(obj).__name__, list(obj.keys()), list(obj.values())
        fields = [f.name for f in dataclasses.fields(obj)]
        return type(obj).__name__, fields, [getattr(obj, f) for f in fields]
    return None


class Encoder:
    """Turns a value into JSON-able data and a dict of tensors; ``export`` makes references of the rest."""

    def __init__(self, export: Callable[[Any], dict] | None = None) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self.export = export
        self.grad_leaves: list[torch.Tensor] = []  # tensors sent with requires_grad, in order

    def _tensor(self, t: torch.Tensor) -> dict:
        if t.device.type == "meta":
            return {"meta": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
        name = str(len(self.tensors))
        data = t.detach()
        if data.is_sparse or data.layout != torch.strided:
            data = data.to_dense()
        if data.is_conj():
            data = data.resolve_conj()
        if data.is_neg():
            data = data.resolve_neg()
        data = data.cpu().contiguous().clone()
        if str(data.dtype).removeprefix("torch.") not in _DTYPES:
            raise WireError(f"tensors of dtype {data.dtype} cannot be sent")
        self.tensors[name] = data
        out: dict[str, Any] = {"t": name}
        if t.requires_grad:
            out["rg"] = True
            self.grad_leaves.append(t)
        if t.device.type != "cpu":
            out["dev"] = str(t.device)
        return out

    def encode(self, obj: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError("the value is nested too deeply to be sent")
        if obj is None or isinstance(obj, bool | str):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"f": repr(obj)}
        if isinstance(obj, np.generic):
            return self.encode(obj.item(), depth + 1)
        if isinstance(obj, torch.Tensor):
            return self._tensor(obj)
        if isinstance(obj, np.ndarray):
            if obj.dtype == object:
                raise WireError("NumPy arrays of Python objects cannot be sent")
            return {"np": self._tensor(torch.from_numpy(np.ascontiguousarray(obj)))["t"]}
        if isinstance(obj, torch.dtype):
            return {"dtype": str(obj).removeprefix("torch.")}
        if isinstance(obj, torch.device):
            return {"device": str(obj)}
        if isinstance(obj, torch.Size):
            return {"size": [int(s) for s in obj]}
        if isinstance(obj, torch.Generator):
            return {"gen": self._tensor(obj.get_state())["t"], "dev": str(obj.device)}
        if isinstance(obj, slice):
            return {"slice": [self.encode(obj.start, depth + 1), self.encode(obj.stop, depth + 1),
                              self.encode(obj.step, depth + 1)]}
        record = _record_fields(obj)
        if record is not None:
            kind, fields, values = record
            return {"record": kind, "fields": fields, "values": [self.encode(v, depth + 1) for v in values]}
        if type(obj) is list:
            return [self.encode(v, depth + 1) for v in obj]
        if type(obj) is tuple:
            return {"tuple": [self.encode(v, depth + 1) for v in obj]}
        if isinstance(obj, dict) and type(obj) in (dict,) or _is_plain_mapping(obj):
            return {"dict": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in obj.items()]}
        if self.export is not None:
            return self.export(obj)
        raise WireError(f"a {type(obj).__name__} cannot be sent as data")


def _is_plain_mapping(obj: Any) -> bool:
    from collections import OrderedDict

    return type(obj) is OrderedDict


class Decoder:
    """The inverse of :class:`Encoder`; ``resolve`` turns a reference back into an object or a proxy."""

    def __init__(self, tensors: dict[str, torch.Tensor], resolve: Callable[[dict], Any] | None = None,
                 device_ok: bool = False) -> None:
        self.tensors, self.resolve, self.device_ok = tensors, resolve, device_ok

    def _tensor(self, name: Any) -> torch.Tensor:
        if not isinstance(name, str) or name not in self.tensors:
            raise WireError(f"the message refers to a tensor {name!r} it does not carry")
        return self.tensors[name]

    def decode(self, data: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise WireError("the message is nested too deeply")
        if data is None or isinstance(data, bool | int | float | str):
            return data
        if isinstance(data, list):
            return [self.decode(v, depth + 1) for v in data]
        if not isinstance(data, dict) or len(data) == 0:
            raise WireError(f"malformed value in the message: {str(data)[:80]}")
        if "t" in data:
            t = self._tensor(data["t"])
            if self.device_ok and "dev" in data:
                t = t.to(torch.device(str(data["dev"])))
            if data.get("rg") and (t.is_floating_point() or t.is_complex()):
                t = t.requires_grad_(True)
            return t
        if "f" in data:
            if data["f"] not in ("nan", "inf", "-inf"):
                raise WireError("malformed float")
            return float(data["f"])
        if "meta" in data:
            return torch.empty([int(s) for s in data["meta"]], dtype=_dtype(data.get("dtype")), device="meta")
        if "np" in data:
            return self._tensor(data["np"]).numpy()
        if "dtype" in data:
            return _dtype(data["dtype"])
        if "device" in data:
            return torch.device(str(data["device"]))
        if "size" in data:
            return torch.Size([int(s) for s in data["size"]])
        if "gen" in data:
            gen = torch.Generator()
            gen.set_state(self._tensor(data["gen"]))
            return gen
        if "slice" in data:
            return slice(*(self.decode(v, depth + 1) for v in data["slice"]))
        if "tuple" in data:
            return tuple(self.decode(v, depth + 1) for v in data["tuple"])
        if "dict" in data:
            out = {}
            for pair in data["dict"]:
                key, value = self.decode(pair[0], depth + 1), self.decode(pair[1], depth + 1)
                try:
                    out[key] = value
                except TypeError as err:
                    raise WireError("unhashable key in a dict") from err
            return out
        if "record" in data:
            fields = [str(f) for f in data.get("fields", [])]
            values = [self.decode(v, depth + 1) for v in data.get("values", [])]
            if len(fields) != len(values):
                raise WireError("malformed record")
            return Record(str(data["record"]), fields, values)
        if "ref" in data and self.resolve is not None:
            return self.resolve(data)
        raise WireError(f"unknown kind of value in the message: {sorted(data)[:3]}")


def _dtype(name: Any) -> torch.dtype:
    if name not in _DTYPES:
        raise WireError(f"unknown dtype {name!r}")
    return _DTYPES[name]


# ------------------------------------------------------------------------------------------- framing


def pack(header: dict, tensors: dict[str, torch.Tensor]) -> bytes:
    """One frame: lengths, JSON header, safetensors blob."""
    from safetensors.torch import save

    head = json.dumps(header, allow_nan=False, ensure_ascii=True).encode()
    blob = save(tensors) if tensors else b""
    if len(head) > MAX_HEADER or len(blob) > MAX_BLOB:
        raise WireError(f"message too large ({len(head)} + {len(blob)} bytes)")
    return struct.pack(">QQ", len(head), len(blob)) + head + blob


def _read_exactly(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 22))
        if not chunk:
            raise ConnectionError("the other side closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> tuple[dict, dict[str, torch.Tensor]]:
    """Read one frame; refuses oversized or malformed frames without reading them into memory."""
    from safetensors.torch import load

    n_head, n_blob = struct.unpack(">QQ", _read_exactly(sock, 16))
    if n_head > MAX_HEADER or n_blob > MAX_BLOB:
        raise WireError(f"message too large ({n_head} + {n_blob} bytes)")
    try:
        header = json.loads(_read_exactly(sock, n_head))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise WireError(f"malformed message header: {err}") from err
    if not isinstance(header, dict):
        raise WireError("malformed message header")
    blob = _read_exactly(sock, n_blob) if n_blob else b""
    try:
        tensors = load(blob) if blob else {}
    except Exception as err:  # safetensors raises its own error types
        raise WireError(f"malformed tensor data: {err}") from err
    return header, tensors
