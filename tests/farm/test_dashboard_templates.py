"""The dashboard's pages come from Jinja2 templates with autoescaping: markup lives in farm/dashboard/templates,
the Python builds values only, and every value a user controls is text on the page."""
import ast
import pathlib
import re

from farm import dashboard as D
from farm.store import Store

from synthetic import add_run, sweep

EVIL = "<img src=x onerror=alert(1)>"


def test_no_markup_is_built_in_python():
    """Tags in the module's strings (f-strings included) other than plotly's hover line break: none."""
    path = pathlib.Path(D.__file__)
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body and isinstance(n.body[0], ast.Expr)
            and isinstance(n.body[0].value, ast.Constant)}
    tags = [(node.lineno, tag) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            for tag in re.findall(r"<(/?[a-zA-Z][a-zA-Z0-9]*)", node.value) if tag != "br"]
    assert not tags, f"HTML built in {path.name} (put it in templates/): {tags[:10]}"
    assert D._env().autoescape is True


def test_every_user_field_is_text_on_the_pages(tmp_path):
    st = Store(tmp_path / f"farm{EVIL}.db".replace("/", "_"))
    jobs = sweep()[:2] + [{"workload": "vector_add", "params": {"N": 8, "dtype": "float32"}, "meta": {"X": EVIL},
                           "median_ms": 0.1, "status": "mismatch"}]
    rid = add_run(st, jobs, seed=0, label=EVIL, name=EVIL, commit=EVIL, target=EVIL)
    st.sql("UPDATE results SET error=:e WHERE status='mismatch'", e=EVIL + " wrong")
    add_run(st, jobs, seed=1, label=EVIL, name=EVIL, commit=EVIL, target=EVIL)
    D.build(st, tmp_path / "site")
    for page in (tmp_path / "site").glob("*.html"):
        text = page.read_text()
        assert "<img" not in text, page.name
    index = (tmp_path / "site" / "index.html").read_text()
    assert index.count("&lt;img src=x onerror=alert(1)&gt;") >= 3  # run name, label, GPU kind
    page = (tmp_path / "site" / "vector_add.html").read_text()
    assert "&lt;img src=x onerror=alert(1)&gt; wrong" in page and rid
