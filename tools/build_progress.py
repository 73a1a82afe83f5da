"""`make chat`'s view of the offline model's build: pip's verbose log in, one line of
progress out ("building llama.cpp: step 41 of 96"), rewritten in place, never the
compiler's command lines; pip's result and any error line are passed through whole."""

from __future__ import annotations

import re
import sys

STEP = re.compile(r"^\s*\[\s*(\d+)/(\d+)\]")
PASSED = re.compile(r"Successfully installed|\berror\b|\bError\b")


def main() -> None:
    shown = False
    for line in sys.stdin:
        step = STEP.match(line)
        if step:
            print(f"\r  building llama.cpp: step {step[1]} of {step[2]}", end="", flush=True)
            shown = True
        elif PASSED.search(line):
            print(("\n" if shown else "") + line.rstrip(), flush=True)
            shown = False
    if shown:
        print(flush=True)


if __name__ == "__main__":
    main()
