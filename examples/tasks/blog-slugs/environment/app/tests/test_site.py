import datetime

from quillsite import Post, build, keywords, plan_pages, slugify


def post(title, day):
    return Post(title, datetime.date.fromisoformat(day), "Body.")


def test_slugify_ascii_titles():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("  10 Tips -- for 2024  ") == "10-tips-for-2024"


def test_pages_are_filed_by_year():
    pages = plan_pages([post("Later", "2024-02-01"), post("First", "2023-12-31")])
    assert [path for path, _ in pages] == ["2023/first.html", "2024/later.html"]


def test_keywords_are_accent_insensitive():
    assert keywords(Post("Café Crème", datetime.date(2024, 1, 1), "", ("Dessert",))) == [
        "cafe",
        "creme",
        "dessert",
    ]


def test_build_writes_pages_index_and_search(tmp_path):
    files = build([post("One", "2024-01-01"), post("Two", "2024-01-02")], tmp_path)
    assert sorted(files) == ["2024/one.html", "2024/two.html", "index.html", "search.json"]
    assert (tmp_path / "2024" / "two.html").read_text().startswith("<article><h1>Two</h1>")
    assert files["index.html"].index("2024/two.html") < files["index.html"].index("2024/one.html")
