"""A module imported with a hook around its execution (``neardup.import_hooks``)."""

import sys

from neardup.import_hooks import HookedLoader, hooked_spec


class _Finder:
    def __init__(self, wanted, hook):
        self.wanted, self.hook = wanted, hook

    def find_spec(self, name, path=None, target=None):
        return hooked_spec(self, name, path, target, self.hook) if name == self.wanted else None


def _imported_with(finder, name):
    sys.meta_path.insert(0, finder)
    saved = sys.modules.pop(name, None)
    try:
        return __import__(name)
    finally:
        sys.meta_path.remove(finder)
        if saved is not None:
            sys.modules[name] = saved


def test_the_hook_runs_around_the_modules_execution():
    seen = []

    def hook(execute):
        seen.append(
            "colorsys" in sys.modules and not hasattr(sys.modules["colorsys"], "rgb_to_hsv")
        )
        execute()
        seen.append(hasattr(sys.modules["colorsys"], "rgb_to_hsv"))

    module = _imported_with(_Finder("colorsys", hook), "colorsys")
    assert seen == [True, True]  # created before the hook, executed inside it
    assert isinstance(module.__spec__.loader, HookedLoader)
    assert module.__spec__.loader.get_filename("colorsys").endswith("colorsys.py")  # delegated


def test_a_module_no_other_finder_finds_is_left_to_fail():
    finder = _Finder("no_such_module_anywhere", lambda execute: execute())
    assert finder.find_spec("no_such_module_anywhere") is None
