"""Hidden tests of blog-slugs: ASCII spellings in slugs, numbered duplicates in date order."""

import datetime

import pytest
from quillsite import Post, build, load_posts, plan_pages, slugify


def post(title, day):
    return Post(title, datetime.date.fromisoformat(day), "Body.")


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Crème Brûlée at Home", "creme-brulee-at-home"),
        ("Łódź in Winter", "lodz-in-winter"),
        ("Straße & Smørrebrød", "strasse-smorrebrod"),
        ("Ærø: Ferry Notes", "aero-ferry-notes"),
        ("Hello, World!", "hello-world"),
    ],
)
def test_slugs_spell_letters_in_ascii(title, slug):
    assert slugify(title) == slug


def test_same_slug_in_one_year_is_numbered_in_date_order():
    pages = plan_pages(
        [post("Notes", "2024-09-01"), post("Notes", "2024-01-01"), post("Notes!", "2024-05-01")]
    )
    assert [(path, p.date.month) for path, p in pages] == [
        ("2024/notes.html", 1),
        ("2024/notes-2.html", 5),
        ("2024/notes-3.html", 9),
    ]


def test_same_slug_in_another_year_is_not_numbered():
    pages = plan_pages([post("Notes", "2023-06-01"), post("Notes", "2024-06-01")])
    assert [path for path, _ in pages] == ["2023/notes.html", "2024/notes.html"]


def test_titles_that_fold_alike_are_numbered():
    pages = plan_pages([post("Café", "2024-01-01"), post("Cafe", "2024-02-01")])
    assert [path for path, _ in pages] == ["2024/cafe.html", "2024/cafe-2.html"]


def test_the_blog_builds_with_a_page_per_post(tmp_path):
    files = build(load_posts("/app/posts"), tmp_path)
    pages = sorted(path for path in files if path.endswith(".html") and path != "index.html")
    assert pages == [
        "2024/creme-brulee-at-home.html",
        "2024/lodz-in-winter.html",
        "2024/notes-2.html",
        "2024/notes.html",
    ]
    assert all(f'href="{page}"' in files["index.html"] for page in pages)
    assert "Łódź" in (tmp_path / "2024" / "lodz-in-winter.html").read_text()
