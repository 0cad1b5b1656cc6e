"""The viewer in headless chromium, on a real run made by the test suite: the tree's shape,
a branch's starting turn, play and the keyboard, the URL that keeps the position, hover
explanations, and report.html opened from disk with the network off."""

from __future__ import annotations

import re
from typing import Any

from sprout.runfolder import RunFolder
from sprout.viewer import task_tree
from sprout.viewer.report import write_report
from tests.support.browser import artifacts
from tests.support.taskfolders import TWO_EDITS

WAIT_MS = 10_000


def open_task(page: Any, url: str) -> None:
    page.goto(url)
    page.get_by_test_id("task-item").filter(has_text=TWO_EDITS).first.click()
    page.get_by_test_id("attempt-line").first.wait_for(timeout=WAIT_MS)


def test_the_tree_has_every_attempt_and_branch_point(page: Any, run: RunFolder, base: str) -> None:
    tree = task_tree(run, TWO_EDITS)
    open_task(page, base)
    assert page.get_by_test_id("attempt-line").count() == len(tree["attempts"])
    assert page.get_by_test_id("branch-point").count() == len(tree["branch_points"])
    branches = [a for a in tree["attempts"] if a["kind"] == "branch"]
    assert page.locator("[data-testid=turn-dot][data-starting=true]").count() == len(
        [b for b in branches if b["turns"] and b["turns"][0]["author"] == "reviewer"]
    )
    page.screenshot(path=artifacts() / "tree.png")
    assert page.errors == []


def test_a_branch_opens_on_its_starting_turn(page: Any, run: RunFolder, base: str) -> None:
    tree = task_tree(run, TWO_EDITS)
    guided = next(a for a in tree["attempts"] if a["guided"] and a["turns"])
    open_task(page, base)
    page.locator(f"[data-testid=attempt-label][data-attempt='{guided['id']}']").click()
    panel = page.get_by_test_id("turn-panel")
    panel.get_by_test_id("turn-author").filter(has_text="reviewer").wait_for(timeout=WAIT_MS)
    assert guided["starting_turn"].splitlines()[0] in panel.get_by_test_id("turn-text").inner_text()
    assert page.get_by_test_id("review").count() == 1, "the reviewer's choice is shown with it"
    assert "never part of the learner" in page.get_by_test_id("review").inner_text()
    page.screenshot(path=artifacts() / "starting-turn.png")
    assert page.errors == []


def position(page: Any) -> str:
    return str(page.get_by_test_id("position").inner_text())


def test_play_and_the_keyboard_move_the_position_and_the_url_keeps_it(page: Any, base: str) -> None:
    open_task(page, base)
    page.get_by_test_id("turn-dot").first.click()
    page.get_by_test_id("turn-title").wait_for(timeout=WAIT_MS)
    first = position(page)
    page.get_by_test_id("play-button").click()
    page.wait_for_function(
        "text => document.querySelector('[data-testid=position]').innerText !== text",
        arg=first,
        timeout=WAIT_MS,
    )
    page.keyboard.press(" ")  # pause
    paused = position(page)
    page.keyboard.press("ArrowRight")
    assert position(page) != paused
    page.keyboard.press("ArrowLeft")
    assert position(page) == paused
    link = page.url
    assert re.search(r"attempt=\d+&turn=\d+", link)
    title = page.get_by_test_id("turn-title").inner_text()

    page.goto("about:blank")
    page.goto(link)
    page.get_by_test_id("turn-title").filter(has_text=title).wait_for(timeout=WAIT_MS)
    assert position(page) == paused
    page.screenshot(path=artifacts() / "linked-turn.png")
    assert page.errors == []


def test_hovering_explains_what_a_thing_is(page: Any, base: str) -> None:
    open_task(page, base)
    page.get_by_test_id("branch-point").first.hover()
    tooltip = page.get_by_test_id("tooltip")
    tooltip.wait_for(state="visible", timeout=WAIT_MS)
    assert "boundary" in tooltip.inner_text() and "reused" in tooltip.inner_text()
    page.get_by_test_id("turn-dot").first.hover()
    assert "layer" in tooltip.inner_text()
    page.screenshot(path=artifacts() / "tooltip.png")
    assert page.errors == []


def test_the_report_opens_from_disk_with_the_network_off(page: Any, run: RunFolder) -> None:
    report = write_report(run)
    requested: list[str] = []
    page.context.set_offline(True)
    page.context.route(
        re.compile(r"^(?!file:).*"),
        lambda route: (requested.append(route.request.url), route.abort()),
    )
    tree = task_tree(run, TWO_EDITS)
    open_task(page, report.as_uri())
    assert page.get_by_test_id("attempt-line").count() == len(tree["attempts"])
    page.get_by_test_id("turn-dot").first.click()
    page.get_by_test_id("call").first.wait_for(timeout=WAIT_MS)
    assert page.get_by_test_id("methods-table").count() == 1
    assert requested == [], "the report asks the network for nothing"
    page.screenshot(path=artifacts() / "report.png")
    assert page.errors == []


def test_the_player_can_follow_one_attempt_alone(page: Any, run: RunFolder, base: str) -> None:
    tree = task_tree(run, TWO_EDITS)
    branch = next(a for a in tree["attempts"] if a["kind"] == "branch" and a["turns"])
    length = branch["boundary"] + len(branch["turns"])  # inherited turns, then its own
    open_task(page, base)
    page.locator(f"[data-testid=attempt-label][data-attempt='{branch['id']}']").click()
    page.get_by_test_id("turn-title").wait_for(timeout=WAIT_MS)
    page.get_by_test_id("play-scope").select_option("attempt")
    assert f" of {length} " in position(page)
    page.get_by_test_id("step-back").click()
    for _ in range(length):
        page.get_by_test_id("step-back").click()
    assert position(page).startswith(f"turn 1 of {length} · attempt {branch['parent']} turn 1")
    page.get_by_test_id("play-scope").select_option("search")
    total = sum(len(a["turns"]) for a in tree["attempts"])
    assert f" of {total} " in position(page)
    assert page.errors == []
