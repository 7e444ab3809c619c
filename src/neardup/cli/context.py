"""The click settings every ``neardup`` command shares, in a module of their own so that the
top-level group (:mod:`neardup.cli.main`) and the commands' modules take them without importing
each other."""

#: -h as well as --help; help text up to 100 columns wide.
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
