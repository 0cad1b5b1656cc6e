"""The build order: every package after the packages it depends on."""

from __future__ import annotations

from pipewright.workspace import Package


def build_order(packages: dict[str, Package]) -> list[str]:
    """Package names, each after all of its dependencies."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for dependency in packages[name].depends:
            visit(dependency)
        order.append(name)

    for name in packages:
        visit(name)
    return order
