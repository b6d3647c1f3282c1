#!/usr/bin/env python3
"""Every `dualpath ...` command line in a fenced block of the docs is one the CLI accepts.

A runnable line (`$ dualpath sim --preset 64k ...`) is parsed by the binary itself with
DUALPATH_PARSE_ONLY=1: its subcommands and flags must exist and its values must pass the CLI's checks,
but nothing runs. A synopsis line (`dualpath run [--cluster FILE] [--policy NAME | ...]`) names
placeholders, so there every subcommand must exist and every `--flag` must be one its `--help` lists.

usage: check_doc_commands.py DUALPATH_BINARY FILE.md...     (exit 1 naming each bad line)
       check_doc_commands.py DUALPATH_BINARY --self-test    (the check fails on a misspelled flag)
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

SHELL_STOPS = {"|", "||", "&&", ";", "&", ">", "2>&1", ">>", "2>", "<"}
PLACEHOLDER = re.compile(r"\b[A-Z][A-Z0-9_]*[A-Z0-9]\b|\.\.\.|\[|\]|\|")


def command_lines(path):
    """(line number, command text) of every dualpath command in a fenced block of `path`."""
    out, fenced, prompted = [], False, False
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            fenced = not fenced
            if fenced:  # a block with `$ ` prompts: only its prompted lines are commands, the rest is output
                j = i + 1
                while j < len(lines) and not lines[j].lstrip().startswith("```"):
                    j += 1
                prompted = any(l.strip().startswith("$ ") for l in lines[i + 1:j])
            i += 1
            continue
        if fenced:
            text = line.strip()
            if text.startswith("$ "):
                text = text[2:].strip()
            elif prompted:
                i += 1
                continue
            # A leading `sleep 2.5;` or `VAR=x` does not hide the command behind it.
            m = re.search(r"(?:^|;\s*|&&\s*)(dualpath\s.*)$", text)
            if m and not text.startswith("dualpath:"):
                cmd, start = m.group(1), i
                while cmd.endswith("\\") and i + 1 < len(lines):  # continued lines
                    i += 1
                    cmd = cmd[:-1] + " " + lines[i].strip()
                out.append((start + 1, cmd))
        i += 1
    return out


def shell_words(cmd):
    cmd = re.sub(r"\s#.*$", "", cmd)  # a trailing comment
    # What follows `;`, `&&` or a pipe runs on its own; a synopsis's `a | b` is a choice, not a pipe.
    cmd = re.split(r";\s|;$|\s&&\s|\s\|\|\s" + ("" if "[" in cmd else r"|\s\|\s"), cmd)[0]
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    for n, w in enumerate(words):
        if w in SHELL_STOPS or w.startswith((">", "2>")):
            return words[:n]
    if words and words[-1].endswith(";"):
        words[-1] = words[-1][:-1]
    return words


help_cache = {}


def help_text(binary, path):
    key = tuple(path)
    if key not in help_cache:
        r = subprocess.run([binary, *path, "--help"], capture_output=True, text=True, timeout=30)
        help_cache[key] = r.stdout if r.returncode == 0 else None
    return help_cache[key]


def subcommands(help_out):
    """Names under the SUBCOMMANDS: heading of a CLI11 help text."""
    names, inside = set(), False
    for line in help_out.split("\n"):
        if line.strip() == "Subcommands:" or line.startswith("SUBCOMMANDS"):
            inside = True
            continue
        if inside:
            m = re.match(r"^\s+(\S+)", line)
            if m:
                names.add(m.group(1))
            elif line.strip() == "":
                continue
            else:
                inside = False
    return names


def check_synopsis(binary, words):
    path, rest = [], words[1:]
    while rest and not rest[0].startswith("-"):
        h = help_text(binary, path)
        subs = subcommands(h) if h else set()
        if rest[0] in subs:
            path.append(rest.pop(0))
        elif subs and not PLACEHOLDER.search(rest[0]):
            return f"unknown subcommand '{rest[0]}' of 'dualpath {' '.join(path)}'"
        else:
            break
    h = help_text(binary, path)
    if h is None:
        return f"'dualpath {' '.join(path)} --help' fails"
    for w in words:
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", w):
            if not re.search(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])", h):
                # a flag of a deeper subcommand named later on the line
                deeper = [p for p in words if p in subcommands(h)]
                if not any(help_text(binary, path + [d]) and flag in help_text(binary, path + [d]) for d in deeper):
                    return f"'dualpath {' '.join(path)}' has no flag {flag}"
    return None


def check_runnable(binary, words):
    env = dict(os.environ, DUALPATH_PARSE_ONLY="1")
    r = subprocess.run([binary, *words[1:]], capture_output=True, text=True, timeout=30, env=env)
    if r.returncode != 0:
        return (r.stderr or r.stdout).strip().split("\n")[0]
    return None


def check_files(binary, files):
    bad, count = [], 0
    for path in files:
        for line_no, cmd in command_lines(path):
            words = shell_words(cmd)
            if len(words) < 2:
                continue
            count += 1
            synopsis = any(PLACEHOLDER.search(w) and not w.startswith("--") or "[" in w or "|" in w for w in words[1:])
            why = check_synopsis(binary, words) if synopsis else check_runnable(binary, words)
            if why:
                bad.append(f"{path}:{line_no}: {cmd}\n    {why}")
    return bad, count


def self_test(binary):
    with tempfile.TemporaryDirectory() as d:
        good, wrong = os.path.join(d, "good.md"), os.path.join(d, "wrong.md")
        open(good, "w").write("```\n$ dualpath sim --preset 64k --agents 4 --policy dualpath\n```\n"
                              "```\ndualpath run [--cluster FILE] [--policy NAME]\n```\n")
        open(wrong, "w").write("```\n$ dualpath sim --preset 64k --agnets 4\n$ dualpath smi --preset 64k\n```\n"
                               "```\ndualpath run [--clustr FILE]\n```\n")
        bad_good, _ = check_files(binary, [good])
        bad_wrong, _ = check_files(binary, [wrong])
    if bad_good or len(bad_wrong) != 3:
        print("self-test failed: good file:", bad_good, "misspelled file:", bad_wrong)
        return 1
    print("self-test: the check passes correct lines and names all 3 misspelled ones:")
    print("\n".join(bad_wrong))
    return 0


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    binary = sys.argv[1]
    if sys.argv[2] == "--self-test":
        return self_test(binary)
    bad, count = check_files(binary, sys.argv[2:])
    if bad:
        print(f"{len(bad)} of {count} documented command lines are not accepted by the CLI:")
        print("\n".join(bad))
        return 1
    print(f"all {count} documented command lines are accepted by the CLI")
    return 0


if __name__ == "__main__":
    sys.exit(main())
