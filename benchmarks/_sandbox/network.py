"""Section 8: the network (root). A call under `public` and `allowlist` beside one under
`none`, each policy's network coming up (once per sandbox, and so per fork), and 100 MB
through the stack against the same download on the host, in a world of namespaces of
the benchmark's own (benchmarks/_sandbox/network_world.py)."""

from typing import Any

from _stats import fmt_bytes, fmt_ms, fmt_ratio, p50, p90, summary

from . import network_world
from .common import Context, Row

SECTION = "8. network"


def bench_network(ctx: Context) -> None:
    """Measure in network_world's namespaces; rootless, one row says why not."""
    if ctx.mode != "root":
        ctx.rows.append(Row(SECTION, "network rows", "", result="SKIPPED: needs the root mode"))
        return
    ctx.log("8 network: none vs public, in namespaces of the benchmark's own")
    found = network_world.measure(ctx.path("network"), ctx.sizes.repeat * 2)
    calls = {name: summary(series) for name, series in found["calls_s"].items()}
    starts = {name: summary(series) for name, series in found["starts_s"].items()}
    rates = {
        name: sorted(n / s for n, s in rounds)[len(rounds) // 2]
        for name, rounds in found["downloads"].items()
    }
    ctx.results["network"] = {"calls": calls, "starts": starts, "download_bytes_per_s": rates}
    ctx.rows += _rows(ctx, calls, starts, rates)


def _rows(
    ctx: Context, calls: dict[str, Any], starts: dict[str, Any], rates: dict[str, float]
) -> list[Row]:
    """The section's rows, each with its target checked."""
    extra = p50(calls["public"]) - p50(calls["none"])
    extra_allowlist = p50(calls["allowlist"]) - p50(calls["none"])
    up = p50(starts["public"])
    up_allowlist = p50(starts["allowlist"])
    slowdown = rates["host"] / rates["public"]
    return [
        Row(
            SECTION, 'sb.run("true") under public', fmt_ms(p50(calls["public"])),
            fmt_ms(p90(calls["public"])), f"under none {fmt_ms(p50(calls['none']))}",
            f"{extra:+.2f} ms", "<= +2 ms",
            ctx.target("public per call", extra <= 2, f"{extra:+.2f} ms", "<= +2 ms"),
        ),
        Row(
            SECTION, 'sb.run("true") under allowlist', fmt_ms(p50(calls["allowlist"])),
            fmt_ms(p90(calls["allowlist"])), f"under none {fmt_ms(p50(calls['none']))}",
            f"{extra_allowlist:+.2f} ms", "<= +2 ms",
            ctx.target(
                "allowlist per call", extra_allowlist <= 2, f"{extra_allowlist:+.2f} ms", "<= +2 ms"
            ),
        ),
        Row(
            SECTION, "a sandbox's network up: public (firewall + stack)", fmt_ms(up),
            fmt_ms(p90(starts["public"])), f"none {fmt_ms(p50(starts['none']))}",
            fmt_ratio(up / p50(starts["none"])), "<= 50 ms",
            ctx.target("a fork's network up", up <= 50, fmt_ms(up), "<= 50 ms"),
        ),
        Row(
            SECTION, "a sandbox's network up: allowlist (+ its resolver)", fmt_ms(up_allowlist),
            fmt_ms(p90(starts["allowlist"])), f"public {fmt_ms(up)}",
            fmt_ratio(up_allowlist / up), "<= 50 ms",
            ctx.target(
                "an allowlist fork's network up", up_allowlist <= 50, fmt_ms(up_allowlist),
                "<= 50 ms",
            ),
        ),
        Row(
            SECTION, f"{fmt_bytes(network_world.DOWNLOAD_BYTES)} download through the stack",
            f"{fmt_bytes(rates['public'])}/s", "", f"on the host {fmt_bytes(rates['host'])}/s",
            f"{slowdown:.2f}x slower", "<= 2x",
            ctx.target("download through the stack", slowdown <= 2, f"{slowdown:.2f}x", "<= 2x"),
        ),
    ]  # fmt: skip
