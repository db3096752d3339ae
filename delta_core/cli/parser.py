"""The ``delta-core`` argument parser: argparse whose usage errors are typed ``UsageError``s
that say the error once, suggest the nearest command or option ("did you mean"), and name the
``--help`` to read.

``delta_core.cli.main`` reports them like any other ``DeltaError`` (one line with one
``delta-core: error (usage):`` prefix, or one JSON document with ``--json``; exit status 2).
Suggestions come from the parser's own commands, choices and option strings (``difflib``).
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from delta_core.errors import UsageError

# What argparse should take for a value, not an option: a leading minus followed by a digit or
# a decimal point (``-5``, ``-5MB``, ``-0.5``, ``-1e3``). argparse's own pattern admits only bare
# numbers, so ``--target-size -5MB`` failed with "expected one argument" before the size's own
# check could say what is wrong. No option of ours is spelled like that.
NEGATIVE_VALUE = re.compile(r"^-\.?\d")


def nearest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word`` (a typo of it), or ``None`` when none is close."""
    found = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return found[0] if found else None


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises ``UsageError`` (subparsers inherit the class) with a
    "did you mean" for a mistyped command, choice or option; and a value with a leading minus
    (``-5MB``) reaches its option's check (``NEGATIVE_VALUE``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = NEGATIVE_VALUE

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}; see {self.prog} --help")

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        # argparse's own check, with the nearest choice named first (commands are choices too).
        choices = action.choices
        if choices is None or value in choices:
            return
        names = [str(c) for c in choices]
        guess = nearest(str(value), names)
        hint = f"; did you mean {guess!r}?" if guess is not None else ""
        raise argparse.ArgumentError(action, f"invalid choice: {value!r}{hint} (choose from {', '.join(names)})")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            command = self._command_parser(parsed)
            message = f"unrecognized arguments: {' '.join(extras)}{_option_hint(command, extras)}"
            command.error(message)
        return parsed

    def _command_parser(self, parsed: argparse.Namespace) -> argparse.ArgumentParser:
        """The subcommand's parser that took the arguments (``self`` when there is none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(parsed, action.dest, None) or "")
                if isinstance(chosen, argparse.ArgumentParser):
                    return chosen
        return self


def _option_hint(parser: argparse.ArgumentParser, extras: Sequence[str]) -> str:
    """`` (did you mean --target-size?)`` for the unknown options of ``extras`` that are typos
    of ``parser``'s options; empty when none is."""
    options = [s for action in parser._actions for s in action.option_strings if s.startswith("--")]
    guesses = []
    for extra in extras:
        if not extra.startswith("--"):
            continue
        guess = nearest(extra.partition("=")[0], options)
        if guess is not None and guess not in guesses:
            guesses.append(guess)
    return f" (did you mean {' or '.join(guesses)}?)" if guesses else ""
