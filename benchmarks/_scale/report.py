"""The scale benchmark's figures: repeats combined into medians, where each sweep stops
growing and why, and the tables of its report."""

import statistics
from typing import Any

from _stats import fmt_bytes, render_table

KNEE_GAIN = 1.1
"""The knee is the first level that no later level beats by this factor of turns/s: past
it, more attempts alive no longer buy throughput."""
CPU_BOUND = 0.85
"""The share of the machine's CPUs busy at which a level counts as CPU-bound."""


def combine(runs: list[Any]) -> Any:
    """The repeats of one level as one: the median of every number, the rest as first seen."""
    first = runs[0]
    if isinstance(first, dict):
        return {key: combine([run[key] for run in runs]) for key in first}
    if isinstance(first, bool) or not isinstance(first, int | float):
        return first
    return round(statistics.median(runs), 3)


def saturation(levels: list[dict], cpus: int) -> dict[str, Any]:
    """Where turns/s stops growing with the attempts alive, what bounds it there, and the
    most the machine's CPUs would give at the CPU each turn took."""
    peak = max(levels, key=lambda level: level["turns_per_s"])
    knee = next(
        (
            level
            for i, level in enumerate(levels[:-1])
            if all(
                later["turns_per_s"] < KNEE_GAIN * level["turns_per_s"] for later in levels[i + 1 :]
            )
        ),
        None,
    )
    at = knee or peak
    cpu_ms = at["cpu_ms_per_turn"]["user"] + at["cpu_ms_per_turn"]["system"]
    return {
        "peak_turns_per_s": peak["turns_per_s"],
        "peak_at_attempts": peak["attempts"],
        "knee_at_attempts": knee["attempts"] if knee else None,
        "cpu_ms_per_turn": round(cpu_ms, 2),
        "cpus_busy": at["cpus_busy"],
        "machine_cpus_busy": at["machine_cpus_busy"],
        "cpu_ceiling_turns_per_s": round(cpus * 1000 / cpu_ms, 1) if cpu_ms else None,
        "bottleneck": _bottleneck(at, cpus, cpu_ms, knee is not None),
    }


def _bottleneck(at: dict, cpus: int, cpu_ms: float, saturated: bool) -> str:
    """The reason, read off the measured figures of the level where growth stopped (or of
    the peak, where it did not)."""
    where = (
        f"turns/s stops growing at {at['attempts']} attempts alive"
        if saturated
        else f"turns/s still grows at {at['attempts']} attempts alive"
    )
    user, system = at["cpu_ms_per_turn"]["user"], at["cpu_ms_per_turn"]["system"]
    ours, machine, own = at["cpus_busy"], at["machine_cpus_busy"], at["sprout_process_cpus_busy"]
    cost = (
        f"{cpu_ms:.1f} ms of CPU per turn ({user:.1f} user, {system:.1f} system, "
        f"{at['sprout_process_cpu_ms_per_turn']:.1f} of it in sprout's own process) caps "
        f"{cpus} CPUs at {cpus * 1000 / cpu_ms:.0f} turns/s"
    )
    if not saturated:
        return (
            f"{where}: not saturated ({machine:.2f} of the machine's {cpus} CPUs busy, "
            f"{ours:.2f} of them this benchmark's); {cost}"
        )
    if machine >= CPU_BOUND * cpus:
        return (
            f"{where}, CPU-bound: {machine:.2f} of the machine's {cpus} CPUs busy, "
            f"{ours:.2f} of them this benchmark's (the rest other work); {cost}"
        )
    if own >= CPU_BOUND:
        return (
            f"{where}, bound by sprout's own process: its Python threads keep {own:.2f} CPUs "
            f"busy, and one interpreter runs about one CPU's worth of bytecode; {cost}"
        )
    return (
        f"{where}, not CPU-bound ({machine:.2f} of the machine's {cpus} CPUs busy): the "
        f"attempts wait, for their think time or for each other; {cost}"
    )


def _cpu(level: dict) -> str:
    cpu = level["cpu_ms_per_turn"]
    return f"{cpu['user']:.1f}+{cpu['system']:.1f}; {level['sprout_process_cpu_ms_per_turn']:.1f}"


def _ms(found: dict) -> str:
    return f"{found['p50_ms']:.1f} / {found['p90_ms']:.1f} / {found['p99_ms']:.1f}"


SWEEP_HEADER = [
    "alive",
    "turns/s",
    "vs 1 alive",
    "call p50/p90/p99 ms",
    "seal p50/p90/p99 ms",
    "fork p99 ms",
    "CPU ms/turn (user+sys; sprout's process)",
    "CPUs busy (ours/machine)",
    "per open sandbox: procs, fds, PSS, charged",
    "inodes/turn",
    "cgroups/turn",
]


def sweep_table(levels: list[dict], markdown: bool) -> str:
    rows = [SWEEP_HEADER]
    alone = levels[0]["turns_per_s"]
    for level in levels:
        held = level["per_open_sandbox"]
        rows.append(
            [
                str(level["attempts"]),
                f"{level['turns_per_s']:.1f}",
                f"{level['turns_per_s'] / alone:.2f}x",
                _ms(level["call"]),
                _ms(level["seal"]),
                f"{level['fork']['p99_ms']:.1f}",
                _cpu(level),
                f"{level['cpus_busy']:.2f}/{level['machine_cpus_busy']:.2f}",
                f"{held['processes']:.1f}, {held['fds']:.1f}, {fmt_bytes(held['pss_bytes'])}, "
                f"{fmt_bytes(held['charged_bytes'])}",
                f"{level['per_turn']['inodes']:.1f}",
                f"{level['per_turn']['cgroups']:g}",
            ]
        )
    return render_table(rows, markdown=markdown)


RUNNER_HEADER = [
    "alive",
    "tasks",
    "turns",
    "turns/s",
    "vs 1 alive",
    "attempts/s",
    "CPU ms/turn (user+sys; sprout's process)",
    "CPUs busy (ours/machine)",
]


def runner_table(levels: list[dict], markdown: bool) -> str:
    rows = [RUNNER_HEADER]
    alone = levels[0]["turns_per_s"]
    for level in levels:
        rows.append(
            [
                str(level["attempts"]),
                str(level["tasks"]),
                f"{level['turns']:g}",
                f"{level['turns_per_s']:.1f}",
                f"{level['turns_per_s'] / alone:.2f}x",
                f"{level['attempts_per_s']:.2f}",
                _cpu(level),
                f"{level['cpus_busy']:.2f}/{level['machine_cpus_busy']:.2f}",
            ]
        )
    return render_table(rows, markdown=markdown)


TAIL_HEADER = ["one sandbox", "p50 ms", "p90 ms", "p99 ms", "p99/p50", "p99/p50, median of rounds"]


def tail_table(tail: dict, markdown: bool) -> str:
    rows = [TAIL_HEADER]
    for name, label in (
        ("launched", 'sb.run("true"): started by the sandbox\'s launcher'),
        ("joining", "the same call, its helper joining the cgroups (before)"),
        ("join alone", "a shell joining a sandbox's cgroups"),
        ("same shell, no join", "the same shell, no join"),
    ):
        found = tail[name]
        rows.append(
            [
                label,
                f"{found['p50_ms']:.2f}",
                f"{found['p90_ms']:.2f}",
                f"{found['p99_ms']:.2f}",
                f"{found['p99_over_p50']:.2f}",
                f"{found['p99_over_p50_median_of_rounds']:.2f}",
            ]
        )
    return render_table(rows, markdown=markdown)


def turns_table(found: dict, markdown: bool) -> str:
    """One sandbox's turn latency and the turns/s of many beside one's (_sandbox/turn.py)."""
    turns = found["turns"]
    many = next(key for key in turns if key.endswith("_over_one")).removesuffix("_over_one")
    rows = [
        ["figure", "value"],
        ["one sandbox: turn p50", f"{turns['one_p50_ms']:.2f} ms"],
        ["one sandbox: turn p99", f"{turns['one_p99_ms']:.2f} ms"],
        ["one sandbox: p99 / p50 (median of rounds)", f"{turns['one_p99_over_p50']:.2f}"],
        ["one sandbox: turns/s", f"{turns['one_turns_per_s']:.1f}"],
        [f"{many} sandboxes: turns/s", f"{turns[f'{many}_turns_per_s']:.1f}"],
        [f"{many} sandboxes over one", f"{turns[f'{many}_over_one']:.2f}x"],
    ]
    return render_table(rows, markdown=markdown)


def idle_table(idle: dict, markdown: bool) -> str:
    before, after = idle["per_sandbox_before_a_call"], idle["per_sandbox_after_a_call"]
    left = idle["left_after_close"]

    def held(found: dict) -> str:
        return (
            f"{found['processes']:.2f} processes, {found['fds']:.2f} fds, "
            f"{fmt_bytes(found['pss_bytes'])} PSS, {fmt_bytes(found['charged_bytes'])} charged, "
            f"{found['cgroups']:.0f} cgroups"
        )

    rows = [
        ["figure", "value"],
        [f"open {idle['sandboxes']} sandboxes", f"{idle['open_s']:.2f} s (fork p50 "
         f"{idle['fork']['p50_ms']:.2f} ms, p99 {idle['fork']['p99_ms']:.2f} ms)"],
        ["each, open and idle", held(before)],
        ["each, after its first call", held(after)],
        ["first call in each", _ms(idle["first_call"]) + " ms (p50/p90/p99)"],
        ["a call among them", _ms(idle["call_among_them"]) + " ms"],
        ["the same call, one sandbox open", _ms(idle["call_alone"]) + " ms"],
        ["close them all", f"{idle['close_s']:.2f} s"],
        [
            "left after close",
            f"{len(left['processes'])} processes, {len(left['cgroups'])} cgroups, "
            f"{len(left['mounts'])} mounts (the host's mount count: "
            f"{left['host_mount_count_change']:+d})",
        ],
    ]  # fmt: skip
    return render_table(rows, markdown=markdown)
