"""The stored listing of the built-in methods is the code's: it fails, naming the fix, when an
adapter's name, summary, launches or parameters change without it."""

from kprof.methods.catalogue import live, stored


def test_the_stored_listing_matches_the_code():
    code, kept = live(), stored()
    assert [c["name"] for c in kept] == [c["name"] for c in code], \
        "the built-in methods changed: run python -m kprof.methods.catalogue"
    for mine, theirs in zip(kept, code):
        assert mine == theirs, f"{mine['name']} changed: run python -m kprof.methods.catalogue"


def test_a_plugin_is_listed_beside_the_built_ins(tmp_path, monkeypatch):
    """With $KPROF_PLUGINS the listing comes from the registry, which imports the plugin."""
    from kprof.commands.methods import cards
    from kprof.methods import registry

    registry.load_builtins()  # what the plugin registers stays in this test
    monkeypatch.setattr(registry, "METHODS", dict(registry.METHODS))
    monkeypatch.setattr(registry, "ORIGINS", dict(registry.ORIGINS))
    (tmp_path / "listed_plugin.py").write_text(
        "from kprof.methods.registry import register\n"
        "from kprof.methods.sdpa import MathSDPA\n\n\n"
        "@register\nclass Listed(MathSDPA):\n    name = 'listed-math'\n    summary = 'a plugin'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KPROF_PLUGINS", "listed_plugin")
    listed = {c.name: c for c in cards()}
    assert listed["listed-math"].origin == "KPROF_PLUGINS listed_plugin" and "santa" in listed
    monkeypatch.delenv("KPROF_PLUGINS")
    assert "listed-math" not in {c.name for c in cards()}  # the stored listing: built-ins only
