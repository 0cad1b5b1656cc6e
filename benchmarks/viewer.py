"""Viewer benchmark: how long the episode viewer takes on runs of 5,000 turns.

Run it with `sprout bench viewer [options]`. Two synthetic runs are written straight
into a RolloutTree (no sandbox, no model): their turns carry made-up checkpoint ids, so
a turn's detail reports a `files_error` instead of files (the rest of the turn shows,
as it does for a run whose layers were collected). Each is shaped like a search:
roots, branches at turn boundaries whose first turn is the reviewer's starting
turn, rewards and verifier diagnostics, analyses of failed attempts, one review per
round, model calls for the tokens, and every schedule finished.

- many tasks: 200 tasks x 25 turns (per task a root of 10 turns and 3 guided
  branches of 5 turns, one round);
- one big task: 1 task of 5,000 turns (50 roots of 40 turns and 150 guided
  branches of 20 turns, over 3 rounds).

Measured on each, as medians over the repeats:

1. the data layer: `run_summary`, `task_tree` of the biggest task, one `turn_detail`;
2. the JSON API over loopback (`make_server` in a thread; the time of each GET,
   body read included): /api/summary, /api/tasks/TASK/tree, /api/turns/A/I;
3. in headless chromium (Playwright driving the system chromium; skipped with a
   printed reason when either is missing): the page until the task list shows every
   task; a link to the biggest task (`#task=ID`, a cold page) until every attempt
   line of its tree is drawn; on (a) clicking that task in the list until its tree
   is drawn; clicking a turn dot until the turn panel shows that turn;
4. `write_report` (report.html with every tree and turn embedded), the file's size,
   and report.html opened from disk until the task list shows every task.

Results go to a table on stdout and to JSON (`--out`).
"""

from __future__ import annotations

import argparse
import datetime
import random
import shlex
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import _stats as stats
from sprout.viewer.headless import CHROMIUM_ARGS, find_chromium

WAIT_MS = 120_000
"""How long a browser step may take before it counts as failed."""

METHOD = "sprout"

SHAPES: dict[str, dict[str, Any]] = {
    "many tasks": {"tasks": 200, "roots": 1, "root_turns": 10, "branches": 3, "branch_turns": 5},
    "one big task": {
        "tasks": 1,
        "roots": 50,
        "root_turns": 40,
        "branches": 150,
        "branch_turns": 20,
    },
}
"""Each 5,000 turns. Branches are spread over up to 3 rounds."""

QUICK_SHAPES: dict[str, dict[str, Any]] = {
    "many tasks": {"tasks": 20, "roots": 1, "root_turns": 10, "branches": 3, "branch_turns": 5},
    "one big task": {"tasks": 1, "roots": 5, "root_turns": 40, "branches": 15, "branch_turns": 20},
}
"""500 turns each: a smoke run."""


def turns_of(shape: dict[str, Any]) -> int:
    per_task = shape["roots"] * shape["root_turns"] + shape["branches"] * shape["branch_turns"]
    return int(shape["tasks"] * per_task)


# the synthetic run


def _text(rng: random.Random, attempt: int, index: int) -> str:
    words = ["read", "the", "failing", "test", "then", "patch", "module", "and", "rerun", "it"]
    body = " ".join(rng.choice(words) for _ in range(rng.randint(30, 90)))
    return f"Step {index} of attempt {attempt}: {body}.\n\n```bash\npytest -x tests/\n```"


def _turn(rng: random.Random, attempt: int, index: int, author: str) -> Any:
    from sprout.tree import CallRecord, Turn

    output = "\n".join(f"tests/test_mod.py::test_{i} PASSED" for i in range(rng.randint(5, 40)))
    return Turn(
        attempt_id=attempt,
        index=index,
        author=author,  # type: ignore[arg-type]
        text=_text(rng, attempt, index),
        calls=(CallRecord("pytest -x tests/", output, rng.choice([0, 1]), duration_s=0.4),),
        messages=(
            {"role": "assistant", "content": "..."},
            {"role": "user", "content": "..."},
        ),
        checkpoint=f"synthetic-{attempt}-{index}",
        prompt_tokens=rng.randint(2000, 12000),
        completion_tokens=rng.randint(100, 600),
        cached_tokens=rng.randint(0, 2000),
        entropy=rng.random(),
        duration_s=rng.uniform(1, 8),
    )


def _diagnostics(rng: random.Random, passed: bool) -> dict[str, Any]:
    failed = 0 if passed else rng.randint(1, 4)
    tests = [{"name": f"tests/test_mod.py::test_{i}", "outcome": "passed"} for i in range(8)]
    tests += [
        {
            "name": f"tests/test_mod.py::test_fail_{i}",
            "outcome": "failed",
            "message": "AssertionError: expected 3, got 2",
        }
        for i in range(failed)
    ]
    return {
        "summary": f"{8} passed, {failed} failed",
        "passed": 8,
        "failed": failed,
        "errored": 0,
        "skipped": 0,
        "required_missing": [],
        "source": "junit",
        "tests": tests,
        "log_tail": "x" * 2000,
    }


def _play(run: Any, rng: random.Random, attempt: Any, first: int, count: int, guided: bool) -> None:
    """Commit `count` turns of `attempt` from index `first`, its model calls, and its end."""
    from sprout.tree import ModelCallRecord

    tree = run.tree
    for k in range(count):
        author = "reviewer" if guided and k == 0 else "actor"
        turn = _turn(rng, attempt.id, first + k, author)
        tree.commit_turn(turn)
        if author == "actor":
            tree.record_call(
                ModelCallRecord(
                    role="actor",
                    task_id=attempt.task_id,
                    attempt_id=attempt.id,
                    turn_index=turn.index,
                    prompt_tokens=turn.prompt_tokens,
                    completion_tokens=turn.completion_tokens,
                    cached_tokens=turn.cached_tokens,
                    latency_s=turn.duration_s,
                    method=attempt.method,
                )
            )
    passed = rng.random() < 0.2
    tree.set_outcome(attempt.id, 1.0 if passed else 0.0, _diagnostics(rng, passed), "diff")
    tree.finish_attempt(attempt.id, "done", "submitted" if rng.random() < 0.7 else "turn limit")
    if not passed and rng.random() < 0.5:
        tree.add_analysis(
            attempt.task_id,
            attempt.id,
            {"source": "heuristic", "failure": "the test still fails", "turn": first + count - 1},
        )


def build_run(folder: Path, shape: dict[str, Any], seed: int) -> dict[str, Any]:
    """Write a synthetic run of `shape` at `folder`; its facts (the biggest task, counts)."""
    from sprout.runfolder import RunFolder
    from sprout.tree import RunMeta

    rng = random.Random(seed)
    run = RunFolder.create_new(folder)
    (folder / "layers").mkdir(exist_ok=True)  # no layers are written: the ids are made up
    tree = run.tree
    tree.update_meta(RunMeta(settings={"methods": [{"name": METHOD}]}))
    attempts = turns = 0
    biggest: tuple[int, str, int, int] = (-1, "", 0, 0)
    for t in range(shape["tasks"]):
        task_id = f"task-{t:04d}"
        tree.add_task(task_id, {"id": task_id, "prompt": "Fix the failing test."})
        tree.start_schedule(task_id, METHOD)
        roots = []
        for _ in range(shape["roots"]):
            prefix = [{"role": "system", "content": "You fix bugs."}]
            root = tree.root(task_id, prefix, "synthetic-base", method=METHOD)
            _play(run, rng, root, 1, shape["root_turns"], False)
            roots.append(root)
        rounds = min(3, shape["branches"]) or 1
        per_round = -(-shape["branches"] // rounds) if shape["branches"] else 0
        made = 0
        last = roots[-1].id
        for r in range(1, rounds + 1):
            plans = []
            for _ in range(min(per_round, shape["branches"] - made)):
                parent = rng.choice(roots)
                boundary = rng.randint(1, shape["root_turns"] - 1)
                starting = f"Try a different fix at turn {boundary + 1}.\n```bash\nsed -i ...\n```"
                branch = tree.branch(parent, boundary, starting, round=r, method=METHOD)
                _play(run, rng, branch, boundary + 1, shape["branch_turns"], True)
                plans.append(
                    {"parent_id": parent.id, "boundary": boundary, "starting_turn": starting}
                )
                made += 1
                last = branch.id
            if plans:
                tree.add_review(task_id, METHOD, r, {"source": "heuristic", "plans": plans})
        resolved = any(a.reward == 1.0 for a in tree.attempts(task_id))
        tree.finish_schedule(task_id, METHOD, resolved=resolved, error=None)
        n_attempts = shape["roots"] + shape["branches"]
        n_turns = shape["roots"] * shape["root_turns"] + shape["branches"] * shape["branch_turns"]
        attempts += n_attempts
        turns += n_turns
        if n_turns >= biggest[0]:  # the last of equals: not the task the page opens first
            biggest = (n_turns, task_id, n_attempts, last)
    run.close()
    return {
        "tasks": shape["tasks"],
        "attempts": attempts,
        "turns": turns,
        "biggest_task": biggest[1],
        "biggest_task_attempts": biggest[2],
        "biggest_task_turns": biggest[0],
        "last_attempt": biggest[3],
        "last_turn": None,
    }


# measurements


def _repeat(n: int, fn: Any) -> dict[str, Any]:
    return stats.summary([stats.timed(fn)[0] for _ in range(n)])


def measure_data(folder: Path, facts: dict[str, Any], repeat: int) -> dict[str, Any]:
    from sprout.runfolder import RunFolder
    from sprout.viewer.data import run_summary, task_tree
    from sprout.viewer.turns import turn_detail

    run = RunFolder.open(folder)
    try:
        task = facts["biggest_task"]
        tree = task_tree(run, task)
        last = next(a for a in tree["attempts"] if a["id"] == facts["last_attempt"])
        facts["last_turn"] = last["turns"][-1]["index"]
        return {
            "run_summary": _repeat(repeat, lambda: run_summary(run)),
            "task_tree": _repeat(repeat, lambda: task_tree(run, task)),
            "turn_detail": _repeat(
                repeat, lambda: turn_detail(run, facts["last_attempt"], facts["last_turn"])
            ),
        }
    finally:
        run.close()


def _get(url: str) -> int:
    with urllib.request.urlopen(url, timeout=600) as response:
        return len(response.read())


def measure_api(base: str, facts: dict[str, Any], repeat: int) -> dict[str, Any]:
    routes = {
        "summary": "/api/summary",
        "task_tree": f"/api/tasks/{facts['biggest_task']}/tree",
        "turn": f"/api/turns/{facts['last_attempt']}/{facts['last_turn']}",
    }
    out: dict[str, Any] = {}
    for name, route in routes.items():
        size = _get(base + route)
        out[name] = {**_repeat(repeat, lambda route=route: _get(base + route)), "bytes": size}
    return out


def _timed_page(browser: Any, fn: Any) -> float:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        seconds = float(fn(page))
    finally:
        context.close()
    if errors:
        raise RuntimeError(f"the page raised: {errors[0]}")
    return seconds


def _wait_tasks(page: Any, n: int) -> None:
    page.wait_for_function(
        "n => document.querySelectorAll('[data-testid=task-item]').length >= n",
        arg=n,
        timeout=WAIT_MS,
    )


def _wait_tree(page: Any, facts: dict[str, Any]) -> None:
    page.wait_for_function(
        "([n, last]) => document.querySelectorAll('[data-testid=attempt-line]').length === n"
        " && document.querySelector('[data-testid=attempt-line][data-attempt=\"' + last + '\"]')",
        arg=[facts["biggest_task_attempts"], facts["last_attempt"]],
        timeout=WAIT_MS,
    )


def measure_browser(browser: Any, base: str, facts: dict[str, Any], repeat: int) -> dict[str, Any]:
    n, task = facts["tasks"], facts["biggest_task"]

    def load(page: Any) -> float:
        start = time.perf_counter()
        page.goto(base + "/")
        _wait_tasks(page, n)
        return time.perf_counter() - start

    def link(page: Any) -> float:
        start = time.perf_counter()
        page.goto(f"{base}/#task={task}")
        _wait_tree(page, facts)
        return time.perf_counter() - start

    def click_task(page: Any) -> float:
        page.goto(base + "/")
        _wait_tasks(page, n)
        page.get_by_test_id("attempt-line").first.wait_for(timeout=WAIT_MS)  # the first task
        item = page.locator(f"[data-testid=task-item][data-task='{task}']")
        start = time.perf_counter()
        item.click()
        _wait_tree(page, facts)
        return time.perf_counter() - start

    def click_turn(page: Any) -> float:
        page.goto(f"{base}/#task={task}")
        _wait_tree(page, facts)
        attempt, index = facts["last_attempt"], facts["last_turn"]
        dot = page.locator(
            f"[data-testid=turn-dot][data-attempt='{attempt}'][data-index='{index}']"
        )
        start = time.perf_counter()
        dot.click()
        page.get_by_test_id("turn-title").filter(
            has_text=f"Attempt {attempt} · turn {index}"
        ).wait_for(timeout=WAIT_MS)
        return time.perf_counter() - start

    steps = {"page_load": load, "open_task_link": link, "click_turn": click_turn}
    if n > 1 and task != "task-0000":
        steps["click_task"] = click_task
    out: dict[str, Any] = {}
    for name, fn in steps.items():
        _timed_page(browser, fn)  # warm up: chromium's first page in a context is slower
        out[name] = stats.summary([_timed_page(browser, fn) for _ in range(repeat)])
    return out


def measure_report(
    folder: Path, facts: dict[str, Any], repeat: int, browser: Any
) -> dict[str, Any]:
    from sprout.runfolder import RunFolder
    from sprout.viewer.report import write_report

    run = RunFolder.open(folder)
    try:
        seconds = []
        for _ in range(repeat):
            elapsed, path = stats.timed(lambda: write_report(run))
            seconds.append(elapsed)
    finally:
        run.close()
    out: dict[str, Any] = {"write_report": stats.summary(seconds), "bytes": path.stat().st_size}
    if browser is not None:

        def load(page: Any) -> float:
            start = time.perf_counter()
            page.goto(path.as_uri())
            _wait_tasks(page, facts["tasks"])
            return time.perf_counter() - start

        _timed_page(browser, load)
        out["page_load"] = stats.summary([_timed_page(browser, load) for _ in range(repeat)])
    return out


def bench_shape(
    name: str, shape: dict[str, Any], folder: Path, args: argparse.Namespace, browser: Any, log: Any
) -> dict[str, Any]:
    from sprout.viewer.server import make_server

    elapsed, facts = stats.timed(lambda: build_run(folder, shape, args.seed))
    log(f"{name}: wrote {facts['turns']:,} turns in {elapsed:.1f} s")
    result: dict[str, Any] = {"shape": name, **shape, **facts, "build_s": round(elapsed, 2)}
    result["data"] = measure_data(folder, facts, args.repeat)
    result["last_turn"] = facts["last_turn"]
    log(f"{name}: data layer done")
    server = make_server(folder, port=0)
    # a page closed while a request is in flight breaks its pipe: not worth a traceback
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    base = f"http://{host!s}:{port}"
    try:
        result["api"] = measure_api(base, facts, args.repeat)
        log(f"{name}: API done")
        if browser is not None:
            result["browser"] = measure_browser(browser, base, facts, args.repeat)
            log(f"{name}: browser done")
    finally:
        server.shutdown()
        server.server_close()
    result["report"] = measure_report(folder, facts, args.repeat, browser)
    log(f"{name}: report done")
    return result


ROWS = [
    ("data", "run_summary", "data: run_summary()"),
    ("data", "task_tree", "data: task_tree(biggest task)"),
    ("data", "turn_detail", "data: turn_detail(one turn)"),
    ("api", "summary", "API: GET /api/summary"),
    ("api", "task_tree", "API: GET /api/tasks/BIGGEST/tree"),
    ("api", "turn", "API: GET /api/turns/A/I"),
    ("browser", "page_load", "browser: page until every task is listed"),
    ("browser", "open_task_link", "browser: #task=BIGGEST until its tree is drawn"),
    ("browser", "click_task", "browser: click BIGGEST in the list until drawn"),
    ("browser", "click_turn", "browser: click a turn until the panel shows it"),
    ("report", "write_report", "report: write_report()"),
    ("report", "page_load", "report: report.html until every task is listed"),
]


def table(results: list[dict[str, Any]], markdown: bool) -> str:
    header = ["measure"] + [
        f"{r['shape']} ({r['tasks']} x {r['turns'] // r['tasks']:,} turns) p50" for r in results
    ]
    rows = [header]
    for group, key, label in ROWS:
        cells = []
        for r in results:
            found = r.get(group, {}).get(key)
            if found is None:
                cells.append("—")
                continue
            cell = stats.fmt_ms(found["p50_ms"])
            if "bytes" in found:
                cell += f" ({stats.fmt_bytes(found['bytes'])})"
            cells.append(cell)
        rows.append([label, *cells])
    rows.append(
        ["report: report.html size"] + [stats.fmt_bytes(r["report"]["bytes"]) for r in results]
    )
    rows.append(
        ["biggest task: attempts / turns"]
        + [f"{r['biggest_task_attempts']} / {r['biggest_task_turns']:,}" for r in results]
    )
    return stats.render_table(rows, markdown=markdown)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sprout bench viewer",
        description="Time the episode viewer (data layer, JSON API, headless chromium, "
        "report.html) on synthetic runs of 5,000 turns: 200 tasks x 25 turns, and one task "
        "of 5,000 turns.",
    )
    parser.add_argument("--out", default="bench-results/viewer.json", metavar="PATH")
    parser.add_argument("--repeat", type=int, default=3, metavar="N", help="timed repeats (3)")
    parser.add_argument("--no-browser", action="store_true", help="skip the chromium part")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--quick", action="store_true", help="runs of 500 turns, 1 repeat: a smoke run"
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeat = 1
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(list(argv))
    shapes = QUICK_SHAPES if args.quick else SHAPES
    started = time.monotonic()

    def log(message: str) -> None:
        print(f"[{time.monotonic() - started:6.1f} s] {message}", file=sys.stderr, flush=True)

    executable, why = (None, "--no-browser") if args.no_browser else find_chromium()
    if why:
        print(f"sprout bench viewer: skipping the browser measures: {why}")
    results = []
    with tempfile.TemporaryDirectory(prefix="sprout-bench-viewer-") as scratch:
        playwright = browser = None
        try:
            if executable is not None:
                from playwright.sync_api import sync_playwright

                playwright = sync_playwright().start()
                browser = playwright.chromium.launch(
                    executable_path=executable, args=list(CHROMIUM_ARGS)
                )
            for i, (name, shape) in enumerate(shapes.items()):
                folder = Path(scratch) / f"run-{i}"
                results.append(bench_shape(name, shape, folder, args, browser, log))
        finally:
            if browser is not None:
                browser.close()
            if playwright is not None:
                playwright.stop()
        facts = stats.machine_facts(scratch)
    report = {
        "benchmark": "viewer",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(sys.argv),
        "benchmark_argv": list(argv),
        "machine": {k: v for k, v in facts.items() if not k.startswith("store")},
        "chromium": executable,
        "browser_skipped": why,
        "repeat": args.repeat,
        "elapsed_s": round(time.monotonic() - started, 1),
        "results": results,
    }
    out = stats.write_json(args.out, report)
    print(
        f"sprout bench viewer — {report['date']}, {facts['cpus']} CPUs ({facts['cpu_model']}), "
        f"{args.repeat} repeat(s), {report['elapsed_s']:.0f} s"
    )
    print(table(results, args.markdown))
    print(f"results: {out}")
    return 0
