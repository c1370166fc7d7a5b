"""A stand-in for the Ray calls the runner makes (remote, wait, get), for tests of the pool without Ray: each
task starts at once and is done when waited on; a subclass says what it records of a task (`name`) and what a
worker would hand back for it (`get`)."""

from __future__ import annotations

from typing import Any


class Ref:
    def __init__(self, task: Any) -> None:
        self.task = task


class FakeRay:
    def __init__(self) -> None:
        self.started: list[str] = []

    def name(self, task: Any) -> str:
        """What `started` records of a task, in the order the tasks started."""
        return task.key

    def remote(self, **_options: Any):
        outer = self

        class Remote:
            @staticmethod
            def remote(task: Any) -> Ref:
                outer.started.append(outer.name(task))
                return Ref(task)
        return lambda fn: Remote

    def wait(self, refs: list[Ref], num_returns: int, timeout: float) -> tuple[list[Ref], list[Ref]]:
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: Ref, timeout: float) -> dict[str, Any]:
        raise NotImplementedError
