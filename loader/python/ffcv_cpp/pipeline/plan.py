"""How one pipeline splits between the loader's workers and the consumer.

A pipeline ``[decoder?, step, ...]`` becomes a native output (decoder, per-sample operations,
batch operations), which the workers run, and a list of steps on whole batches, which the
iterator runs in the consumer's thread. Steps go native for as long as they can: a step with a
native twin (NormalizeImage, Convert) runs per sample when it comes before the first step that
only runs on batches (ToTensor, ToDevice, a callable, ...), and on batches after it. A
per-sample step after that point, or a numba Operation anywhere, is refused with what to do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence

from .operation import BatchStep, NativeStep


@dataclass
class OutputPlan:
    name: str
    source: str
    decoder: Optional[NativeStep] = None
    operations: List[NativeStep] = field(default_factory=list)
    batch_operations: List[NativeStep] = field(default_factory=list)
    batch_steps: List[BatchStep] = field(default_factory=list)
    layout: Optional[str] = None  # a ragged output's, once the native loader declared it

    def native(self):
        return (self.name, self.source, self.decoder.native() if self.decoder else None,
                [step.native() for step in self.operations],
                [step.native() for step in self.batch_operations])

    def makes_tensor(self) -> bool:
        return any(step.makes_tensor for step in self.batch_steps)


class CallableStep(BatchStep):
    """A plain callable (or torch.nn.Module) on whole batches."""

    def __init__(self, function: Callable[[Any], Any]) -> None:
        self.function = function

    def apply(self, batch):
        return self.function(batch)


def refusal(name: str, step: Any) -> str:
    kind = type(step).__name__
    return (f"pipeline {name!r}: {kind} is an Operation (numba code that Python FFCV compiles "
            "into its workers), which this loader cannot run. Write it as a callable or "
            "torch.nn.Module on whole batches and place it after ToTensor(), or as a C++ step "
            "in an op library (docs/python.md)")


def is_numba_operation(step: Any) -> bool:
    return hasattr(step, "generate_code") and not isinstance(step, (NativeStep, BatchStep))


def plan_output(name: str, source: str, decoder: Optional[NativeStep],
                steps: Sequence[Any]) -> OutputPlan:
    plan = OutputPlan(name, source, decoder)
    native_open = True  # no step on whole batches yet
    for position, step in enumerate(steps):
        if isinstance(step, NativeStep):
            _add_native(plan, step, position, native_open)
            continue
        if is_numba_operation(step):
            raise TypeError(refusal(name, step))
        if isinstance(step, BatchStep):
            twin = step.native_twin() if native_open and not plan.batch_operations else None
            if twin is not None:
                plan.operations.append(twin)
            else:
                native_open = False
                plan.batch_steps.append(step)
        elif callable(step):
            native_open = False
            plan.batch_steps.append(CallableStep(step))
        else:
            raise TypeError(f"pipeline {name!r}: step {position} ({type(step).__name__}) is neither "
                            "a decoder, a transform nor a callable")
    after = getattr(plan.decoder, "after_batch", None)
    if after is not None:
        plan.batch_steps.insert(0, CallableStep(after))
    return plan


def _add_native(plan: OutputPlan, step: NativeStep, position: int, native_open: bool) -> None:
    where = f"pipeline {plan.name!r}: {step!r}"
    if step.kind == "decoder":
        if plan.decoder is not None or plan.operations or position > 0:
            raise ValueError(f"{where} is a decoder: it must be the pipeline's first step")
        plan.decoder = step
    elif not native_open:
        raise ValueError(f"{where} runs in the loader's workers: place it before ToTensor() and "
                         "the other steps on whole batches")
    elif step.kind == "batch_operation":
        plan.batch_operations.append(step)
    elif plan.batch_operations:
        raise ValueError(f"{where} runs per sample, and so must come before "
                         f"{plan.batch_operations[0]!r}, which runs on whole batches")
    else:
        plan.operations.append(step)
