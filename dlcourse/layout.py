"""A Hugging Face module seen through the course's parameter names: the mechanism behind the ``InCourseLayout``
classes of :mod:`dlcourse.bert.model` and :mod:`dlcourse.vit.model`, which supply each architecture's names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn


class CourseLayout(nn.Module):
    """Parameters under course names; ``forward`` calls the wrapped Hugging Face module on them.

    ``sources`` maps each Hugging Face tensor name to ``(course name, third, shape)``: the course parameter it
    is read from, which third (0 = q, 1 = k, 2 = v) of a stacked ``in_proj_*`` it is (``None``: all of it), and
    its shape in Hugging Face. ``state`` holds the course parameters' initial values. ``forward`` rebuilds
    Hugging Face's tensors as differentiable views and calls the module with ``torch.func.functional_call``
    (tied weights stay tied), so outputs *and* gradients are Hugging Face's. ``output`` picks what to return;
    ``keywords`` names the positional arguments when the module needs them by keyword. ``names`` maps a Hugging
    Face parameter name to ``(course name, third)``: with it, :meth:`traced_submodules` names the wrapped model's
    layers in the course's terms, so a check can say which of the student's layers first parts from it.
    """

    def __init__(self, hf_module: nn.Module, sources: dict[str, tuple[str, int | None, torch.Size]],
                 state: dict[str, torch.Tensor], output: Callable[[Any], Any] = lambda out: out,
                 keywords: tuple[str, ...] | None = None,
                 names: Callable[[str], tuple[str, int | None]] | None = None) -> None:
        super().__init__()
        # kept outside the module tree, so that named_parameters() lists the course's names only
        object.__setattr__(self, "_hf", hf_module)
        self._output = output
        self._keywords = keywords
        self._sources = sources
        self._names = names
        for name, tensor in state.items():
            *path, leaf = name.split(".")
            owner: nn.Module = self
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, nn.Module())
                owner = getattr(owner, part)
            owner.register_parameter(leaf, nn.Parameter(tensor))

    def traced_submodules(self) -> list[tuple[str, nn.Module]]:
        """The wrapped model's submodules under course names (:func:`dlcourse.grading.trace.submodule_trace`
        hooks these): a layer is named as its weight is (``encoder.layer.0.attention.output.dense`` →
        ``layers.0.self_attn.out_proj``), a layer without weights of its own as one with them would be
        (``encoder.layer.0`` → ``layers.0``). The query, key and value projections, which the course stacks into
        one matrix, have no course counterpart and are left out; so is everything without ``names``."""
        found = []
        for hf_name, sub in self._hf.named_modules():
            if not hf_name or self._names is None:
                continue
            course, third = self._names(hf_name + ".weight")
            if third is None and course.endswith(".weight"):
                found.append((course[: -len(".weight")], sub))
        return found

    @property
    def hf(self) -> nn.Module:
        """The wrapped Hugging Face module (its own parameters are not used by ``forward``)."""
        return self._hf

    def hf_tensors(self) -> dict[str, torch.Tensor]:
        """This module's parameters in Hugging Face's names and shapes (differentiable views)."""
        params = dict(self.named_parameters())
        tensors = {}
        for hf_name, (name, third, shape) in self._sources.items():
            value = params[name]
            if third is not None:
                value = value.chunk(3)[third]
            tensors[hf_name] = value.reshape(shape)
        return tensors

    def train(self, mode: bool = True) -> CourseLayout:
        self._hf.train(mode)
        return super().train(mode)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._keywords is not None:
            kwargs = dict(zip(self._keywords, args, strict=False)) | kwargs
            args = ()
        out = torch.func.functional_call(self._hf, self.hf_tensors(), args, kwargs, tie_weights=True, strict=False)
        return self._output(out)
