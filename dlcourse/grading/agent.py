"""The kernel side of trusted grading: look up the student's names, call them, send back data.

The grader runs ``serve(socket_path, globals())`` as a cell in the student's kernel; the call returns when
the grader has finished one test cell. Nothing here decides a grade: whatever this side sends back is
compared in the grader. Models the grader lends (a Hugging Face model, a recording decoder step) arrive
as :class:`Served` proxies: calling one calls the grader's object, and gradients flow back through it.
"""

from __future__ import annotations

import contextlib
import inspect
import socket
from typing import Any

import torch

from dlcourse.grading import guards
from dlcourse.grading.channel import Channel
from dlcourse.grading.common import attribute_path, float_tensors, random_projection
from dlcourse.grading.wire import Record


def _guards(specs: Any) -> contextlib.ExitStack:
    """The guards a call carries, installed here: each spec names its guard (``guards.travelling``) and its
    arguments; this module knows none of them. Specs of one guard whose arguments are (names, why) — a test's own
    refusals and the grader's — are installed as one guard with all the names (and the first reason given): each
    guard installed costs every operator of the call a detour."""
    merged: list[list] = []
    for spec in specs or []:
        spec = list(spec)
        same = next((m for m in merged if m[0] == spec[0]), None)
        if same is not None and _names_and_why(same) and _names_and_why(spec):
            same[1] = sorted(set(same[1]) | set(spec[1]))
            same[2] = same[2] or spec[2]
            continue
        merged.append(spec)
    stack = contextlib.ExitStack()
    for spec in merged:
        stack.enter_context(guards.resolve(spec[0])(*spec[1:]))
    return stack


def _names_and_why(spec: list) -> bool:
    return len(spec) == 3 and isinstance(spec[1], list) and all(isinstance(n, str) for n in spec[1]) \
        and isinstance(spec[2], str)


def _replace(obj: Any, new: list[torch.Tensor]) -> Any:
    """``obj`` with its floating-point tensors replaced, in order, by those of ``new`` (consumed)."""
    if isinstance(obj, torch.Tensor):
        return new.pop(0) if obj.is_floating_point() or obj.is_complex() else obj
    if isinstance(obj, Record):
        return obj.with_values([_replace(v, new) for v in obj])
    if isinstance(obj, tuple | list):
        return type(obj)(_replace(v, new) for v in obj)
    if isinstance(obj, dict):
        return {k: _replace(v, new) for k, v in obj.items()}
    return obj


class Served:
    """A callable the grader lends to the student's code. Calls go to the grader; gradients come back."""

    _proxy_side = "grader"

    def __init__(self, channel: Channel, ref: int) -> None:
        self._channel, self._ref = channel, ref

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves = float_tensors((args, kwargs))
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in leaves)
        if not needs_grad:
            return self._channel.request("call", obj=self, args=list(args), kwargs=kwargs)
        box: dict[str, Any] = {}
        grad_leaves = [t for t in leaves if t.requires_grad]

        channel, me = self._channel, self

        class _Call(torch.autograd.Function):
            @staticmethod
            def forward(ctx, *inputs):  # inputs: the leaves, so autograd links them
                reply = channel.request("call", obj=me, args=list(args), kwargs=kwargs, grad=True)
                box["value"], box["call"] = reply["value"], reply["call"]
                outs = float_tensors(box["value"])
                box["n"] = len(outs)
                return tuple(o.detach() for o in outs)

            @staticmethod
            def backward(ctx, *grads):
                got = channel.request("vjp", call=box["call"], grads=list(grads))
                return tuple(got)

        outs = list(_Call.apply(*grad_leaves))
        if not box.get("n"):
            return box["value"]
        return _replace(box["value"], outs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._channel.request("getattr", obj=self, name=name)

    def __repr__(self) -> str:
        return "<an object lent by the grader>"


class Agent:
    """Answers the grader's requests against the kernel's namespace."""

    def __init__(self, namespace: dict) -> None:
        self.ns = namespace

    def handle(self, op: str, body: dict) -> Any:
        method = getattr(self, "op_" + op, None)
        if method is None:
            raise ValueError(f"unknown request {op!r}")
        return method(**body)

    def op_lookup(self, name: str) -> Any:
        if name not in self.ns:
            raise NameError(f"name {name!r} is not defined")
        return self.ns[name]

    def op_getattr(self, obj: Any, name: str) -> Any:
        return getattr(obj, name)

    def op_setattr(self, obj: Any, name: str, value: Any) -> None:
        setattr(obj, name, value)

    def op_item(self, obj: Any, key: Any) -> Any:
        return obj[key]

    def op_len(self, obj: Any) -> int:
        return len(obj)

    def op_same(self, obj: Any, a: str, b: str) -> bool:
        return attribute_path(obj, a) is attribute_path(obj, b)

    def op_build(self, path: str, args: list, kwargs: dict) -> Any:
        """Call the course package's factory ``path`` (``dlcourse.…``) here, for a test that needs objects
        (modules, optimizers) to live in this kernel; the grader checks what they compute."""
        module_name, _, attr = str(path).rpartition(".")
        if not (module_name == "dlcourse" or module_name.startswith("dlcourse.")) or not attr.isidentifier():
            raise PermissionError(f"only the course package's factories can be built here, not {path!r}")
        import importlib

        return getattr(importlib.import_module(module_name), attr)(*args, **kwargs)

    def op_integrity(self) -> list[str]:
        """The course's and torch's objects replaced since the grader's baseline (:mod:`dlcourse.grading.integrity`)."""
        from dlcourse.grading import integrity

        return integrity.changed()

    def op_params(self, obj: Any) -> list[str]:
        fn = obj.forward if isinstance(obj, torch.nn.Module) else obj
        try:
            return [p for p in inspect.signature(fn).parameters if p != "self"]
        except (TypeError, ValueError):
            return []

    def op_call(self, obj: Any, args: list, kwargs: dict, guards: Any = None, echo: bool = False,
                no_grad: bool = False) -> Any:
        with _guards(guards), torch.no_grad() if no_grad else contextlib.nullcontext():
            value = obj(*args, **kwargs)
        if echo:
            return {"value": value, "args": args, "kwargs": kwargs}
        return value

    def op_aliases(self, obj: Any, args: list, kwargs: dict, guards: Any = None) -> dict:
        """Call ``obj``; where its result holds one of its arguments (:func:`~dlcourse.grading.common.aliases`:
        only this kernel can tell, since what crosses to the grader is a copy), and the arguments after the call."""
        from dlcourse.grading.common import aliases

        with _guards(guards):
            result = obj(*args, **kwargs)
        return {"aliases": aliases(result, args, kwargs), "args": args, "kwargs": kwargs}

    def op_trace(self, obj: Any, args: list, kwargs: dict, guards: Any = None) -> list:
        """What each submodule of the module ``obj`` computed on ``args`` (:mod:`dlcourse.grading.trace`): for a
        message that says where the student's module and the oracle part."""
        from dlcourse.grading.trace import submodule_trace

        if not isinstance(obj, torch.nn.Module):
            raise TypeError("only a module can be traced")
        with _guards(guards):
            return [list(record) for record in submodule_trace(obj, args, kwargs)]

    def op_backward(self, obj: Any, args: list, kwargs: dict, wrt: list[int], seed: int, guards: Any = None,
                    params: bool = False) -> dict:
        xs = [a.detach().clone().requires_grad_(i in wrt) if isinstance(a, torch.Tensor) and i in wrt else a
              for i, a in enumerate(args)]
        if params and isinstance(obj, torch.nn.Module):
            obj.zero_grad(set_to_none=True)
        with _guards(guards):
            out = obj(*xs, **kwargs)
        total = random_projection(out, seed)
        if not isinstance(total, torch.Tensor) or not total.requires_grad:
            return {"output": out, "connected": False}
        leaves = [xs[i] for i in wrt]
        # frozen parameters are not differentiated (autograd refuses them); they get zeros, as unused ones do
        named = list(obj.named_parameters()) if params and isinstance(obj, torch.nn.Module) else []
        trained = [p for _, p in named if p.requires_grad]
        grads = list(torch.autograd.grad(total, leaves + trained, allow_unused=True)) if leaves + trained else []
        input_grads, rest = grads[:len(leaves)], iter(grads[len(leaves):])
        param_grads = {}
        for k, p in named:
            g = next(rest) if p.requires_grad else None
            param_grads[k] = torch.zeros_like(p) if g is None else g
        return {"output": out, "connected": True, "input_grads": input_grads, "param_grads": param_grads}



def serve(path: str, namespace: dict) -> None:
    """Connect to the grader's socket at ``path`` and answer its requests until it closes the channel."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    agent = Agent(namespace)
    channel = Channel(sock, "kernel", agent.handle, lambda ch, ref: Served(ch, ref), device_ok=True)
    try:
        channel.serve()
    finally:
        channel.forget()
        sock.close()
