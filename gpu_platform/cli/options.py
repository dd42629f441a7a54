"""The global options of the command in progress, for the modules that act on them: its own
module, so that the commands read them without importing the command line that set them."""

from dataclasses import dataclass


@dataclass
class Options:
    debug: bool = False
    """`--debug`: show the traceback of an internal error or of a failing program."""


options = Options()
