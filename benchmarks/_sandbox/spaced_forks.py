"""Fork + first call when forks come apart (a round's branches, a verifier's fork), with the
spares' thread making up what the fork took SETTLE_S after the take (the default) beside
making it up at once (SETTLE_S = 0), interleaved in one run so that the machine's drift hits
both alike.

Back-to-back forks (section 0's own figure) leave no quiet gap: the next fork's first call
shares the cores with the spares being made up either way. Forks GAP_S apart show what the
settle buys: the taker's first call, which mounts its root, has the cores to itself."""

import statistics
import time

from _stats import fmt_ms, fmt_ratio
from sprout.sandbox import LayerStore
from sprout.sandbox.backends import spares

from .common import Row
from .phases import fork_phases

GAP_S = 0.1


def spaced_forks(store: LayerStore, base: str, rounds: int, n: int) -> dict[str, float]:
    """The median over rounds of each round's median fork + first call, in ms, forks GAP_S
    apart: `settled` (the default) and `at once`."""
    default = spares.SETTLE_S
    found: dict[str, list[float]] = {"at once": [], "settled": []}
    try:
        for _ in range(rounds):
            for name, settle in (("at once", 0.0), ("settled", default)):
                spares.SETTLE_S = settle
                found[name].append(statistics.median(_spaced(store, base, n)))
    finally:
        spares.SETTLE_S = default
    return {name: statistics.median(medians) * 1e3 for name, medians in found.items()}


def _spaced(store: LayerStore, base: str, n: int) -> list[float]:
    took = []
    for _ in range(n):
        time.sleep(GAP_S)
        seconds, sandbox = fork_phases(store, base)
        sandbox.close()
        took.append(sum(seconds.values()))
    return took


def spaced_row(section: str, found: dict[str, float]) -> Row:
    return Row(
        section,
        f"fork + first call, forks {GAP_S * 1e3:.0f} ms apart",
        fmt_ms(found["settled"]),
        "",
        f"spares made up at once {fmt_ms(found['at once'])}",
        fmt_ratio(found["settled"] / found["at once"]),
    )
