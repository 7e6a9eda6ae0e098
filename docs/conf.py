"""Sphinx configuration of the pragmodels docs site (``make docs``; warnings are errors).

Pages are Markdown (myst-parser); the API reference is generated from the numpydoc docstrings
(autosummary + numpydoc). Nothing here needs the network (no intersphinx) and no notebook is
executed in the build: the notebooks and the code on these pages are executed by the tests
(``tests/test_docs_pages.py``, ``tests/test_notebooks_and_cli.py``).
"""

from __future__ import annotations

from pathlib import Path

from pragmodels.version import __version__  # the installed (editable) package: make docs installs it first

ROOT = Path(__file__).resolve().parents[1]

project = "pragmodels"
author = "the pragmodels authors"
copyright = "2026, the pragmodels authors"  # noqa: A001 - Sphinx's name
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# Markdown pages: ``(label)=`` targets, ``{eval-rst}`` blocks, heading anchors for in-page links
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference: one page per module, generated from the docstrings at build time (docs/api/generated/,
# git-ignored), members in the order of the source; a module's ``__all__`` decides what is public
autosummary_generate = True
autosummary_ignore_module_all = False
autodoc_member_order = "bysource"
autodoc_typehints = "none"  # the numpydoc Parameters sections say the types
autodoc_default_options = {
    "show-inheritance": True,
    # type aliases whose value autodoc prints as reStructuredText ("alias of Annotated[str,
    # FieldInfo(pattern='...[A-Za-z_]...')]"), where a regex reads as a broken reference; the keys
    # they check are described in docs/configs.md
    "exclude-members": "EntryPoint, Seed",
}

numpydoc_show_class_members = False  # members are listed by autodoc, not by numpydoc's own table
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

html_theme = "pydata_sphinx_theme"
html_title = f"pragmodels {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path: list[str] = []
html_show_sourcelink = False


def _canonical_reference(app, env, node, contnode):  # noqa: ANN001, ANN202 - Sphinx's event
    """Resolve a reference to a re-exported name (``pragmodels.fit``, ``pragmodels.datasets.REGISTRY``)
    to the object where it is documented, the module that defines it (``pragmodels.inference.fitting.fit``)."""
    import importlib

    target = node.get("reftarget", "")
    if node.get("refdomain") != "py" or not target.startswith("pragmodels."):
        return None
    parts = target.split(".")
    for i in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        break
    else:
        return None
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not qualname:  # data (a dict, a tuple): the deepest module that holds the same object
        import sys

        holders = [m for m, mod in list(sys.modules.items())
                   if m.startswith("pragmodels") and getattr(mod, parts[-1], None) is obj]
        module, qualname = (max(holders, key=len), parts[-1]) if holders else (None, None)
    if not module or not qualname or f"{module}.{qualname}" == target:
        return None
    return env.get_domain("py").resolve_xref(env, node.get("refdoc", ""), app.builder, node["reftype"],
                                             f"{module}.{qualname}", node, contnode)


def setup(app):  # noqa: ANN001, ANN201 - Sphinx's hook
    app.connect("missing-reference", _canonical_reference)
    """docs/studies/ holds one page per study, which docs/studies/index.md globs; until they are
    written the glob matches nothing, which is not an error of the site (Sphinx gives that warning
    no type that ``suppress_warnings`` could name, so it is filtered here, and only then)."""
    if not [p for p in (ROOT / "docs" / "studies").glob("*.md") if p.name != "index.md"]:
        import logging

        class _NoStudyPagesYet(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                return "didn't match any documents" not in record.getMessage()

        logging.getLogger("sphinx.sphinx.directives.other").addFilter(_NoStudyPagesYet())
