#!/usr/bin/env python3
"""Turns swift-argument-parser's generated manual pages into Debian-shaped ones, in place.

generate-manual names a subcommand's page `lanbridge.nodes.approve.1`, with `.Nm "lanbridge nodes
approve"`, which whatis/apropos (lexgrog) cannot index, and leaves blank lines that groff warns
about. Pages become `lanbridge-nodes-approve.1` (as git's are), NAME a single word, SYNOPSIS
`lanbridge nodes approve …`, cross-references follow, blank lines become paragraph breaks.

usage: manpages.py DIRECTORY
"""
import pathlib
import re
import sys


def debian_name(stem: str) -> str:
    return stem.replace(".", "-")


def convert(text: str) -> str:
    words = None
    out = []
    synopsis_name_done = False
    section = None
    for line in text.split("\n"):
        if line.startswith(".Sh "):
            section = line[4:].strip('"')
        match = re.fullmatch(r'\.Nm "([^"]+)"', line)
        if match and section == "NAME":
            words = match.group(1).split()
            line = ".Nm " + "-".join(words)
        elif line == ".Nm" and section == "SYNOPSIS" and words and not synopsis_name_done:
            line = ".Nm " + words[0] + "\n.Cm " + " ".join(words[1:])
            synopsis_name_done = True
        elif line.startswith(".Dt "):
            line = ".Dt " + debian_name(line[4:].split()[0]) + " " + line.split()[-1]
        elif line.startswith(".Xr "):
            parts = line.split(" ")
            parts[1] = debian_name(parts[1])
            line = " ".join(parts)
        elif line.strip() == "":
            if out and out[-1] == ".Pp":
                continue
            line = ".Pp"
        out.append(line)
    while out and out[-1] == ".Pp":
        out.pop()
    return "\n".join(out) + "\n"


def main() -> None:
    directory = pathlib.Path(sys.argv[1])
    for page in sorted(directory.glob("*.1")):
        converted = convert(page.read_text())
        page.unlink()
        (directory / (debian_name(page.stem) + ".1")).write_text(converted)


if __name__ == "__main__":
    main()
