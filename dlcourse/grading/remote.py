"""The grader side: proxies for the student's objects, and the objects the grader lends to the kernel.

A test cell runs in the grader with each name the student defined bound to a :class:`Remote`. Calling it,
reading an attribute, indexing it or taking its length asks the kernel; the answer comes back as data
(tensors, numbers, tuples, records) or as another :class:`Remote` for what cannot cross (a module, a
bound method). The checks in :mod:`dlcourse.checks` recognise a :class:`Remote` and ask the kernel for
exactly what they need (a call under guards, gradients of a projection); the comparison is theirs.

What the grader lends the kernel — any argument that is not data, e.g. a Hugging Face model — stays here:
the kernel may call it and read its plain-data attributes, nothing else (:class:`Lender`).
"""

from __future__ import annotations

from typing import Any

import torch

from dlcourse.grading import guards
from dlcourse.grading.channel import Channel, RemoteException
from dlcourse.grading.common import CheckFailure, ForbiddenCall, describe_case, float_tensors


def _special_errors() -> dict[str, type]:
    return {"ForbiddenCall": ForbiddenCall, "CheckFailure": CheckFailure}


class Remote:
    """An object living in the student's kernel."""

    __slots__ = ("_channel", "_ref", "_label")
    _proxy_side = "kernel"

    def __init__(self, channel: Channel, ref: int, label: str = "") -> None:
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_label", label)

    @property
    def __name__(self) -> str:  # noqa: PLW3201 - labels in check messages
        return self._label or "your function"

    def _request(self, op: str, **fields: Any) -> Any:
        return self._channel.request(op, obj=self, **fields)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.call(args, kwargs)

    def call(self, args: Any, kwargs: dict, *, echo: bool = False, no_grad: bool = False) -> Any:
        """Call the object in the kernel with the guards now in force (:mod:`dlcourse.grading.guards`). An error
        the student's code raises comes back as its own kind, its message led by the inputs it met."""
        try:
            return self._request("call", args=list(args), kwargs=dict(kwargs), guards=guards.active(), echo=echo,
                                 no_grad=no_grad)
        except RemoteException as err:
            raise with_case(err, args, kwargs) from None

    def backward(self, args: Any, kwargs: dict, wrt: list[int], seed: int, params: bool = False) -> dict:
        """Run it on ``args``, project the output on a seeded random tensor, return the gradients."""
        return self._request("backward", args=list(args), kwargs=dict(kwargs), wrt=list(wrt), seed=seed,
                             guards=guards.active(), params=params)

    def aliases(self, args: Any, kwargs: dict) -> dict:
        """Call the object in the kernel: where its result holds one of its arguments, in words (``"aliases"``), and
        the arguments as the call left them (``"args"``, ``"kwargs"``)."""
        try:
            return self._request("aliases", args=list(args), kwargs=dict(kwargs), guards=guards.active())
        except RemoteException as err:
            raise with_case(err, args, kwargs) from None

    def trace(self, args: Any, kwargs: dict) -> list:
        """Each submodule's first input and output when the module runs on ``args``, in the kernel
        (:func:`dlcourse.grading.trace.submodule_trace`)."""
        return [tuple(r) for r in self._request("trace", args=list(args), kwargs=dict(kwargs), guards=guards.active())]

    def same(self, a: str, b: str) -> bool:
        """Whether attribute paths ``a`` and ``b`` of this object are the same object in the kernel."""
        return bool(self._request("same", a=a, b=b))

    def parameter_names(self) -> list[str]:
        """Names of the parameters of the object's ``forward`` (a module) or of the object (a function)."""
        return list(self._request("params"))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = self._request("getattr", name=name)
        if isinstance(value, Remote) and not value._label:
            object.__setattr__(value, "_label", f"{self._label}.{name}" if self._label else name)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        self._request("setattr", name=name, value=value)

    def __getitem__(self, key: Any) -> Any:
        return self._request("item", key=key)

    def __len__(self) -> int:
        return int(self._request("len"))

    def __repr__(self) -> str:
        return f"<{self._label or 'an object'} in the student's kernel>"


def with_case(err: RemoteException, args: Any, kwargs: dict) -> BaseException:
    """``err`` again, its message led by the inputs of the call that raised it (once: ``case_named``)."""
    case = describe_case(args, kwargs)
    if getattr(err, "case_named", False) or not case:
        return err
    again = type(err)(f"when called with {case}: {err}")
    again.case_named = True
    return again


class Lender:
    """Answers the kernel's requests about objects the grader lent it: calls, plain-data attributes, VJPs."""

    def __init__(self) -> None:
        self.graphs: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {}
        self.channel: Channel | None = None

    def handle(self, op: str, body: dict) -> Any:
        if op == "call":
            return self._call(body["obj"], body.get("args", []), body.get("kwargs", {}), bool(body.get("grad")))
        if op == "getattr":
            return self._getattr(body["obj"], body.get("name"))
        if op == "vjp":
            return self._vjp(body.get("call"), body.get("grads", []))
        raise PermissionError(f"the grader does not answer {op!r} requests")

    def _owned(self, obj: Any) -> Any:
        if isinstance(obj, Remote):
            raise TypeError("that object belongs to the kernel, not to the grader")
        return obj

    def _call(self, obj: Any, args: Any, kwargs: Any, grad: bool) -> Any:
        obj = self._owned(obj)
        if not callable(obj) or isinstance(obj, type):
            raise TypeError("this object lent by the grader cannot be called")
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise TypeError("malformed call")
        if not grad:
            with torch.no_grad():
                return obj(*args, **kwargs)
        leaves = [t for t in float_tensors((args, kwargs)) if t.requires_grad]
        with torch.enable_grad():
            value = obj(*args, **kwargs)
        call = len(self.graphs) + 1
        self.graphs[call] = (leaves, float_tensors(value))
        return {"value": value, "call": call}

    def _vjp(self, call: Any, grads: Any) -> list[torch.Tensor]:
        if call not in self.graphs or not isinstance(grads, list):
            raise ValueError("unknown call")
        leaves, outs = self.graphs[call]
        if len(grads) != len(outs):
            raise ValueError("wrong number of gradients")
        pairs = [(o, g) for o, g in zip(outs, grads, strict=True)
                 if o.requires_grad and isinstance(g, torch.Tensor) and g.shape == o.shape]
        if not pairs or not leaves:
            return [torch.zeros_like(t) for t in leaves]
        got = torch.autograd.grad([o for o, _ in pairs], leaves, [g.to(o.dtype) for o, g in pairs],
                                  allow_unused=True, retain_graph=True)
        return [torch.zeros_like(t) if g is None else g for t, g in zip(leaves, got, strict=True)]

    def _getattr(self, obj: Any, name: Any) -> Any:
        obj = self._owned(obj)
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise AttributeError(f"{name!r} is not readable")
        value = getattr(obj, name)
        from dlcourse.grading.wire import Encoder, WireError

        try:
            Encoder().encode(value)  # data only: no method, module or class leaves the grader
        except WireError as err:
            raise AttributeError(f"{name!r} of an object lent by the grader is not plain data") from err
        return value


def remote_channel(sock: Any) -> tuple[Channel, Lender]:
    """The grader's end of a connection from the kernel's agent."""
    lender = Lender()
    channel = Channel(sock, "grader", lender.handle, lambda ch, ref: Remote(ch, ref),
                      special_errors=_special_errors())
    lender.channel = channel
    return channel, lender


_CURRENT: dict[str, Channel | None] = {"channel": None}


def set_channel(channel: Channel | None) -> None:
    """The channel to the kernel whose test cell the grader is running now (None when it is done)."""
    _CURRENT["channel"] = channel


def build(path: str, args: Any, kwargs: dict) -> Any:
    """Call the course package's factory ``path`` in the student's kernel; what it returns stays there."""
    channel = _CURRENT["channel"]
    if channel is None:
        raise RuntimeError("no kernel is connected to the grader")
    return channel.request("build", path=path, args=list(args), kwargs=dict(kwargs))


def is_remote(obj: Any) -> bool:
    """True for a proxy of an object in the student's kernel."""
    return isinstance(obj, Remote)
